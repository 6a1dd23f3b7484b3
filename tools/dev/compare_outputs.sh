#!/usr/bin/env bash
# tools/dev/compare_outputs.sh [REV] [BUILD]: does the working tree's plugin write what REV's
# wrote? For refactors that must not change the output (docs/ARCHITECTURE.md).
# Builds REV's plugin (default HEAD; `git archive`, so the repository's state is untouched) and
# the working tree's plugin and inspector-replay, each in a temporary directory (or, with BUILD,
# brings BUILD's plugin and replay up to date and uses them), replays every recorded and edge
# trace (--abi trace) through both plugins with the one replay binary, and compares:
#   JSON lines (default settings, and verbose), Prometheus files (with stats, written at exit),
#   trace mode's file (NCCL_INSPECTOR_TRACE_DIR: every callback's line, its time and thread
#   id removed).
# Volatile text is removed first: dump_timestamp_us, pid, git_rev, host timestamps of verbose
# traces, pids in file names (file names are dropped: every file of a kind is read as one).
# Lines are sorted: the two rings of a context (collectives, P2P) are drained one after the
# other, and their interleaving in a file is not part of the format. One line per fixture and
# mode, then a summary; exit 1 on any difference. JOBS (2): parallel build jobs.
# WITH_TRUTH=1: the GPU-truth recordings too (tests/data/gpu-truth, --recorded-clock: busy CPU,
# many ops left out). NO_BOUNDS=1: the bounds of the ops left out (coll_bound / p2p_bound
# lines, *_bounded_total, the bound metrics: NCCL_INSPECTOR_BOUNDS) are taken out of the
# working tree's side first, and counted: against a revision from before them, the rest must
# be the same.
set -euo pipefail
rev=${1:-HEAD}
jobs=${JOBS:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inspector-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src-rev"
git -C "$root" archive "$rev" | tar -x -C "$tmp/src-rev"
cmake -S "$tmp/src-rev" -B "$tmp/b-rev" -DINSPECTOR_BUILD_TOOLS=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build "$tmp/b-rev" -j "$jobs" --target rccl-profiler-inspector >/dev/null
old=$tmp/b-rev/lib/libnccl-profiler-inspector.so
if [ $# -ge 2 ]; then
  build=$(cd "$2" && pwd)
else
  build=$tmp/b-new
  cmake -S "$root" -B "$build" -DBUILD_TESTING=OFF >/dev/null
fi
cmake --build "$build" -j "$jobs" --target rccl-profiler-inspector inspector-replay >/dev/null
replay=$build/bin/inspector-replay
new=$build/lib/libnccl-profiler-inspector.so

no_bounds() { # $1: old or new
  if [ "${NO_BOUNDS:-0}" = 1 ] && [ "$1" = new ]; then
    grep -vE '"(coll|p2p)_bound":|^nccl_(collective|p2p)_bound_time|^nccl_(collectives|p2p)_bounded_total|^# (HELP|TYPE) nccl_[a-z0-9_]*bound' |
      sed -E 's/,"(coll|p2p)_bounded_total":[0-9]+//g' || true
  else
    cat
  fi
}

normalise() { # dump dir -> sorted, volatile fields removed
  { { cat "$1"/*.log 2>/dev/null || true; } | sed -E 's/"dump_timestamp_us":[0-9]+/"dump_timestamp_us":0/;
      s/"pid":[0-9]+/"pid":0/; s/"git_rev":"[^"]*"/"git_rev":""/;
      s/"event_trace_ts":\{[^}]*(\{[^}]*\},?)*\]\}/"event_trace_ts":{}/; s/ +$//'
    { cat "$1"/*.prom 2>/dev/null || true; } | sed -E 's/pid[0-9]+/pidX/g'
    { cat "$1"/*.trace.jsonl 2>/dev/null || true; } | sed -E 's/^\{"t":[0-9]+,"tid":[0-9]+,/{/'; } | sort
}

traces=("$root"/tests/data/nccl-*/*.jsonl.gz "$root"/tests/data/edge/*.jsonl)
[ "${WITH_TRUTH:-0}" = 1 ] && traces+=("$root"/tests/data/gpu-truth/*/trace.jsonl.gz)

n=0 bad=0
for mode in default verbose prom trace; do
  case $mode in
    default) env=() args=() ;;
    verbose) env=(NCCL_INSPECTOR_DUMP_VERBOSE=1) args=() ;;
    # --no-finalize: the last communicator of a GPU to be torn down removes its .prom file
    # (README "Prometheus output"); without finalize the files are written at exit
    prom) env=(NCCL_INSPECTOR_PROM_DUMP=1 NCCL_INSPECTOR_PROM_DUMP_STATS=1) args=(--no-finalize) ;;
    trace) env=() args=() ;; # the trace file goes to the dump directory (below)
  esac
  for f in "${traces[@]}"; do
    truth=(); [[ $f == */gpu-truth/* ]] && truth=(--recorded-clock)
    for v in old new; do
      so=$old; [ $v = new ] && so=$new
      rm -rf "$tmp/$v"; mkdir -p "$tmp/$v"
      rc=0
      tdir=(); if [ $mode = trace ]; then tdir=(NCCL_INSPECTOR_TRACE_DIR="$tmp/$v"); fi
      env NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR="$tmp/$v" ${env[@]+"${env[@]}"} ${tdir[@]+"${tdir[@]}"} \
        "$replay" --quiet ${args[@]+"${args[@]}"} ${truth[@]+"${truth[@]}"} --abi trace --plugin "$so" "$f" >/dev/null 2>&1 || rc=$?
      # the exit status is compared too: a crash on one side is a difference
      normalise "$tmp/$v" > "$tmp/$v.all"
      { no_bounds $v < "$tmp/$v.all"; echo "(replay exit status $rc)"; } > "$tmp/$v.txt"
    done
    gone=$(( $(wc -l < "$tmp/new.all") - $(wc -l < "$tmp/new.txt") + 1 ))
    n=$((n + 1))
    if cmp -s "$tmp/old.txt" "$tmp/new.txt"; then
      echo "same     $mode ${f#$root/} ($(($(wc -l < "$tmp/new.txt") - 1)) lines$([ "$gone" -gt 0 ] && echo ", and $gone bound lines"))"
    else
      bad=$((bad + 1))
      echo "DIFFERS  $mode ${f#$root/}"
      { diff "$tmp/old.txt" "$tmp/new.txt" || true; } | head -4 | sed 's/^/    /' # diff exits 1: not the end (pipefail)
    fi
  done
done
echo "compare_outputs: $rev vs the working tree: $((n - bad)) of $n replays identical"
[ "$bad" -eq 0 ]

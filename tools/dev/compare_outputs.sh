#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
# Then the tools (TOOLS=0: not; PLUGIN=0: only they): synthetic jobs (inspector-replay --synthetic: stragglers,
# P2P, slow links, clock offsets and drift, a bandwidth change), each made by REV's replay
# and by the working tree's through the working tree's plugin, their logs and --truth
# compared (times counted from the run's first, which is the wall clock's); then
# inspector-report of REV and of the working tree on those logs, on planted hang jobs
# (tests/lib/hang_logs.py) and on the recorded logs of tests/data/nvidia-inspector: the text,
# --json, --csv, --html and --trace outputs compared.
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
modes=(default verbose prom trace)
[ "${PLUGIN:-1}" = 1 ] || modes=() # PLUGIN=0: the tools only
for mode in ${modes[@]+"${modes[@]}"}; do
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
# ---- the tools -------------------------------------------------------------------------
same() { # $1: what; the files old.txt and new.txt of $tmp
  n=$((n + 1))
  if cmp -s "$tmp/old.txt" "$tmp/new.txt"; then
    echo "same     $1 ($(wc -l < "$tmp/new.txt") lines)"
  else
    bad=$((bad + 1))
    echo "DIFFERS  $1"
    { diff "$tmp/old.txt" "$tmp/new.txt" || true; } | head -4 | cut -c1-300 | sed 's/^/    /'
  fi
}

# a synthetic job's logs and truth, as text that does not depend on when it ran: volatile
# fields out, every time (a number of 16 digits or more) counted from the run's smallest
relative() { # $1: dump dir, $2: truth file
  python3 - "$1" "$2" <<'PY'
import glob, os, re, sys
d, truth = sys.argv[1], sys.argv[2]
text = "".join(open(p).read() for p in sorted(glob.glob(os.path.join(d, "*.log"))))
text = re.sub(r'"(dump_timestamp_us|pid)":\d+', r'"\1":0', text)
text = re.sub(r'"git_rev":"[^"]*"', '"git_rev":""', text)
lines = sorted(text.splitlines()) + ["-- truth"] + open(truth).read().splitlines()
big = [int(x) for l in lines for x in re.findall(r"\b\d{16,}\b", l)]
base = min(big) if big else 0
for l in lines:
    print(re.sub(r"\b\d{16,}\b", lambda m: "T+%d" % (int(m.group()) - base), l))
PY
}

report_all() { # $1: report binary, $2: out dir, $3...: inputs
  local exe=$1 out=$2
  shift 2
  mkdir -p "$out"
  "$exe" --json "$@" > "$out/json" 2>&1 || echo "(exit $?)" >> "$out/json"
  "$exe" --csv "$out/csv" --html "$out/page.html" --trace "$out/trace.json" "$@" > "$out/text" 2>&1 ||
    echo "(exit $?)" >> "$out/text"
}

if [ "${TOOLS:-1}" = 1 ]; then
  cmake -S "$tmp/src-rev" -B "$tmp/b-rev" -DINSPECTOR_BUILD_TOOLS=ON >/dev/null
  cmake --build "$tmp/b-rev" -j "$jobs" --target inspector-replay inspector-report >/dev/null
  cmake --build "$build" -j "$jobs" --target inspector-report >/dev/null
  jobsets=(
    "straggler|--ranks 8 --procs --iters 3 --sizes 64K:4M --seed 3 --late-rank 3 --late-us 250"
    "straggler-some|--ranks 8 --procs --iters 12 --sizes 64K:1M --seed 5 --late-rank 2 --late-us 300 --late-fraction 0.5 --late-jitter-us 50"
    "straggler-from|--ranks 8 --procs --iters 10 --sizes 256K:1M --seed 6 --late-rank 6 --late-us 200 --late-from 0.5 --comms 2"
    "p2p-late|--ranks 8 --procs --iters 4 --sizes 64K:1M --p2p --p2p-wait --late-rank 5 --late-in p2p --late-us 400 --seed 7"
    "slow-link|--ranks 8 --nodes 4 --procs --iters 6 --sizes 1M:4M --p2p --p2p-pattern nodes --slow-link 0:1 --clock-offset-ms 3 --clock-drift-ppm 20 --seed 11"
    "change|--ranks 4 --procs --iters 24 --sizes 1M:1M --degrade 0.5:2 --order iters --seed 13 --op-gap-ms 20"
    "all-pairs|--ranks 6 --procs --iters 5 --p2p --p2p-pattern all --p2p-comm --sizes 64K:64K --seed 17"
  )
  for j in "${jobsets[@]}"; do
    name=${j%%|*}
    read -r -a syn <<< "${j#*|}"
    for v in old new; do
      rp=$tmp/b-rev/bin/inspector-replay; [ $v = new ] && rp=$replay
      rm -rf "$tmp/job-$name-$v"; mkdir -p "$tmp/job-$name-$v"
      rc=0
      env NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR="$tmp/job-$name-$v" "$rp" --quiet --plugin "$new" \
        --synthetic "${syn[@]}" --truth "$tmp/job-$name-$v.truth" >/dev/null 2>&1 || rc=$?
      { relative "$tmp/job-$name-$v" "$tmp/job-$name-$v.truth"; echo "(replay exit status $rc)"; } > "$tmp/$v.txt"
    done
    same "replay --synthetic $name"
  done
  # planted hangs (tests/lib/hang_logs.py, as tests/test_report_hangs.py makes them)
  python3 - "$root/tests/lib" "$tmp" <<'PY'
import os, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import hang_logs as H
steps = [[H.Op("AllReduce")] for _ in range(8)]
jobs = {"hang-coll": H.Job(ranks=16, per_node=4, comms=[H.Comm(0x5EED0001, "dp", steps)],
                           hang=H.Hang(comm=0, step=5, missing={9: "dead"}, queued=[5]), unknown=[15]),
        "hang-p2p": H.Job(ranks=16, per_node=4, comms=[H.Comm(0x9A1B5, "pp", [[H.pairs()] for _ in range(8)])],
                          hang=H.Hang(comm=0, step=5, missing={4: "alive"}, both_sides=[2])),
        "hang-resolved": H.Job(ranks=16, per_node=4, comms=[H.Comm(0x2E5, "dp", steps)],
                               hang=H.Hang(comm=0, step=5, missing={9: "alive"}, queued=[5], resolve_after_s=5.0))}
for name, job in jobs.items():
    d = os.path.join(sys.argv[2], "job-%s-new" % name)
    os.makedirs(d)
    job.write(d)
PY
  for d in "$tmp"/job-*-new "$root/tests/data/nvidia-inspector"; do
    name=$(basename "$d"); name=${name#job-}; name=${name%-new}
    report_all "$tmp/b-rev/bin/inspector-report" "$tmp/rep-old" "$d"
    report_all "$build/bin/inspector-report" "$tmp/rep-new" "$d"
    for f in text json csv page.html trace.json; do
      for v in old new; do
        if [ -d "$tmp/rep-$v/$f" ]; then
          (cd "$tmp/rep-$v/$f" && for c in *; do echo "== $c"; cat "$c"; done) > "$tmp/$v.txt"
        else
          cat "$tmp/rep-$v/$f" > "$tmp/$v.txt" 2>/dev/null || echo "(none)" > "$tmp/$v.txt"
        fi
      done
      same "report $f $name"
    done
    rm -rf "$tmp/rep-old" "$tmp/rep-new"
  done
fi
echo "compare_outputs: $rev vs the working tree: $((n - bad)) of $n identical"
[ "$bad" -eq 0 ]

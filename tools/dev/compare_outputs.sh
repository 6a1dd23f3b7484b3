#!/usr/bin/env bash
# tools/dev/compare_outputs.sh [REV] [BUILD]: does the working tree's plugin write what REV's
# wrote? For refactors that must not change the output (docs/ARCHITECTURE.md). Builds REV's
# plugin (default HEAD) in a temporary directory, replays every recorded and edge trace
# (--abi trace) through both plugins with BUILD's replay (default build/), and compares:
#   JSON lines (default settings, and verbose), Prometheus files (with stats).
# Volatile text is removed first: dump_timestamp_us, pid, git_rev, host timestamps of verbose
# traces, pids in file names. Lines are sorted (the two rings of a context are drained one
# after the other: their interleaving is not part of the format). Exit 1 on any difference.
set -euo pipefail
rev=${1:-HEAD}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${2:-$root/build}" && pwd)
replay=$build/bin/inspector-replay
new=$build/lib/libnccl-profiler-inspector.so
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inspector-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src-rev"
git -C "$root" archive "$rev" | tar -x -C "$tmp/src-rev"
cmake -S "$tmp/src-rev" -B "$tmp/b" -DINSPECTOR_BUILD_TOOLS=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build "$tmp/b" -j "$(nproc)" --target rccl-profiler-inspector >/dev/null
old=$tmp/b/lib/libnccl-profiler-inspector.so

normalise() { # dump dir -> sorted, volatile fields removed
  { { cat "$1"/*.log 2>/dev/null || true; } | sed -E 's/"dump_timestamp_us":[0-9]+/"dump_timestamp_us":0/;
      s/"pid":[0-9]+/"pid":0/; s/"git_rev":"[^"]*"/"git_rev":""/;
      s/"event_trace_ts":\{[^}]*(\{[^}]*\},?)*\]\}/"event_trace_ts":{}/; s/ +$//'
    { cat "$1"/*.prom 2>/dev/null || true; } | sed -E 's/pid[0-9]+/pidX/g'; } | sort
}

n=0 bad=0
for mode in default verbose prom; do
  case $mode in
    default) env=() ;;
    verbose) env=(NCCL_INSPECTOR_DUMP_VERBOSE=1) ;;
    prom) env=(NCCL_INSPECTOR_PROM_DUMP=1 NCCL_INSPECTOR_PROM_DUMP_STATS=1) ;;
  esac
  for f in "$root"/tests/data/nccl-*/*.jsonl.gz "$root"/tests/data/edge/*.jsonl; do
    for v in old new; do
      so=$old; [ $v = new ] && so=$new
      rm -rf "$tmp/$v"; mkdir -p "$tmp/$v"
      env NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR="$tmp/$v" ${env[@]+"${env[@]}"} \
        "$replay" --quiet --abi trace --plugin "$so" "$f" >/dev/null 2>&1 || true
      normalise "$tmp/$v" > "$tmp/$v.txt"
    done
    n=$((n + 1))
    if cmp -s "$tmp/old.txt" "$tmp/new.txt"; then
      echo "same     $mode ${f#$root/}"
    else
      bad=$((bad + 1))
      echo "DIFFERS  $mode ${f#$root/}"
      diff "$tmp/old.txt" "$tmp/new.txt" | head -4 | sed 's/^/    /'
    fi
  done
done
echo "compare_outputs: $rev vs the working tree: $((n - bad)) of $n replays identical"
[ "$bad" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the libFuzzer targets (tests/fuzz/fuzz.cmake) with clang and run each for
# FUZZ_SECONDS (default 60): `make fuzz`, or tests/fuzz/run.sh [BUILD_DIR].
#
# Seeds: corpus/report and corpus/env (committed), and for the trace reader pieces of the
# recorded traces cut at run time (each file's opening lines, whose init lines the rest
# needs, and the hand-made edge traces whole). Everything the run writes (seeds it cut, the
# corpus libFuzzer grows, crash files) goes to one temporary directory, removed at the end;
# a crashing input is copied to BUILD_DIR/crashes/ first, so that it can be replayed with
# `BUILD_DIR/fuzz_X FILE`. Exit: 0 when no target crashed, else 1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build-fuzz}"
secs="${FUZZ_SECONDS:-60}"
cc="${FUZZ_CC:-clang}"
jobs="${JOBS:-2}"

cmake -S "$here" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$jobs"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/inspector-fuzz.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# Trace seeds: the first 60 lines of every recorded trace, and the edge traces whole.
mkdir -p "$tmp/seeds/trace"
python3 - "$root/tests/data" "$tmp/seeds/trace" <<'PY'
import glob, gzip, os, sys
data, out = sys.argv[1], sys.argv[2]
for f in sorted(glob.glob(os.path.join(data, "nccl-*", "*.jsonl.gz"))):
    with gzip.open(f, "rt") as fi:
        lines = [l for _, l in zip(range(60), fi)]
    name = os.path.basename(os.path.dirname(f)) + "-" + os.path.basename(f)[:-3]
    with open(os.path.join(out, name), "w") as fo:
        fo.writelines(lines)
for f in sorted(glob.glob(os.path.join(data, "edge", "*.jsonl"))):
    with open(f) as fi, open(os.path.join(out, "edge-" + os.path.basename(f)), "w") as fo:
        fo.write(fi.read())
PY

declare -A seeds=([fuzz_trace]="$tmp/seeds/trace" [fuzz_report]="$here/corpus/report"
                  [fuzz_env]="$here/corpus/env")
# One target's run, its exit status in $tmp/$t.rc. The targets run $jobs at a time: each is
# one process, so on 2 cores two at once take the time of one (make check: 60 s, not 90).
fuzz_one() {
  local t=$1 rc=0
  mkdir -p "$tmp/corpus-$t" "$tmp/art-$t"
  # -close_fd_mask=2: the targets' own stderr (rejection messages, config warnings) is
  # dropped; libFuzzer and the sanitizers still report. -max_len: real lines fit in 4 KiB,
  # and the trace seeds are cut to fit 32 KiB.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/$t" -max_total_time="$secs" -max_len=32768 -close_fd_mask=2 -print_final_stats=1 \
    -artifact_prefix="$tmp/art-$t/" "$tmp/corpus-$t" "${seeds[$t]}" >"$tmp/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$tmp/$t.rc"
}
targets=(fuzz_trace fuzz_report fuzz_env)
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "== $t: ${secs}s"
  fuzz_one "$t" &
done
wait || true

failed=()
for t in "${targets[@]}"; do
  log="$tmp/$t.log"
  rc=$(cat "$tmp/$t.rc" 2>/dev/null || echo "?")
  if [ ! -f "$log" ]; then # the fuzzer could not even start (or $tmp vanished)
    echo "$t: no log written (exit $rc)"
    failed+=("$t")
    continue
  fi
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  [ -n "$runs" ] || runs="$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -1)" # crashed: last count
  echo "$t: ${runs:-?} runs, exit $rc"
  if [ "$rc" != 0 ]; then
    failed+=("$t")
    tail -40 "$log"
    mkdir -p "$build/crashes"
    cp "$tmp/art-$t/"* "$build/crashes/" 2>/dev/null || true
    echo "$t: crashing inputs copied to $build/crashes/"
  fi
done
echo "fuzz: ${secs}s per target${failed[*]:+; crashed: ${failed[*]}}"
echo "fuzz: $((3 - ${#failed[@]})) passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]

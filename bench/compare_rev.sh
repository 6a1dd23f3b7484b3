#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/compare_rev.sh REV [ROUNDS] - the plugin of git revision REV against this tree's,
# side by side in one run (docs/BENCHMARKS.md): the same inspector-bench binary (this
# tree's) drives both on the recorded fixtures of REV, alternately, ROUNDS rounds (3) of
# `calls` (medians of 7 runs each); then callgrind's instructions per callback on the
# fixture mix and the synthetic traffic, and resident memory per communicator.
# REV is built in a temporary worktree (removed at exit) with make bench's flags. REV may
# also be a source folder (a `git archive` of the revision, for a machine with no .git).
set -euo pipefail
REV=${1:?usage: bench/compare_rev.sh REV [ROUNDS]}
ROUNDS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TMP=$(mktemp -d)
SHM=$(mktemp -d /dev/shm/inspector-compare.XXXXXX)
trap 'git worktree remove --force "$TMP/rev" >/dev/null 2>&1 || true; rm -rf "$TMP" "$SHM"' EXIT
flags=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG")
if [ -d "$REV" ]; then cp -r "$REV" "$TMP/rev"; rm -rf "$TMP/rev/build-bench"
else git worktree add --detach "$TMP/rev" "$REV" >/dev/null; fi
echo "compare: building $REV and this tree..." >&2
cmake -S "$TMP/rev" -B "$TMP/rev/build-bench" "${flags[@]}" >/dev/null
cmake --build "$TMP/rev/build-bench" -j"$(nproc)" >/dev/null
cmake -S . -B build-bench "${flags[@]}" >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null
BIN=build-bench/bin/inspector-bench
NUL=build-bench/lib/libinspector-null-plugin.so
declare -A PL=([before]="$TMP/rev/build-bench/lib/libnccl-profiler-inspector.so"
               [after]=build-bench/lib/libnccl-profiler-inspector.so)
FIX=$(ls "$TMP"/rev/tests/data/nccl-*/*.jsonl.gz)
big=(NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=65536 NCCL_INSPECTOR_DUMP_P2P_RING_SIZE=65536)
run() { env NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR="$SHM/d" "${big[@]}" "$@"; rm -rf "$SHM/d"; }
for r in $(seq "$ROUNDS"); do
  for tag in before after; do
    echo "compare: round $r, $tag..." >&2
    run "$BIN" calls --plugin "${PL[$tag]}" --null "$NUL" --runs 7 $FIX | grep ns_per_call | sed "s/^/$tag.r$r./"
  done
done
toggles=()
for f in start_v4 start_v5 start_v6 ins_adapter_stop ins_adapter_record; do toggles+=(--toggle-collect=$f); done
if command -v valgrind >/dev/null; then
  for what in mix synth; do
    for tag in before after; do
      calls=$(run valgrind --tool=callgrind --callgrind-out-file="$SHM/cg.out" --collect-atstart=no \
        --instr-atstart=no "${toggles[@]}" "$BIN" calls --callgrind $what --plugin "${PL[$tag]}" $FIX \
        2>/dev/null | awk '/inspector.calls/ {print $2}')
      ins=$(awk '/^totals:/ {print $2}' "$SHM/cg.out")
      echo "$tag.callgrind.$what.instructions_per_callback $(awk -v a="$ins" -v b="$calls" 'BEGIN {printf "%.1f", a / b}')"
    done
  done
fi
for tag in before after; do # the default ring sizes here
  env NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR="$SHM/m" "$BIN" mem --plugin "${PL[$tag]}" --comms 256 |
    grep kib_per_comm_at_init | sed "s/^/$tag./"
  rm -rf "$SHM/m"
done

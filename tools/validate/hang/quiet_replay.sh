#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tools/validate/hang/quiet_replay.sh [BUILD]   (S=600 seconds, HS=1 threshold in seconds)
#
# Hang detection's false alarms: every recorded NCCL stream of tests/data (real NCCL 2.27-2.30
# traffic, the GPU truth runs included) replayed through BUILD's plugin (a build directory,
# relative to the repository's root or absolute; default build) at its recorded host pace, one
# after another until S seconds passed, with NCCL_INSPECTOR_HANG_SECONDS=HS. Nothing is stuck
# in them, so a threshold above the longest queue a recording builds must write no hang line;
# the lines it finds are printed. docs/VALIDATION.md ("Hang detection") quotes it.
cd "$(dirname "$0")/../../.."
B=${1:-${B:-build}}; S=${S:-600}; HS=${HS:-1}
end=$(( $(date +%s) + S )); n=0; lines=0; hangs=0; idles=0
D=$(mktemp -d)
files=(tests/data/nccl-2.27.7-h200x2/*.jsonl.gz tests/data/nccl-2.28.9-h200x2/*.jsonl.gz tests/data/nccl-2.30.7-h200x2/*.jsonl.gz tests/data/gpu-truth/*/trace.jsonl.gz)
while [ $(date +%s) -lt $end ]; do
  for f in "${files[@]}"; do
    [ $(date +%s) -lt $end ] || break
    rm -rf $D/*; 
    NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=$D NCCL_INSPECTOR_HANG_SECONDS=$HS \
      $B/bin/inspector-replay --plugin $B/lib/libnccl-profiler-inspector.so --pace-recorded "$f" >/dev/null 2>$D.err || echo "rc $? $f" 
    n=$((n+1))
    l=$(cat $(find $D -name '*.log') 2>/dev/null | wc -l); lines=$((lines+l))
    h=$(cat $(find $D -name '*.log') 2>/dev/null | grep -c -E '"hang(_resolved)?":'); hangs=$((hangs+h))
    i=$(cat $(find $D -name '*.log') 2>/dev/null | grep -c '"comm_idle":'); idles=$((idles+i))
    [ "$h" = 0 ] || { echo "HANG LINES in $f:"; grep -h -E '"hang(_resolved)?":' $(find $D -name '*.log') | head -3; }
  done
done
rm -rf $D $D.err
echo "replays $n (${#files[@]} fixtures), log lines $lines, hang lines $hangs, comm_idle lines $idles, threshold $HS s, $S s"

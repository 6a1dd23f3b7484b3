#!/usr/bin/env bash
# The demo: replay real NCCL traffic recorded on 2 x H200 (NCCL 2.28.9) and a
# synthetic 8-rank job with one late rank through the plugin, then show
# where the logs are and what they say.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/$build/bin
plugin=$root/$build/lib/libnccl-profiler-inspector.so
out=$root/demo-output
rm -rf "$out"
mkdir -p "$out"

export NCCL_INSPECTOR_ENABLE=1
echo "== 1. Recorded NCCL 2.28.9 traffic (nccl-tests all_reduce_perf, sendrecv_perf; a PyTorch job), replayed through the plugin"
for t in ar-1483 sr-1576; do
  NCCL_INSPECTOR_DUMP_DIR=$out/recorded "$bin/inspector-replay" --quiet --plugin "$plugin" \
    "$root/tests/data/nccl-2.28.9-h200x2/$t.jsonl.gz"
done
# The PyTorch job ran one process per GPU: replay it the same way.
NCCL_INSPECTOR_DUMP_DIR=$out/recorded "$bin/inspector-replay" --quiet --procs --plugin "$plugin" \
  "$root/tests/data/nccl-2.28.9-h200x2/torch-1735.jsonl.gz" \
  "$root/tests/data/nccl-2.28.9-h200x2/torch-1736.jsonl.gz"
echo "logs: $out/recorded/"
ls -l "$out/recorded" | sed 's/^/  /'
echo
echo "one record:"
grep -m1 '"coll_perf"' "$out"/recorded/*.log | head -c 2000 | sed 's/^[^{]*//' | (python3 -m json.tool 2>/dev/null || cat) | sed 's/^/  /'
echo
"$bin/inspector-report" "$out/recorded"

echo
echo "== 2. Synthetic job: 8 ranks, one process each, rank 5 arrives 300 us late to every collective"
NCCL_INSPECTOR_DUMP_DIR=$out/synthetic "$bin/inspector-replay" --quiet --plugin "$plugin" \
  --synthetic --ranks 8 --procs --iters 10 --sizes 64K:64M --late-rank 5 --late-us 300 --seed 1
echo "logs: $out/synthetic/ ($(ls "$out/synthetic" | wc -l) files)"
"$bin/inspector-report" "$out/synthetic"

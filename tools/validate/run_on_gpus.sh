#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU validation run (docs/VALIDATION.md): build the plugin with cmake on the GPU machine,
# run the validation workload with it on every GPU (coverage, accuracy), then small-message
# AllReduce latency for four configurations in interleaved rounds (overhead).
#   tools/validate/run_on_gpus.sh OUTDIR [ROUNDS [WORKLOAD ARGS...]]
# With TORCH_NCCL_ENABLE_TIMING=1, accuracy is also judged against events on NCCL's stream.
set -euo pipefail
out=${1:?usage: run_on_gpus.sh OUTDIR [ROUNDS]}
rounds=${2:-3}
shift $(( $# < 2 ? $# : 2 ))
wargs=("$@")   # e.g. --cupti: also the kernel-duration reference
mkdir -p "$out" && out=$(cd "$out" && pwd)   # absolute: gpu_common.sh changes directory
source "$(dirname "$0")/gpu_common.sh"
{
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
  ldd "$plugin"
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

echo "== coverage and accuracy"
val=/tmp/inspector-validation
rm -rf "$val"
NCCL_PROFILER_PLUGIN=$plugin NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=$val/logs \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE \
  run tools/validate/workload.py --out "$val/ops" ${wargs[@]+"${wargs[@]}"} > "$out/workload.log" 2>&1 || {
    tail -50 "$out/workload.log"; exit 1; }
grep -E "Inspector|PROFILER|Profiler|profiler|workload:" "$out/workload.log" | sort | uniq -c | sort -rn | head -20
python3 tools/validate/compare.py --ops "$val/ops" --logs "$val/logs" --json "$out/compare.json" \
  | tee "$out/compare.md" || true
if [ "${TORCH_NCCL_ENABLE_TIMING:-0}" = 1 ]; then   # the tighter reference: events on NCCL's stream
  echo "== accuracy against events on NCCL's stream"
  python3 tools/validate/compare.py --ops "$val/ops" --logs "$val/logs" --ref nccl \
    --json "$out/compare-nccl.json" | tee "$out/compare-nccl.md" || true
fi
if grep -q kernel_ns "$val"/ops/ops-rank0.json; then   # --cupti: the kernels' own durations
  echo "== accuracy against the NCCL kernels' CUPTI durations"
  python3 tools/validate/compare.py --ops "$val/ops" --logs "$val/logs" --ref kernel \
    --json "$out/compare-kernel.json" | tee "$out/compare-kernel.md" || true
fi
tar czf "$out/validation-data.tgz" -C "$val" ops logs

echo "== overhead: $rounds interleaved rounds"
lat=$out/latency.jsonl
: > "$lat"
for r in $(seq "$rounds"); do
  NCCL_PROFILER_PLUGIN=none run tools/validate/latency.py --label none --out "$lat" >/dev/null 2>&1
  NCCL_PROFILER_PLUGIN=$plugin run tools/validate/latency.py --label off --out "$lat" >/dev/null 2>&1
  NCCL_PROFILER_PLUGIN=$null run tools/validate/latency.py --label null --out "$lat" >/dev/null 2>&1
  NCCL_PROFILER_PLUGIN=$plugin NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=/tmp/inspector-lat \
    run tools/validate/latency.py --label on --out "$lat" >/dev/null 2>&1
  echo "round $r done"
done
python3 tools/validate/overhead.py "$lat" | tee "$out/overhead.md"

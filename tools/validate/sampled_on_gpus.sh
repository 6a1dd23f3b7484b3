#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Accuracy of sampled records: the validation workload's collectives with one group in 3 timed
# (NCCL_INSPECTOR_SAMPLE_GROUPS=3), joined with CUPTI kernel durations (compare.py --sampled:
# coverage reported, not judged; accuracy judged on the records found).
#   tools/validate/sampled_on_gpus.sh OUTDIR
set -euo pipefail
out=${1:?usage: sampled_on_gpus.sh OUTDIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
source "$(dirname "$0")/gpu_common.sh"
v=/tmp/inspector-sampled
rm -rf "$v"
NCCL_PROFILER_PLUGIN=$plugin NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=$v/logs \
  NCCL_INSPECTOR_SAMPLE_GROUPS=3 run tools/validate/workload.py --out "$v/ops" --cupti \
  --ops AllReduce,AllGather,ReduceScatter,Broadcast,Reduce > "$out/workload.log" 2>&1 || {
    tail -30 "$out/workload.log"; exit 1; }
python3 tools/validate/compare.py --ops "$v/ops" --logs "$v/logs" --ref kernel --sampled \
  | tee "$out/compare-sampled.md" || true

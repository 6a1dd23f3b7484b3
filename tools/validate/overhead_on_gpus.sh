#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Overhead of the plugin on small AllReduce, as nccl-tests measures latency: build
# nccl_latency.cu against PyTorch's bundled NCCL, then ROUNDS interleaved rounds of four
# configurations (no plugin; Inspector with NCCL_INSPECTOR_ENABLE=0; a do-nothing plugin asking
# for the same events; Inspector enabled), then the summary (overhead.py).
#   tools/validate/overhead_on_gpus.sh OUTDIR [ROUNDS]
set -euo pipefail
out=${1:?usage: overhead_on_gpus.sh OUTDIR [ROUNDS]}
rounds=${2:-5}
mkdir -p "$out" && out=$(cd "$out" && pwd)   # absolute: gpu_common.sh changes directory
source "$(dirname "$0")/gpu_common.sh"
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')
nvcc -O2 -o "$build/nccl_latency" tools/validate/nccl_latency.cu -I"$nccl/include" \
  -L"$nccl/lib" -l:libnccl.so.2 -Xlinker -rpath="$nccl/lib"
lat=$out/latency.jsonl
: > "$lat"
for r in $(seq "$rounds"); do
  NCCL_PROFILER_PLUGIN=none "$build/nccl_latency" none >> "$lat"
  NCCL_PROFILER_PLUGIN=$plugin "$build/nccl_latency" off >> "$lat"
  NCCL_PROFILER_PLUGIN=$null "$build/nccl_latency" null >> "$lat"
  NCCL_PROFILER_PLUGIN=$plugin NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=/tmp/inspector-lat \
    "$build/nccl_latency" on >> "$lat"
done
python3 tools/validate/overhead.py "$lat" | tee "$out/overhead.md"

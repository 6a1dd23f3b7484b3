#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Overhead of several builds of the plugin side by side (a regression check): builds each
# source tree given as NAME=DIR with cmake, then ROUNDS interleaved rounds of nccl_latency with
# no plugin, the do-nothing plugin, and each build enabled; then the summary (overhead.py
# layout, fastest run too).
#   tools/validate/overhead_ab_on_gpus.sh OUTDIR ROUNDS NAME=SRCDIR [NAME=SRCDIR...]
set -euo pipefail
out=${1:?usage: overhead_ab_on_gpus.sh OUTDIR ROUNDS NAME=SRCDIR...}
rounds=${2:?}
shift 2
mkdir -p "$out" && out=$(cd "$out" && pwd)
srcs=()
for a in "$@"; do srcs+=("${a%%=*}=$(cd "${a#*=}" && pwd)"); done
source "$(dirname "$0")/gpu_common.sh"
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')
nvcc -O2 -o "$build/nccl_latency" tools/validate/nccl_latency.cu -I"$nccl/include" \
  -L"$nccl/lib" -l:libnccl.so.2 -Xlinker -rpath="$nccl/lib"
declare -A lib
for a in "${srcs[@]}"; do
  name=${a%%=*} dir=${a#*=}
  cmake -S "$dir" -B "/tmp/ab-build-$name" -DINSPECTOR_BUILD_TOOLS=OFF -DBUILD_TESTING=OFF >/dev/null
  cmake --build "/tmp/ab-build-$name" -j 8 >/dev/null
  lib[$name]=/tmp/ab-build-$name/lib/libnccl-profiler-inspector.so
done
lat=$out/ab-latency.jsonl
: > "$lat"
for r in $(seq "$rounds"); do
  NCCL_PROFILER_PLUGIN=none "$build/nccl_latency" none >> "$lat"
  NCCL_PROFILER_PLUGIN=$null "$build/nccl_latency" null >> "$lat"
  for a in "${srcs[@]}"; do
    name=${a%%=*}
    NCCL_PROFILER_PLUGIN=${lib[$name]} NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=/tmp/ab-logs \
      "$build/nccl_latency" "$name" >> "$lat"
    rm -rf /tmp/ab-logs
  done
  echo "round $r done"
done
python3 tools/validate/sampling_report.py summary "$lat" /dev/null | tee "$out/ab.md"

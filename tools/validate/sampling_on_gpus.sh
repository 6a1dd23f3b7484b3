#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sampled kernel timing on real NCCL (docs/VALIDATION.md, "Sampled timing"): small AllReduce
# latency (nccl_latency.cu, every GPU of the machine from one process) in ROUNDS interleaved
# rounds of: no plugin; Inspector timing every op (100%); one group in 10 (10%); runs of 100
# groups, one run in 10 (10%); 5 ms of every 50 ms (10%); only the first group (about 0%); the do-nothing plugin (NCCL's own cost of kernel
# events). After each Inspector run, sampling_report.py counts its records (did NCCL re-read
# the mask?) and checks that every record of the time-window run started inside a window.
#   tools/validate/sampling_on_gpus.sh OUTDIR [ROUNDS] [ITERS]
# This machine is bimodal (a whole process runs either fast or about 5 us slower): compare the
# fastest round of each configuration, and use many rounds.
set -euo pipefail
out=${1:?usage: sampling_on_gpus.sh OUTDIR [ROUNDS] [ITERS]}
rounds=${2:-3}
iters=${3:-10000}
reps=5
mkdir -p "$out" && out=$(cd "$out" && pwd)   # absolute: gpu_common.sh changes directory
source "$(dirname "$0")/gpu_common.sh"
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')
nvcc -O2 -o "$build/nccl_latency" tools/validate/nccl_latency.cu -I"$nccl/include" \
  -L"$nccl/lib" -l:libnccl.so.2 -Xlinker -rpath="$nccl/lib"
lat=$out/sampling-latency.jsonl
recs=$out/sampling-records.jsonl
: > "$lat"; : > "$recs"
d=/tmp/inspector-sampling
on() { # label, extra env...: one Inspector run, then its records summarised and removed
  local label=$1; shift
  rm -rf "$d"
  env NCCL_PROFILER_PLUGIN=$plugin NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=$d \
    NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0 "$@" "$build/nccl_latency" "$label" "$iters" "$reps" >> "$lat"
  python3 tools/validate/sampling_report.py records "$d" "$label" "$ngpu" "$iters" "$reps" \
    "$@" >> "$recs"
}
for r in $(seq "$rounds"); do
  NCCL_PROFILER_PLUGIN=none "$build/nccl_latency" none "$iters" "$reps" >> "$lat"
  on full
  on groups10 NCCL_INSPECTOR_SAMPLE_GROUPS=10
  on groups10-burst100 NCCL_INSPECTOR_SAMPLE_GROUPS=10 NCCL_INSPECTOR_SAMPLE_GROUPS_BURST=100
  on time10 NCCL_INSPECTOR_SAMPLE_WINDOW_MS=2 NCCL_INSPECTOR_SAMPLE_PERIOD_MS=20
  on first-only NCCL_INSPECTOR_SAMPLE_GROUPS=1000000000
  [ "${WITH_NULL:-0}" = 1 ] && NCCL_PROFILER_PLUGIN=$null "$build/nccl_latency" null "$iters" "$reps" >> "$lat"
  echo "round $r done"
done
python3 tools/validate/sampling_report.py summary "$lat" "$recs" | tee "$out/sampling.md"

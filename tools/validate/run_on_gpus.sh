#!/usr/bin/env bash
# The GPU validation run (docs/VALIDATION.md): build the plugin with cmake on the GPU machine,
# run the validation workload with it on every GPU (coverage, accuracy), then small-message
# AllReduce latency for four configurations in interleaved rounds (overhead).
#   tools/validate/run_on_gpus.sh OUTDIR [ROUNDS]
set -euo pipefail
out=${1:?usage: run_on_gpus.sh OUTDIR [ROUNDS]}
rounds=${2:-3}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# NVLink multicast stays off on shared machines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ngpu=$(python3 -c 'import torch; print(torch.cuda.device_count())')
build=$root/build-gpu
cmake -S . -B "$build" -DINSPECTOR_BUILD_TOOLS=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j 8 >/dev/null
plugin=$build/lib/libnccl-profiler-inspector.so
null=$build/lib/libinspector-null-plugin.so
{
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
  ldd "$plugin"
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
run() { python3 -m torch.distributed.run --nproc-per-node "$ngpu" "$@"; }

echo "== coverage and accuracy"
val=/tmp/inspector-validation
rm -rf "$val"
NCCL_PROFILER_PLUGIN=$plugin NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=$val/logs \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE \
  run tools/validate/workload.py --out "$val/ops" > "$out/workload.log" 2>&1 || {
    tail -50 "$out/workload.log"; exit 1; }
grep -E "Inspector|PROFILER|Profiler|profiler|workload:" "$out/workload.log" | sort | uniq -c | sort -rn | head -20
python3 tools/validate/compare.py --ops "$val/ops" --logs "$val/logs" --json "$out/compare.json" \
  | tee "$out/compare.md" || true
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

#!/usr/bin/env bash
# Record NCCL callback traces on the GPU machine with the recording plugin
# (tests/plugins/trace_plugin.c), for new fixtures and for debugging:
#   tools/validate/record_on_gpus.sh OUTDIR
set -euo pipefail
out=${1:?usage: record_on_gpus.sh OUTDIR rec NAME SCRIPT [ARGS...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ngpu=$(python3 -c 'import torch; print(torch.cuda.device_count())')
build=$root/build-gpu
cmake -S . -B "$build" -DINSPECTOR_BUILD_TOOLS=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j 8 >/dev/null
trace=$build/lib/libinspector-trace-plugin.so
run() { python3 -m torch.distributed.run --nproc-per-node "$ngpu" "$@"; }
rec() { # name, script and args
  local name=$1; shift
  local d=/tmp/inspector-traces/$name
  rm -rf "$d"; mkdir -p "$d"
  NCCL_PROFILER_PLUGIN=$trace INSPECTOR_TRACE_DIR=$d run "$@" >"$d.log" 2>&1 || { tail -30 "$d.log"; return 1; }
  local i=0
  for f in "$d"/trace-*.jsonl; do
    gzip -9 -c "$f" > "$out/$name-$i.jsonl.gz"; i=$((i + 1))
  done
  echo "$name: $(ls "$d" | wc -l) files, $(cat "$d"/*.jsonl | wc -l) lines"
}
mkdir -p "$out"
"$@"

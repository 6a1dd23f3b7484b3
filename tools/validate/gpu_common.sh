# SPDX-License-Identifier: Apache-2.0
# Sourced by the *_on_gpus.sh scripts: the repository root as the working directory, NVLink
# multicast off (it can take a shared host's GPUs out of service), the number of GPUs, and the
# plugins built with cmake on the GPU machine (its C library differs from ours).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ngpu=$(python3 -c 'import torch; print(torch.cuda.device_count())')
build=$root/build-gpu
cmake -S . -B "$build" -DINSPECTOR_BUILD_TOOLS=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j 8 >/dev/null
plugin=$build/lib/libnccl-profiler-inspector.so
null=$build/lib/libinspector-null-plugin.so
trace=$build/lib/libinspector-trace-plugin.so
run() { python3 -m torch.distributed.run --nproc-per-node "$ngpu" "$@"; }

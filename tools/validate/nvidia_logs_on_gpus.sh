#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Records logs of NVIDIA's own Inspector plugin (NCCL's plugins/profiler/inspector) and of ours,
# from the same validation workload on the GPU machine, so that inspector-report can be tested on
# the vendor's format (tests/data/nvidia-inspector). NVIDIA's source is not part of this
# repository: put it in build-nv/inspector (any NCCL checkout's plugins/profiler/inspector) and
# carry it to the device. Needs CUDA at /usr/local/cuda there (NVIDIA's plugin links cudart).
# Output: $OUT/nvidia/*.log and $OUT/ours/*.log; also writes what it ran to stdout.
set -e
source "$(dirname "$0")/gpu_common.sh"
out=${OUT:?set OUT}
src=$root/build-nv/inspector
(cd "$src" && make -j 8 CUDA_HOME=/usr/local/cuda >/dev/null 2>&1 || make CUDA_HOME=/usr/local/cuda 2>&1 | tail -20)
nv=$(find "$src" -name 'libnccl-profiler-inspector*.so' | head -1)
[ -n "$nv" ] || { echo "NVIDIA's plugin did not build"; exit 1; }
echo "NVIDIA plugin: $nv"; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
ops="AllReduce,AllGather,ReduceScatter,Broadcast,Reduce,SendRecv"
for who in nvidia ours; do
  mkdir -p "$out/$who" "$out/ops-$who"
  lib=$([ $who = nvidia ] && echo "$nv" || echo "$plugin")
  # NVIDIA's plugin writes JSON only from its dump thread: an interval is needed (its default
  # writes nothing); ours writes at the end whatever the interval.
  NCCL_PROFILER_PLUGIN=$lib NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=$out/$who \
    NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=200000 \
    run tools/validate/workload.py --out "$out/ops-$who" --sizes 64K,1M,16M --iters 10 --ops $ops
  sleep 1
  echo "$who: $(cat "$out/$who"/* 2>/dev/null | wc -l) lines in $(ls "$out/$who" | wc -l) files"
done

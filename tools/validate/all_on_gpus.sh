#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every GPU experiment of docs/VALIDATION.md in one device call, each step under a time limit
# so that one hang cannot take the others down; results land in OUTDIR/results.tgz (and the
# summaries beside it).
#   tools/validate/all_on_gpus.sh OUTDIR [SAMPLING_ROUNDS [STEP...]]   (default: every step)
#  1. run_on_gpus.sh with TORCH_NCCL_ENABLE_TIMING=1 and --cupti: coverage, accuracy against the
#     three references (events on our stream, events on NCCL's stream, CUPTI kernel durations)
#  2. sampled_on_gpus.sh: accuracy of sampled records
#  3. prom_identity.py: Prometheus files named and labelled from the CUDA driver
#  4. the workload, small, in trace mode: traces and the records they must replay to
#     (tests/data/live); graph.py the same way (a CUDA-graph fixture, tests/data/graph)
#  5. scale.py: communicators of several sizes, a planted straggler (inspector-report names it)
#  6. sampling_on_gpus.sh: sampled timing, latency and record counts
#  (graph-sampled, not in the default list: graph.py under sampled timing)
set -uo pipefail
out=${1:?usage: all_on_gpus.sh OUTDIR [SAMPLING_ROUNDS]}
rounds=${2:-3}
shift $(( $# < 2 ? $# : 2 ))
steps=" ${*:-accuracy sampled prom live straggler graph sampling} "
want() { [[ $steps == *" $1 "* ]]; }
mkdir -p "$out" && out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
res=/tmp/inspector-all
rm -rf "$res"; mkdir -p "$res"
step() { # name, seconds, command...
  local name=$1 limit=$2; shift 2
  echo "== $name"
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" > "$res/$name.log" 2>&1
  echo "$name: exit $? in $((SECONDS - t0)) s" | tee -a "$res/steps.txt"
  tail -25 "$res/$name.log"
}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
want accuracy && step accuracy 150 env TORCH_NCCL_ENABLE_TIMING=1 "$here/run_on_gpus.sh" "$res/accuracy" 0 --cupti
source "$here/gpu_common.sh"   # the build run_on_gpus.sh made
want sampled && step sampled 90 "$here/sampled_on_gpus.sh" "$res/sampled"
want prom && step prom 90 env NCCL_PROFILER_PLUGIN="$plugin" NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_PROM_DUMP=1 \
  NCCL_INSPECTOR_PROM_DUMP_STATS=1 NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=30000000 \
  NCCL_INSPECTOR_DUMP_DIR=/tmp/inspector-prom NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE \
  python3 -m torch.distributed.run --nproc-per-node "$ngpu" tools/validate/prom_identity.py \
  --dump /tmp/inspector-prom --out "$res/prom"
rm -rf /tmp/inspector-live
want live && step live 90 env NCCL_PROFILER_PLUGIN="$plugin" NCCL_INSPECTOR_ENABLE=1 \
  NCCL_INSPECTOR_TRACE_DIR=/tmp/inspector-live/trace NCCL_INSPECTOR_DUMP_DIR=/tmp/inspector-live/logs \
  python3 -m torch.distributed.run --nproc-per-node "$ngpu" tools/validate/workload.py \
  --out /tmp/inspector-live/ops --sizes 8K,1M,64M --iters 3
want live && cp -r /tmp/inspector-live "$res/live" 2>/dev/null
rm -rf /tmp/inspector-scale
want straggler && step straggler 120 env NCCL_PROFILER_PLUGIN="$plugin" NCCL_INSPECTOR_ENABLE=1 \
  NCCL_INSPECTOR_DUMP_DIR=/tmp/inspector-scale/logs \
  python3 -m torch.distributed.run --nproc-per-node "$ngpu" tools/validate/scale.py
want straggler && cp -r /tmp/inspector-scale "$res/straggler" 2>/dev/null
rm -rf /tmp/inspector-graph
want graph && step graph 90 env NCCL_PROFILER_PLUGIN="$plugin" NCCL_INSPECTOR_ENABLE=1 \
  NCCL_INSPECTOR_TRACE_DIR=/tmp/inspector-graph/trace NCCL_INSPECTOR_DUMP_DIR=/tmp/inspector-graph/logs \
  NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE \
  python3 -m torch.distributed.run --nproc-per-node "$ngpu" tools/validate/graph.py --replays 3
want graph && cp -r /tmp/inspector-graph "$res/graph" 2>/dev/null
graph_sampled() { # graph launches under sampling: captured while timing off, while on, time windows
  local i=0
  for mode in NCCL_INSPECTOR_SAMPLE_GROUPS=2 "NCCL_INSPECTOR_SAMPLE_GROUPS=2 NCCL_INSPECTOR_SAMPLE_GROUPS_BURST=2" \
      "NCCL_INSPECTOR_SAMPLE_WINDOW_MS=5 NCCL_INSPECTOR_SAMPLE_PERIOD_MS=10"; do
    i=$((i + 1))
    local d=/tmp/inspector-graph-sampled/$i
    echo "== graph-sampled $i: $mode"
    env NCCL_PROFILER_PLUGIN="$plugin" NCCL_INSPECTOR_ENABLE=1 $mode NCCL_INSPECTOR_TRACE_DIR=$d/trace \
      NCCL_INSPECTOR_DUMP_DIR=$d/logs python3 -m torch.distributed.run --nproc-per-node "$ngpu" \
      tools/validate/graph.py --replays 20 || return 1
  done
}
export -f graph_sampled
export plugin ngpu
rm -rf /tmp/inspector-graph-sampled
want graph-sampled && step graph-sampled 150 bash -c graph_sampled
want graph-sampled && cp -r /tmp/inspector-graph-sampled "$res/graph-sampled" 2>/dev/null
want sampling && step sampling 270 "$here/sampling_on_gpus.sh" "$res/sampling" "$rounds"
cp "$res"/accuracy/compare-kernel.md "$res"/sampling/*.md "$res"/sampled/compare-sampled.md "$out"/ 2>/dev/null
cp "$res/steps.txt" "$out"/
tar czf "$out/results.tgz" -C "$res" .

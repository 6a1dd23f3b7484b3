#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tools/validate/truth/run.sh OUT NCCL_TGZ [SET]
#
# The GPU truth harness: builds NCCL (2.30+, from the source tarball NCCL_TGZ: its src/,
# makefiles/, Makefile and plugins/profiler/inspector/), this plugin and NVIDIA's Inspector
# plugin, then runs truth_driver.cu's workloads under each, quiet and with a busy CPU, with
# and without trace mode, and judges every record against CUPTI's kernel times
# (compare.py). Results: OUT/table.md (the table docs/VALIDATION.md quotes), OUT/results.json,
# and OUT/runs-*.tgz (each run's kernels, ops, logs and traces: a traced run is a fixture
# that tests/test_gpu_truth.py can replay).
#
# SET: "full" (default: every workload below), "quick" (one of each kind), "busy-trace" (small
# back-to-back ops beside a busy CPU, traced: the recordings for the ops NCCL loses) or "torch" (real
# PyTorch jobs, torch_ddp.py: DDP and FSDP2 (TORCH_MODELS), with this NCCL preloaded in place of
# PyTorch's; TRUTH_SYNC_EVERY=N reads the loss every N steps, as a loop that logs it does:
# default never). Ranks: two on GPU 0 (NCCL_MULTI_RANK_GPU_ENABLE=1), or TRUTH_DEVICES (e.g. 0,1 for
# one rank per GPU, 0,0,0,0 for four on GPU 0: NCCL_MAX_NCHANNELS=32 is then set, as 4 ranks on
# one GPU need, or their kernels hang).
# Busy CPU: 2 x cores spinning processes, for the length of the run.
set -uo pipefail
OUT=${1:?usage: run.sh OUT NCCL_TGZ [SET]}
TGZ=${2:?usage: run.sh OUT NCCL_TGZ [SET]}
SET=${3:-full}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
W=${TRUTH_WORK:-/tmp/truth-work}
mkdir -p "$OUT" "$W"
export PATH=/usr/local/cuda/bin:$PATH
# NVLink multicast stays off on shared hosts (tools/validate/gpu_common.sh)
export NCCL_NVLS_ENABLE=0 NCCL_MULTI_RANK_GPU_ENABLE=1
export TRUTH_DEVICES=${TRUTH_DEVICES:-0,0}
NRANKS=$(($(tr -cd , <<<"$TRUTH_DEVICES" | wc -c) + 1))
[ "$NRANKS" -ge 4 ] && export NCCL_MAX_NCHANNELS=${NCCL_MAX_NCHANNELS:-$((NRANKS >= 8 ? 16 : 32))}
CUPTI=/usr/local/cuda/extras/CUPTI
t0=$(date +%s)
log() { echo "truth: $(($(date +%s) - t0)) s: $*" | tee -a "$OUT/log.txt"; }

# ---- builds -------------------------------------------------------------------------------
if [ ! -f "$W/nccl/build/lib/libnccl.so" ]; then
  mkdir -p "$W/nccl" && tar xzf "$TGZ" -C "$W/nccl"
  log "building NCCL (sm_90, the functions the workloads use)"
  (cd "$W/nccl" && make -j"$(nproc)" src.build NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" \
     ONLY_FUNCS="AllReduce Sum f32 * *|AllGather * *|Broadcast * *|ReduceScatter * f32 * *|SendRecv" >"$OUT/nccl-build.log" 2>&1) ||
    { tail -30 "$OUT/nccl-build.log"; exit 1; }
fi
NCCL=$W/nccl/build
log "building the plugin"
cmake -S "$ROOT" -B "$W/plugin" -DCMAKE_BUILD_TYPE=Release -DINSPECTOR_BUILD_TOOLS=OFF \
  -DBUILD_TESTING=OFF >"$OUT/plugin-build.log" 2>&1 &&
  cmake --build "$W/plugin" -j"$(nproc)" >>"$OUT/plugin-build.log" 2>&1 || { tail -30 "$OUT/plugin-build.log"; exit 1; }
OURS=$W/plugin/lib/libnccl-profiler-inspector.so
NV=""
if [ -d "$W/nccl/plugins/profiler/inspector" ]; then
  log "building NVIDIA's Inspector plugin"
  if make -C "$W/nccl/plugins/profiler/inspector" -j"$(nproc)" >"$OUT/nvidia-build.log" 2>&1; then
    NV=$(find "$W/nccl/plugins/profiler/inspector" -name 'libnccl-profiler*.so' | head -1)
  fi
  [ -n "$NV" ] || log "NVIDIA's plugin did not build (see nvidia-build.log): its rows are left out"
fi
log "building the driver"
for v in 11 10 9 8; do # CUPTI's kernel record version this CUDA has
  nvcc -O2 -arch=sm_90 -DKERNEL_RECORD_VERSION=$v -I"$NCCL/include" -I"$CUPTI/include" \
    -L"$NCCL/lib" -L"$CUPTI/lib64" -o "$W/truth_driver" "$HERE/truth_driver.cu" -lnccl -lcupti -lcuda \
    2>"$OUT/driver-build.log" && break
done
[ -x "$W/truth_driver" ] || { cat "$OUT/driver-build.log"; exit 1; }

# ---- runs ---------------------------------------------------------------------------------
SPIN=()
busy_on() { for _ in $(seq $((2 * $(nproc)))); do (while :; do :; done) & SPIN+=($!); done; }
busy_off() { [ ${#SPIN[@]} -gt 0 ] && kill "${SPIN[@]}" 2>/dev/null; wait "${SPIN[@]}" 2>/dev/null; SPIN=(); }
trap busy_off EXIT

# run NAME PLUGIN(ours|nvidia) CPU(quiet|busy) TRACE(0|1) WORKLOAD ITERS BYTES SYNC_EVERY
run() {
  local name=$1 plugin=$2 cpu=$3 trace=$4; shift 4
  local d=$OUT/runs/$name so=$OURS
  [ "$plugin" = nvidia ] && { [ -n "$NV" ] || return 0; so=$NV; }
  mkdir -p "$d/logs"
  printf '{"name":"%s","plugin":"%s","cpu":"%s","trace":%s,"workload":"%s","iters":%s,"bytes":%s,"sync_every":%s,"devices":"%s","dump_unverified":%s,"env":"%s"}\n' \
    "$name" "$plugin" "$cpu" "$trace" "$1" "$2" "$3" "$4" "$TRUTH_DEVICES" \
    "$([ "$plugin" = ours ] && echo true || echo false)" "${EXTRA_ENV:-}" >"$d/run.json"
  [ "$cpu" = busy ] && busy_on
  # ours also writes the ops it leaves out (marked "unverified", not records), so that the
  # ops NCCL gave right are known without a trace
  local env=(LD_LIBRARY_PATH="$NCCL/lib:$CUPTI/lib64" NCCL_PROFILER_PLUGIN="$so"
             NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR="$d/logs" NCCL_INSPECTOR_DUMP_UNVERIFIED=1
             ${EXTRA_ENV:-})
  # NVIDIA's plugin writes nothing in JSON mode without an interval
  [ "$plugin" = nvidia ] && env+=(NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=1000)
  [ "$trace" = 1 ] && env+=(NCCL_INSPECTOR_TRACE_DIR="$d/trace")
  env "${env[@]}" timeout 120 "$W/truth_driver" "$d" "$@" >"$d/stdout.txt" 2>"$d/stderr.txt"
  local rc=$?
  busy_off
  log "$name: rc $rc, $(wc -l <"$d/kernels.csv") kernels, $(cat "$d"/logs/*.log 2>/dev/null | wc -l) log lines"
}

# torch_run NAME PLUGIN CPU TRACE(0|1) STEPS [MODEL]: torch_ddp.py (MODEL ddp or fsdp2) under
# torch.distributed.run, one process per rank; a traced run's per-process traces are joined
# into one trace.jsonl
torch_run() {
  local name=$1 plugin=$2 cpu=$3 trace=$4 steps=$5 model=${6:-ddp}
  local d=$OUT/runs/$name so=$OURS
  [ "$plugin" = nvidia ] && { [ -n "$NV" ] || return 0; so=$NV; }
  mkdir -p "$d/logs"
  printf '{"name":"%s","plugin":"%s","cpu":"%s","trace":%s,"workload":"torch-%s","iters":%s,"sync_every":%s,"devices":"%s","dump_unverified":%s}\n' \
    "$name" "$plugin" "$cpu" "$([ "$trace" = 1 ] && echo true || echo false)" "$model" "$steps" "${TRUTH_SYNC_EVERY:-0}" "$TRUTH_DEVICES" "$([ "$plugin" = ours ] && echo true || echo false)" >"$d/run.json"
  [ "$cpu" = busy ] && busy_on
  local env=(LD_PRELOAD="$NCCL/lib/libnccl.so.2" NCCL_PROFILER_PLUGIN="$so" TORCH_SYMM_MEM_DISABLE_MULTICAST=1
             NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR="$d/logs" NCCL_INSPECTOR_DUMP_UNVERIFIED=1)
  [ "$plugin" = nvidia ] && env+=(NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=1000)
  [ "$trace" = 1 ] && env+=(NCCL_INSPECTOR_TRACE_DIR="$d/trace")
  env "${env[@]}" timeout 300 python3 -m torch.distributed.run --nproc-per-node "$NRANKS" \
    "$HERE/torch_ddp.py" "$d" "$steps" "$model" >"$d/stdout.txt" 2>"$d/stderr.txt"
  local rc=$?
  busy_off
  cat "$d"/kernels-r*.csv >"$d/kernels.csv" 2>/dev/null
  cat "$d"/ops-r*.csv >"$d/ops.csv" 2>/dev/null
  cat "$d"/clock-r*.csv >"$d/clock.csv" 2>/dev/null
  rm -f "$d"/kernels-r*.csv "$d"/ops-r*.csv "$d"/clock-r*.csv
  [ "$trace" = 1 ] && cat "$d"/trace/*.trace.jsonl >"$d/trace.jsonl" 2>/dev/null && rm -rf "$d/trace"
  log "$name: rc $rc, $(wc -l <"$d/kernels.csv") kernels, $(cat "$d"/logs/*.log 2>/dev/null | wc -l) log lines"
  [ $rc = 0 ] || tail -20 "$d/stderr.txt" | tee -a "$OUT/log.txt"
}

M=$((1 << 20))
if [ "$SET" = torch ]; then
  # TORCH_TRACE="0 1" (default): untraced and traced; TORCH_NV=0 leaves NVIDIA's plugin out;
  # TORCH_MODELS="ddp fsdp2" (default); TORCH_CPU="quiet busy" (default)
  for model in ${TORCH_MODELS:-ddp fsdp2}; do
    for cpu in ${TORCH_CPU:-quiet busy}; do
      for tr in ${TORCH_TRACE:-0 1}; do
        sfx=$cpu; [ "$tr" = 1 ] && sfx=$cpu-trace
        torch_run torch-$model-$sfx ours $cpu "$tr" "${TORCH_STEPS:-800}" "$model"
      done
      [ "${TORCH_NV:-1}" = 1 ] && torch_run nv-torch-$model-$cpu nvidia $cpu 0 "${TORCH_STEPS:-800}" "$model"
    done
  done
elif [ "$SET" = busy-trace ]; then
  # back-to-back small ops beside a busy CPU, traced: where NCCL hands ops other ops' stamps
  run ar1m-b2b-busy-trace ours busy 1 ar 1000 $M 0
  run mix256k-b2b-busy-trace ours busy 1 ar,p2p,bc 600 $((256 << 10)) 0
elif [ "$SET" = quick ]; then
  run ar1m-b2b-quiet ours quiet 0 ar 1000 $M 0
  run ar1m-b2b-busy-trace ours busy 1 ar 1000 $M 0
  run mix-b2b-busy ours busy 0 ar,p2p,bc,ag 400 $((4 * M)) 0
  run ddp-busy ours busy 0 ddp 200 $((16 * M)) 1
else
  for cpu in quiet busy; do
    for tr in 0 1; do
      sfx=$cpu; [ $tr = 1 ] && sfx=$cpu-trace
      run ar4m-b2b-$sfx ours $cpu $tr ar 300 $((4 * M)) 0
      run ar1m-b2b-$sfx ours $cpu $tr ar 1000 $M 0
      run ar4m-sync20-$sfx ours $cpu $tr ar 400 $((4 * M)) 20
      run mix-b2b-$sfx ours $cpu $tr ar,p2p,bc,ag 400 $((4 * M)) 0
      run mix256k-b2b-$sfx ours $cpu $tr ar,p2p,bc 600 $((256 << 10)) 0
      run ddp-$sfx ours $cpu $tr ddp 200 $((16 * M)) 1
    done
    # Broadcasts off NCCL's AllGatherV path: NCCL reports them again
    EXTRA_ENV=NCCL_ALLGATHERV_ENABLE=0 run bcplain-b2b-$cpu ours $cpu 0 ar,bc 400 $((4 * M)) 0
    run nv-ar1m-b2b-$cpu nvidia $cpu 0 ar 1000 $M 0
    run nv-ar4m-sync20-$cpu nvidia $cpu 0 ar 400 $((4 * M)) 20
    run nv-mix-b2b-$cpu nvidia $cpu 0 ar,p2p,bc,ag 400 $((4 * M)) 0
    run nv-ddp-$cpu nvidia $cpu 0 ddp 200 $((16 * M)) 1
  done
fi

# ---- judging --------------------------------------------------------------------------------
log "judging"
python3 "$HERE/compare.py" --json "$OUT/results.json" "$OUT"/runs/* >"$OUT/table.md" 2>"$OUT/compare.err"
cat "$OUT/table.md"
gzip -rq "$OUT"/runs/*/trace "$OUT"/runs/*/logs 2>/dev/null
# a device machine gives back at most 8 files of 16 MiB: the runs in four archives (quiet
# and busy CPU, traced or not), the build logs in a fifth, beside table.md, results.json and
# log.txt
mkdir -p "$OUT/builds" && mv "$OUT"/*-build.log "$OUT"/compare.err "$OUT/builds/" 2>/dev/null
(cd "$OUT/runs" &&
 for cpu in quiet busy; do
   tar czf "$OUT/runs-$cpu.tgz" $(ls | grep -- "-$cpu\$") 2>/dev/null
   tar czf "$OUT/runs-$cpu-trace.tgz" $(ls | grep -- "-$cpu-trace\$") 2>/dev/null
 done)
(cd "$OUT" && tar czf builds.tgz builds)
rm -rf "$OUT/runs" "$OUT/builds"
log "done"

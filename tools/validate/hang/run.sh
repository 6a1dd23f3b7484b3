#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tools/validate/hang/run.sh OUT NCCL_TGZ
#
# Hang detection on a GPU: builds NCCL (2.30+, from the source tarball NCCL_TGZ, as
# tools/validate/truth/run.sh does), this plugin and inspector-report, then runs
# hang_driver.cu's scenarios (a collective stuck on 4 ranks of GPU 0: two wait inside its
# kernel, one is queued behind a gate kernel, one never issues it; the same resolved late;
# a Recv whose Send never comes; the collective again with Prometheus output) with
# NCCL_INSPECTOR_HANG_SECONDS=3. While each job hangs it copies the logs (and .prom files)
# and runs inspector-report on the copy, as docs/deploy.md tells users to; after the job is
# aborted it runs the report on what was left. Results: OUT/<scenario>/ (driver output,
# live/ and final/ logs, report-*.txt and report-*.json) and OUT/summary.txt.
set -uo pipefail
OUT=${1:?usage: run.sh OUT NCCL_TGZ}
TGZ=${2:?usage: run.sh OUT NCCL_TGZ}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
W=${HANG_WORK:-/tmp/hang-work}
HANG_S=${HANG_S:-3}
mkdir -p "$OUT" "$W"
export PATH=/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE=0 NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_MAX_NCHANNELS=32
t0=$(date +%s)
log() { echo "hang: $(($(date +%s) - t0)) s: $*" | tee -a "$OUT/summary.txt"; }

if [ ! -f "$W/nccl/build/lib/libnccl.so" ]; then
  mkdir -p "$W/nccl" && tar xzf "$TGZ" -C "$W/nccl"
  log "building NCCL (sm_90, the functions the scenarios use)"
  (cd "$W/nccl" && make -j"$(nproc)" src.build NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" \
     ONLY_FUNCS="AllReduce Sum f32 * *|AllGather * *|SendRecv" >"$OUT/nccl-build.log" 2>&1) ||
    { tail -30 "$OUT/nccl-build.log"; exit 1; }
fi
NCCL=$W/nccl/build
log "building the plugin and inspector-report"
cmake -S "$ROOT" -B "$W/plugin" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >"$OUT/plugin-build.log" 2>&1 &&
  cmake --build "$W/plugin" -j"$(nproc)" >>"$OUT/plugin-build.log" 2>&1 || { tail -30 "$OUT/plugin-build.log"; exit 1; }
PLUGIN=$W/plugin/lib/libnccl-profiler-inspector.so
REPORT=$W/plugin/bin/inspector-report
log "building the driver"
nvcc -O2 -arch=sm_90 -I"$NCCL/include" -L"$NCCL/lib" -o "$W/hang_driver" "$HERE/hang_driver.cu" \
  -lnccl -lpthread 2>"$OUT/driver-build.log" || { cat "$OUT/driver-build.log"; exit 1; }

# scenario NAME DRIVER_ARGS... (EXTRA_ENV: more variables for the job)
scenario() {
  local name=$1; shift
  local d=$OUT/$name
  mkdir -p "$d/logs"
  env LD_LIBRARY_PATH="$NCCL/lib" NCCL_PROFILER_PLUGIN="$PLUGIN" NCCL_INSPECTOR_ENABLE=1 \
    NCCL_INSPECTOR_DUMP_DIR="$d/logs" NCCL_INSPECTOR_HANG_SECONDS="$HANG_S" ${EXTRA_ENV:-} \
    timeout 60 "$W/hang_driver" "$@" >"$d/driver.txt" 2>"$d/stderr.txt" &
  local pid=$! t
  # wait for the stuck op, then for the plugin's first hang line (a generous deadline)
  for t in $(seq 300); do grep -q '^stuck' "$d/driver.txt" && break; sleep 0.1; done
  if ! grep -q '^stuck' "$d/driver.txt"; then
    # the driver never got its op stuck in 30 s (NCCL waited for the missing rank at launch?):
    # say so and move on rather than spend the device's time on the job's timeout
    log "$name: no stuck op after 30 s: $(tr '\n' ' ' <"$d/driver.txt" | tail -c 300) $(tail -c 300 "$d/stderr.txt")"
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    return
  fi
  local ts; ts=$(date +%s.%N)
  for t in $(seq 300); do grep -rqs '"hang":' "$d/logs" && break; sleep 0.1; done
  local te; te=$(date +%s.%N)
  log "$name: stuck op issued; first hang line $(python3 -c "print(round($te - $ts, 1))") s later (threshold $HANG_S s)"
  sleep 2 # let every rank's line land, and a comm_idle or two
  if kill -0 $pid 2>/dev/null; then
    cp -r "$d/logs" "$d/live"
    log "$name: logs copied while the job hangs (process $pid alive)"
    "$REPORT" "$d/live" >"$d/report-live.txt" 2>&1
    "$REPORT" --json "$d/live" >"$d/report-live.json" 2>"$d/report-live.err"
  else
    log "$name: the job was no longer running when its logs were to be copied"
  fi
  wait $pid
  log "$name: job exit $?: $(tr '\n' ' ' <"$d/driver.txt" | tail -c 400)"
  cp -r "$d/logs" "$d/final"
  "$REPORT" "$d/final" >"$d/report-final.txt" 2>&1
  "$REPORT" --json "$d/final" >"$d/report-final.json" 2>"$d/report-final.err"
  log "$name: lines: $(find "$d/final" -name '*.log' -exec cat {} + | grep -o '"\(hang\|hang_resolved\|comm_idle\)":' | sort | uniq -c | tr '\n' ' ')"
  find "$d/live" -name '*.prom' -exec grep -h '^nccl_\(inflight_oldest_seconds\|last_completed_sn\)' {} + 2>/dev/null |
    sed 's/^/  live .prom: /' | tee -a "$OUT/summary.txt"
  grep -h '^ *HANG' "$d/report-live.txt" "$d/report-final.txt" 2>/dev/null | sed 's/^/  /' | tee -a "$OUT/summary.txt"
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$OUT/summary.txt" 2>&1
scenario coll coll 12
scenario late late 14 8
scenario p2p p2p 12
EXTRA_ENV="NCCL_INSPECTOR_PROM_DUMP=1 NCCL_INSPECTOR_JSON_DUMP=1 NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=1000000" \
  scenario coll-prom coll 12
log "done"

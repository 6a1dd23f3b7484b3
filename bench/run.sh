#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/run.sh BUILD_DIR - the CPU benchmark (`make bench`): runs every mode of
# inspector-bench against Inspector and the do-nothing plugin, counts
# instructions per callback with callgrind, and prints the table that
# docs/BENCHMARKS.md records. Dump directories live in /dev/shm (tmpfs).
#   BENCH_SECONDS (10)  length of each records/s run
#   BENCH_RUNS (7)      repeated runs per timing figure (medians are reported)
#   BENCH_CHURN_SECONDS (5)  length of each init/finalize-while-busy run
set -euo pipefail
B=${1:-build-bench}
BIN=$B/bin/inspector-bench
INS=$B/lib/librccl-profiler-inspector.so
NUL=$B/lib/libinspector-null-plugin.so
SECONDS_PER_RATE=${BENCH_SECONDS:-10}
RUNS=${BENCH_RUNS:-7}
CHURN_SECONDS=${BENCH_CHURN_SECONDS:-5}
FIX=$(ls tests/data/nccl-*/*.jsonl.gz)
# The machine's load before we add ours: timing figures from a loaded machine are not valid.
LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
SHM=$(mktemp -d /dev/shm/inspector-bench.XXXXXX)
RES=$SHM/results
trap 'rm -rf "$SHM"' EXIT
: > "$RES"

base=(NCCL_INSPECTOR_ENABLE=1)
# run PREFIX ENV... -- ARGS...: one inspector-bench process; its "key value" lines, prefixed
run() {
  local prefix=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local dir=$SHM/out.$RANDOM
  env "${base[@]}" NCCL_INSPECTOR_DUMP_DIR="$dir" "${envs[@]}" "$BIN" "$@" |
    sed "s/^/$prefix/" >> "$RES"
  rm -rf "$dir"
}

echo "bench: serial fixture mix and synthetic traffic ($RUNS runs)..." >&2
# Rings large enough that the measured traffic never drops (a drop skips work).
big=(NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=65536 NCCL_INSPECTOR_DUMP_P2P_RING_SIZE=65536)
run "" "${big[@]}" -- calls --plugin "$INS" --null "$NUL" --runs "$RUNS" $FIX
echo "bench: recorded threads, concurrently..." >&2
run "" "${big[@]}" -- threads --plugin "$INS" --null "$NUL" --runs "$RUNS" --reps 20 $FIX
echo "bench: 1 vs 2 threads on 1 vs 2 communicators..." >&2
run "" NCCL_INSPECTOR_DUMP_THREAD_ENABLE=0 "${big[@]}" -- \
  scale --plugin "$INS" --null "$NUL" --runs $((RUNS * 2 + 1)) --synth-ops 1024 --synth-iters 32
for iv in 0 1000000; do
  for rate in 500000 100000; do
    echo "bench: $rate records/s for ${SECONDS_PER_RATE} s, interval $iv us, default rings..." >&2
    run "i$iv.r$rate." NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=$iv -- \
      rate --plugin "$INS" --rate $rate --seconds "$SECONDS_PER_RATE" || true
  done
done
echo "bench: resident memory per communicator..." >&2
run "" -- mem --plugin "$INS" --comms 256
# A communicator's init and finalize on one thread while two others are busy on theirs
# (PyTorch makes subgroups in the middle of training): default settings, JSON or Prometheus.
for out in json prom; do
  for rate in 200000 0; do
    echo "bench: init and finalize while 2 communicators complete $rate ops/s each, $out, ${CHURN_SECONDS} s..." >&2
    o=(); [ $out = prom ] && o=(NCCL_INSPECTOR_PROM_DUMP=1)
    run "$out.r$rate." ${o[@]+"${o[@]}"} -- \
      churn --plugin "$INS" --busy 2 --rate $rate --seconds "$CHURN_SECONDS" || true
  done
done

if command -v valgrind >/dev/null; then
  toggles=()
  for f in start_v4 start_v5 start_v6 ins_adapter_stop ins_adapter_record \
           null_start_v4 null_start_v5 null_start_v6 null_stop null_record; do
    toggles+=(--toggle-collect=$f)
  done
  for what in mix synth; do
    for pl in "$INS" "$NUL"; do
      echo "bench: callgrind, $what, $(basename "$pl")..." >&2
      out=$SHM/callgrind.out
      env "${base[@]}" NCCL_INSPECTOR_DUMP_DIR="$SHM/cg" "${big[@]}" \
        valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
        --instr-atstart=no "${toggles[@]}" \
        "$BIN" calls --callgrind $what --plugin "$pl" $FIX 2>/dev/null >> "$RES"
      label=$(tail -1 "$RES" | cut -d. -f3)
      echo "callgrind.$what.$label.instructions $(awk '/^totals:/ {print $2}' "$out")" >> "$RES"
      rm -rf "$SHM/cg" "$out"
    done
  done
  # trace mode (NCCL_INSPECTOR_TRACE_DIR): what a traced callback costs NCCL's threads
  echo "bench: callgrind, mix, trace mode..." >&2
  out=$SHM/callgrind.out
  env "${base[@]}" NCCL_INSPECTOR_DUMP_DIR="$SHM/cg" NCCL_INSPECTOR_TRACE_DIR="$SHM/cg/trace" "${big[@]}" \
    valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
    --instr-atstart=no "${toggles[@]}" \
    "$BIN" calls --callgrind mix --plugin "$INS" $FIX 2>/dev/null | sed 's/^callgrind[.]mix[.]inspector/callgrind.mixtrace.inspector/' >> "$RES"
  echo "callgrind.mixtrace.inspector.instructions $(awk '/^totals:/ {print $2}' "$out")" >> "$RES"
  rm -rf "$SHM/cg" "$out"
fi

get() { awk -v k="$1" '$1 == k {print $2}' "$RES" | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
diff_() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }

echo
echo "machine: $(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}'), $(nproc) cores"
echo
echo "| figure | Inspector | do-nothing plugin | difference |"
echo "| --- | --- | --- | --- |"
for what in mix synth; do
  i=$(get callgrind.$what.inspector.instructions); ic=$(get callgrind.$what.inspector.calls)
  n=$(get callgrind.$what.null.instructions); nc=$(get callgrind.$what.null.calls)
  if [ -n "$i" ]; then
    ii=$(ratio "$i" "$ic"); nn=$(ratio "$n" "$nc")
    echo "| instructions per callback, $what (callgrind) | $ii | $nn | $(diff_ "$ii" "$nn") |"
  fi
done
i=$(get callgrind.mixtrace.inspector.instructions); ic=$(get callgrind.mixtrace.inspector.calls)
[ -n "$i" ] && echo "| instructions per callback, mix, trace mode on (callgrind) | $(ratio "$i" "$ic") | | |"
for k in mix synth threads; do
  i=$(get $k.inspector.ns_per_call); n=$(get $k.null.ns_per_call)
  echo "| ns per callback, $k (median of $RUNS) | $i | $n | $(diff_ "$i" "$n") |"
done
for pl in inspector null; do
  eval "s1_$pl=\$(get scale.$pl.one_thread_calls_per_s) s2_$pl=\$(get scale.$pl.two_threads_calls_per_s) r_$pl=\$(get scale.$pl.ratio)"
done
echo "| callbacks/s, 1 thread, 1 communicator | $s1_inspector | $s1_null | |"
echo "| callbacks/s, 2 threads, 2 communicators | $s2_inspector | $s2_null | |"
echo "| 2-thread scaling (median of paired runs) | ${r_inspector}x | ${r_null}x | |"
echo "| ns per callback per thread, 1 thread / 2 threads | $(get scale.inspector.one_thread_ns_per_call) / $(get scale.inspector.two_threads_ns_per_call) | $(get scale.null.one_thread_ns_per_call) / $(get scale.null.two_threads_ns_per_call) | |"
echo
echo "| records/s run (${SECONDS_PER_RATE} s, default rings, tmpfs) | achieved records/s | written / expected | dropped | CPU of the plugin's threads | producer ns/callback | producer's longest lag |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for iv in 0 1000000; do
  for rate in 500000 100000; do
    p=i$iv.r$rate.rate.inspector
    echo "| interval $iv us, $rate/s | $(get $p.records_per_s) | $(get $p.records_written) / $(get $p.records_expected) | $(get $p.dropped) | $(get $p.dump_thread_cpu_pct)% | $(get $p.producer_ns_per_call) | $(get $p.max_producer_lag_us) us |"
  done
done
echo
echo "| init and finalize of a fresh communicator (one op), again and again, while 2 others complete N ops/s each (${CHURN_SECONDS} s, default settings, tmpfs) | cycles | init: median / longest | finalize: median / longest | busy ops/s achieved |"
echo "| --- | --- | --- | --- | --- |"
for out in json prom; do
  for rate in 200000 0; do
    p=$out.r$rate.churn.inspector
    name=JSON; [ $out = prom ] && name=Prometheus
    each="$rate/s"; [ $rate = 0 ] && each="unpaced"
    echo "| $name, $each | $(get $p.cycles) | $(get $p.init_us_median) / $(get $p.init_us_max) us | $(get $p.finalize_us_median) / $(get $p.finalize_us_max) us | $(get $p.busy_ops_per_s) |"
  done
done
echo
echo "bytes per JSON record: $(get i0.r100000.rate.inspector.bytes_per_record)"
echo "resident memory per communicator: $(get mem.inspector.kib_per_comm_at_init) KiB at init, $(get mem.inspector.kib_per_comm_after_traffic) KiB after its first operation ($(get mem.inspector.comms) communicators)"
ok=1
for iv in 0 1000000; do for rate in 500000 100000; do
  [ "$(get i$iv.r$rate.rate.inspector.ok)" = 1 ] || ok=0
done; done
# Are the figures valid? Timing needs an otherwise idle machine: judged by the load before the
# bench began, and by the do-nothing plugin's own 2-thread scaling in this run (it does no
# work: below 1.6x, something else took the CPUs). Instruction counts stay valid regardless.
invalid=()
ncpu=$(nproc)
awk -v l="$LOAD_BEFORE" -v n="$ncpu" 'BEGIN { exit !(l > 0.25 * n) }' &&
  invalid+=("the load average was $LOAD_BEFORE on $ncpu cores before the bench began")
[ "$ncpu" -ge 2 ] || invalid+=("one core: the 2-thread figures cannot be measured")
[ -n "$r_null" ] && [ "$r_null" != - ] && awk -v r="$r_null" 'BEGIN { exit !(r < 1.6) }' &&
  invalid+=("the do-nothing plugin scaled only ${r_null}x on 2 threads (about 2x on an idle machine)")
[ $ok = 1 ] || invalid+=("a records/s run did not write every record (dropped: see the table)")
# A producer held L us runs the ops it missed back to back: about rate * L records at once,
# which must fit in one ring whatever the dump thread does (docs/BENCHMARKS.md).
RING=$(sed -n 's/^#define INS_DEFAULT_RING \([0-9]*\).*/\1/p' src/core/config.h)
for iv in 0 1000000; do for rate in 500000 100000; do
  p=i$iv.r$rate.rate.inspector
  lag=$(get $p.max_producer_lag_us); lag=${lag:-0}
  burst=$(( ${lag%.*} * rate / 1000000 ))
  if [ "$(get $p.dropped)" != 0 ] && [ "$burst" -gt "${RING:-4096}" ]; then
    echo "bench: interval $iv us, $rate/s: the machine held the producer $lag us, a catch-up burst of about $burst records, more than a ring's ${RING:-4096}" >&2
  fi
done; done
if [ ${#invalid[@]} -gt 0 ]; then
  echo "bench: THESE FIGURES ARE NOT VALID (the instruction counts are):" >&2
  for why in "${invalid[@]}"; do echo "bench:   - $why" >&2; done
  echo "bench: run it again on an idle machine (nothing else running)" >&2
  exit 1
fi
echo "bench: the figures are valid (idle machine, every record written)" >&2

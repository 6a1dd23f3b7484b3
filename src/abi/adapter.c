/* SPDX-License-Identifier: Apache-2.0 */
/*
 * adapter.c - the callbacks that have one signature in every ABI version.
 */
#include "abi/adapter.h"

#include "core/comm.h"
#include "abi/lifecycle.h"
#include "trace/trace.h"

void *ins_adapter_start_traced(void *context, uint64_t type, void *parent, int rank,
                               const void *u, void *pgroup) {
  void *cell = ins_trace_start_begin(type); /* timed before the tracker sees it (trace/trace.c) */
  void *inner = ins_adapter_start(context, type, ins_trace_unwrap(parent), u);
  int ctx = context ? (int)(intptr_t)((struct ins_comm *)context)->ext_trace : 0;
  return ins_trace_start(cell, ctx, type, parent, rank, u, pgroup, inner);
}

/*
 * stopEvent and recordEventState: trace mode is rare, so its path is a
 * separate function reached by a tail call, and the common path needs no
 * stack frame of its own. stop_untraced is forced inline: left to itself,
 * gcc -O2 made it a call once the channel-stop code it inlines grew a helper
 * (+0.6 instructions per callback, measured with make bench's callgrind).
 *
 * One test of the handle's address sorts it: the tracker's handles are 64-byte
 * aligned (core/op_types.h), the sampler's group tokens never are (core/sampler.h),
 * and a misaligned handle is no handle of ours. So the tokens (a stop per group, in
 * group-count mode only) are looked for out of line, and the common stop pays one
 * test where it paid two compares.
 */
static __attribute__((noinline)) void stop_misaligned(void *handle) {
  if (ins_sampler_is_group(handle))
    ins_sampler_group_stop(handle);
  else
    ins_op_refuse(handle);
}

static inline __attribute__((always_inline)) void stop_untraced(void *handle) {
  if (__builtin_expect(ins_handle_odd(handle), 0))
    stop_misaligned(handle);
  else
    ins_op_event_stop(handle);
}

static __attribute__((noinline)) prof_result_t stop_traced(void *handle) {
  stop_untraced(ins_trace_stop(handle));
  return PROF_SUCCESS;
}

prof_result_t ins_adapter_stop(void *handle) {
  if (__builtin_expect(ins_tracing(), 0)) return stop_traced(handle);
  stop_untraced(handle);
  return PROF_SUCCESS;
}

static __attribute__((noinline)) prof_result_t record_traced(void *handle, int state,
                                                             union prof_state_args *args) {
  handle = ins_trace_record(handle, state, args);
  if (state == PROF_STATE_KERNEL_CH_STOP)
    ins_op_kernel_record_stop(handle, args ? args->kernelCh.pTimer : 0);
  return PROF_SUCCESS;
}

_Static_assert(PROF_SUCCESS == 0, "the tracker's record path returns 0: success");

prof_result_t ins_adapter_record(void *handle, int state, union prof_state_args *args) {
  if (__builtin_expect(ins_tracing(), 0)) return record_traced(handle, state, args);
  if (state == PROF_STATE_KERNEL_CH_STOP) /* NCCL always gives args: no select on the common path */
    return ins_op_kernel_record_stop(handle,
                                     __builtin_expect(args != NULL, 1) ? args->kernelCh.pTimer : 0);
  return PROF_SUCCESS;
}

prof_result_t ins_adapter_finalize(void *context) { return ins_lifecycle_comm_finalize(context); }

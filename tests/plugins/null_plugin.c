/* SPDX-License-Identifier: Apache-2.0 */
/*
 * null_plugin.c - a profiler plugin that asks for the events Inspector asks
 * for and does nothing with them.
 *
 * Owns: the floor for benchmarks. Driven by inspector-replay (or NCCL), it
 * costs only the callbacks themselves, so the difference between it and the
 * real plugin is the real plugin's own cost. It exports ncclProfiler_v4,
 * _v5 and _v6 (name "null"); init asks for Coll | P2p | KernelCh and hands
 * back a non-NULL context, every start hands back a non-NULL handle (so
 * NCCL keeps calling stop and record), and every callback returns 0.
 */
#include <stddef.h>
#include <stdint.h>

#include "nccl/profiler_abi.h"

#define NULL_PLUGIN_MASK (PROF_EV_COLL | PROF_EV_P2P | PROF_EV_KERNEL_CH)

#if defined(__GNUC__)
#define NULL_EXPORT __attribute__((visibility("default")))
#else
#define NULL_EXPORT
#endif

/* Distinct static objects: their addresses are the context and the handle. */
static char g_context;
static char g_handle;

static prof_result_t null_init_v4(void **context, int *eActivationMask, const char *commName, uint64_t commHash,
                                  int nNodes, int nranks, int rank, prof_logger_t logfn) {
  (void)commName, (void)commHash, (void)nNodes, (void)nranks, (void)rank, (void)logfn;
  *eActivationMask = NULL_PLUGIN_MASK;
  *context = &g_context;
  return PROF_SUCCESS;
}

static prof_result_t null_init_v5(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                                  int nNodes, int nranks, int rank, prof_logger_t logfn) {
  (void)commId, (void)commName, (void)nNodes, (void)nranks, (void)rank, (void)logfn;
  *eActivationMask = NULL_PLUGIN_MASK;
  *context = &g_context;
  return PROF_SUCCESS;
}

static prof_result_t null_start_v4(void *context, void **eHandle, struct prof_descr_v4 *eDescr) {
  (void)context, (void)eDescr;
  *eHandle = &g_handle;
  return PROF_SUCCESS;
}

static prof_result_t null_start_v5(void *context, void **eHandle, struct prof_descr_v5 *eDescr) {
  (void)context, (void)eDescr;
  *eHandle = &g_handle;
  return PROF_SUCCESS;
}

static prof_result_t null_start_v6(void *context, void **eHandle, struct prof_descr_v6 *eDescr) {
  (void)context, (void)eDescr;
  *eHandle = &g_handle;
  return PROF_SUCCESS;
}

static prof_result_t null_stop(void *eHandle) {
  (void)eHandle;
  return PROF_SUCCESS;
}

static prof_result_t null_record(void *eHandle, int eState, union prof_state_args *eStateArgs) {
  (void)eHandle, (void)eState, (void)eStateArgs;
  return PROF_SUCCESS;
}

static prof_result_t null_finalize(void *context) {
  (void)context;
  return PROF_SUCCESS;
}

NULL_EXPORT const struct prof_table_v4 ncclProfiler_v4 = {"null", null_init_v4, null_start_v4, null_stop,
                                                          null_record, null_finalize};
NULL_EXPORT const struct prof_table_v5 ncclProfiler_v5 = {"null", null_init_v5, null_start_v5, null_stop,
                                                          null_record, null_finalize};
NULL_EXPORT const struct prof_table_v6 ncclProfiler_v6 = {"null", null_init_v5, null_start_v6, null_stop,
                                                          null_record, null_finalize};

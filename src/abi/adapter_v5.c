/* SPDX-License-Identifier: Apache-2.0 */
/*
 * adapter_v5.c - the exported ncclProfiler_v5 table.
 * v5 (NCCL 2.28): 64-bit event type, API events, commId first in init.
 */
#include "abi/adapter.h"
#include "abi/lifecycle.h"

static prof_result_t init_v5(void **context, uint64_t comm_id, int *mask,
                               const char *comm_name, int nnodes, int nranks, int rank,
                               prof_logger_t logger) {
  return ins_lifecycle_comm_init(context, comm_id, mask, comm_name, nnodes, nranks, rank, logger, 5);
}

/* Trace mode: Coll and P2p name their group too (the trace records it). */
INS_ADAPTER_DEFINE_START(start_v5, struct prof_descr_v5, PROF_PARENT_GROUP_SLOT)

INS_EXPORT struct prof_table_v5 ncclProfiler_v5 = {
  .name = "Inspector",
  .init = init_v5,
  .startEvent = start_v5,
  .stopEvent = ins_adapter_stop,
  .recordEventState = ins_adapter_record,
  .finalize = ins_adapter_finalize,
};

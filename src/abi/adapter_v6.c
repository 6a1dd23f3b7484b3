/* SPDX-License-Identifier: Apache-2.0 */
/*
 * adapter_v6.c - the exported ncclProfiler_v6 table.
 * v6 (NCCL 2.29+): v5 plus copy-engine collective events (CeColl: core/op.h).
 */
#include "abi/adapter.h"
#include "abi/lifecycle.h"

static prof_result_t init_v6(void **context, uint64_t comm_id, int *mask,
                               const char *comm_name, int nnodes, int nranks, int rank,
                               prof_logger_t logger) {
  return ins_lifecycle_comm_init(context, comm_id, mask, comm_name, nnodes, nranks, rank, logger, 6);
}

/* Trace mode: Coll and P2p name their group too (the trace records it). */
INS_ADAPTER_DEFINE_START(start_v6, struct prof_descr_v6, PROF_PARENT_GROUP_SLOT)

INS_EXPORT struct prof_table_v6 ncclProfiler_v6 = {
  .name = "Inspector",
  .init = init_v6,
  .startEvent = start_v6,
  .stopEvent = ins_adapter_stop,
  .recordEventState = ins_adapter_record,
  .finalize = ins_adapter_finalize,
};

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * adapter_v4.c - the exported ncclProfiler_v4 table.
 * v4 (NCCL 2.26, 2.27): one-byte event type, and init takes the mask
 * before the communicator name and hash.
 */
#include "abi/adapter.h"
#include "abi/lifecycle.h"

static prof_result_t init_v4(void **context, int *mask, const char *comm_name,
                               uint64_t comm_hash, int nnodes, int nranks, int rank,
                               prof_logger_t logger) {
  return ins_lifecycle_comm_init(context, comm_hash, mask, comm_name, nnodes, nranks, rank, logger, 4);
}

/* v4 descriptors do not name a Coll's group. */
#define NO_GROUP(d) ((void)(d), (void **)0)
INS_ADAPTER_DEFINE_START(start_v4, struct prof_descr_v4, NO_GROUP)

INS_EXPORT struct prof_table_v4 ncclProfiler_v4 = {
  .name = "Inspector",
  .init = init_v4,
  .startEvent = start_v4,
  .stopEvent = ins_adapter_stop,
  .recordEventState = ins_adapter_record,
  .finalize = ins_adapter_finalize,
};

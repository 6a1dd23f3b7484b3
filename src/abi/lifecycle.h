/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin.h - process-wide lifecycle: configuration (once), the dump thread,
 * communicator init and finalize. The ABI adapters call these.
 */
#ifndef INS_PLUGIN_H
#define INS_PLUGIN_H

#include <stdint.h>

#include "nccl/profiler_abi.h"

prof_result_t ins_lifecycle_comm_init(void **context, uint64_t comm_id, int *activation_mask,
                              const char *comm_name, int nnodes, int nranks, int rank,
                              prof_logger_t logger, int abi_version);
prof_result_t ins_lifecycle_comm_finalize(void *context);

#endif

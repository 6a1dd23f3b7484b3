/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abi.h - driving one profiler ABI version (v4, v5 or v6).
 *
 * Owns: the version-neutral face the replay engine calls. Each
 * abi_vN.c builds its version's init arguments and event descriptor from a
 * trace line, exactly as NCCL of that version lays them out (descriptor
 * zeroed on the stack, alive only for the call), and calls the plugin's
 * table. stop/record/finalize have the same shape in every version and are
 * called straight through.
 */
#ifndef RP_ABI_H
#define RP_ABI_H

#include <stdbool.h>
#include <sys/types.h>

#include "nccl/profiler_abi.h"
#include "trace.h"

struct rp_abi {
  int ver;
  const char *plugin_name; /* the table's name field */
  const void *table;       /* struct prof_table_vN of this version */
  pid_t pid;               /* for ProxyOp descriptors: handles are valid in this process */
  /* init with this version's argument order; mask is the process-wide activation mask */
  prof_result_t (*init)(const struct rp_abi *a, const struct rp_ctx_info *c, void **context, int *mask);
  /* start: builds the descriptor of start line e; handles[slot] is the handle of each
     earlier event (NULL when not delivered), handles[0] is NULL */
  prof_result_t (*start)(const struct rp_abi *a, void *context, void **handle, const struct rp_event *e,
                         void *const *handles);
  prof_result_t (*stop)(void *eHandle);
  prof_result_t (*record)(void *eHandle, int eState, union prof_state_args *eStateArgs);
  prof_result_t (*finalize)(void *context);
};

/* True if version ver has event type `type` (v4: no API events; v4/v5: no CE events). */
bool rp_abi_has_type(int ver, uint32_t type);

/* The v5 descriptor of start line e (v6 extends it). */
void rp_fill_descr_v5(const struct rp_abi *a, struct prof_descr_v5 *d, const struct rp_event *e,
                      void *const *handles);

/* Fill a from the plugin's table of version ver. */
void rp_abi_bind_v4(struct rp_abi *a, const struct prof_table_v4 *t);
void rp_abi_bind_v5(struct rp_abi *a, const struct prof_table_v5 *t);
void rp_abi_bind_v6(struct rp_abi *a, const struct prof_table_v6 *t);

#endif /* RP_ABI_H */

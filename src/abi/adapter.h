/*
 * adapter.h - what the per-version adapters share: translating a
 * descriptor's union into a call on the tracker, and the callbacks whose
 * signature is the same in every ABI version.
 *
 * The coll, p2p and kernelCh members we read have the same leading layout
 * in v4, v5 and v6 (v5 only appends parentGroup), so one translation serves
 * all three; each adapter passes the address of its descriptor's union.
 */
#ifndef INS_ADAPTER_H
#define INS_ADAPTER_H

#include "abi/profiler_abi.h"
#include "core/op.h"
#include "core/sampler.h"
#include "abi/trace.h"

#define INS_EXPORT __attribute__((visibility("default")))

static inline void *ins_adapter_start(void *context, uint64_t type, void *parent,
                                      const void *u) {
  switch (type) {
    case PROF_EV_COLL: {
      const struct prof_coll_v4 *e = u;
      return ins_op_start(context, INS_KIND_COLL, e->func, e->datatype, e->count, e->seqNumber,
                          -1, e->nChannels, e->algo, e->proto);
    }
    case PROF_EV_P2P: {
      const struct prof_p2p_v4 *e = u;
      return ins_op_start(context, INS_KIND_P2P, e->func, e->datatype, e->count, 0, e->peer,
                          e->nChannels, NULL, NULL);
    }
    case PROF_EV_KERNEL_CH: {
      const struct prof_kernel_ch *e = u;
      return ins_kernel_start(context, parent, e->channelId, e->pTimer);
    }
    case PROF_EV_GROUP: /* a handle only when sampling counts groups */
      return ins_sampler_group_start(0);
    case PROF_EV_GROUP_API: /* v5+; a group captured into a CUDA graph stops sampling */
      if (__builtin_expect(ins_sampler_active && ((const struct prof_group_api *)u)->graphCaptured, 0))
        ins_sampler_graph_captured();
      return ins_sampler_group_start(1);
    default: /* other API, proxy, network and CE events: not ours, ignored */
      return NULL;
  }
}

/* The same with trace mode on: logs the callback, NCCL gets a wrapper. */
void *ins_adapter_start_traced(void *context, uint64_t type, void *parent, int rank,
                               const void *u, void *pgroup);

/* Every version's startEvent: trace mode or not, the tracker's handle (or a wrapper). */
static inline void *ins_adapter_dispatch(void *context, uint64_t type, void *parent, int rank,
                                         const void *u, void *pgroup) {
  return ins_tracing() ? ins_adapter_start_traced(context, type, parent, rank, u, pgroup)
                       : ins_adapter_start(context, type, parent, u);
}

prof_result_t ins_adapter_stop(void *handle);
prof_result_t ins_adapter_record(void *handle, int state, union prof_state_args *args);
prof_result_t ins_adapter_finalize(void *context);

#endif

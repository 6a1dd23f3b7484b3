/* SPDX-License-Identifier: Apache-2.0 */
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

#include "nccl/profiler_abi.h"
#include "core/op.h"
#include "core/sampler.h"
#include "trace/trace.h"

#define INS_EXPORT __attribute__((visibility("default")))

/* The one translation reads v5 and v6 Coll and P2p members through the v4 layouts. */
#define INS_SAME_FIELD(a, b, f) (offsetof(a, f) == offsetof(b, f) && sizeof(((a *)0)->f) == sizeof(((b *)0)->f))
_Static_assert(INS_SAME_FIELD(struct prof_coll_v4, struct prof_coll_v5, seqNumber) &&
                   INS_SAME_FIELD(struct prof_coll_v4, struct prof_coll_v5, func) &&
                   INS_SAME_FIELD(struct prof_coll_v4, struct prof_coll_v5, count) &&
                   INS_SAME_FIELD(struct prof_coll_v4, struct prof_coll_v5, datatype) &&
                   INS_SAME_FIELD(struct prof_coll_v4, struct prof_coll_v5, nChannels) &&
                   INS_SAME_FIELD(struct prof_coll_v4, struct prof_coll_v5, algo) &&
                   INS_SAME_FIELD(struct prof_coll_v4, struct prof_coll_v5, proto),
               "a v5/v6 Coll reads as a v4 Coll");
_Static_assert(INS_SAME_FIELD(struct prof_p2p_v4, struct prof_p2p_v5, func) &&
                   INS_SAME_FIELD(struct prof_p2p_v4, struct prof_p2p_v5, datatype) &&
                   INS_SAME_FIELD(struct prof_p2p_v4, struct prof_p2p_v5, count) &&
                   INS_SAME_FIELD(struct prof_p2p_v4, struct prof_p2p_v5, peer) &&
                   INS_SAME_FIELD(struct prof_p2p_v4, struct prof_p2p_v5, nChannels),
               "a v5/v6 P2p reads as a v4 P2p");

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
    case PROF_EV_CE_COLL: { /* v6 only: the union is the descriptor's ceColl */
      const struct prof_ce_coll *e = u;
      return ins_op_start_copy_engine(context, e->func, e->datatype, e->count, e->seqNumber);
    }
    case PROF_EV_KERNEL_CH: {
      const struct prof_kernel_ch *e = u;
      return ins_op_kernel_start(context, parent, e->channelId, e->pTimer);
    }
    case PROF_EV_GROUP: /* a handle only when sampling counts groups */
      ins_op_group_start(context);
      return ins_sampler_group_start(0);
    case PROF_EV_COLL_API: /* v5+: the issue order (core/judge.h) */
      ins_op_api_call(context, 1, ((const struct prof_coll_api *)u)->func);
      return NULL;
    case PROF_EV_P2P_API:
      ins_op_api_call(context, 0, NULL);
      return NULL;
    case PROF_EV_GROUP_API: /* v5+; a group captured into a CUDA graph stops sampling */
      if (__builtin_expect(ins_sampler_active && ((const struct prof_group_api *)u)->graphCaptured, 0))
        ins_sampler_graph_captured();
      return ins_sampler_group_start(1);
    default: /* other API, proxy, network and CE sync/batch events: not ours, ignored */
      return NULL;
  }
}

/* The same with trace mode on: logs the callback, NCCL gets a wrapper. */
void *ins_adapter_start_traced(void *context, uint64_t type, void *parent, int rank,
                               const void *u, void *pgroup);

/*
 * Every version's startEvent, defined once for each descriptor type: the tracker's
 * handle, or with trace mode on (rare) a wrapper made out of line, so that the common
 * path stays small. PGROUP(d): where the descriptor names a Coll's or P2p's group (v5
 * and v6: PROF_PARENT_GROUP_SLOT), or a null void ** (v4 has none).
 */
#define INS_ADAPTER_DEFINE_START(fn, descr_t, PGROUP)                                      \
  static __attribute__((noinline)) void *fn##_traced(void *context, descr_t *d) {          \
    void **pgroup = PGROUP(d);                                                              \
    return ins_adapter_start_traced(context, d->type, d->parentObj, d->rank, &d->coll,      \
                                    pgroup ? *pgroup : NULL);                               \
  }                                                                                         \
  static prof_result_t fn(void *context, void **handle, descr_t *d) {                      \
    void *h = NULL;                                                                         \
    if (__builtin_expect(d && ins_tracing(), 0))                                            \
      h = fn##_traced(context, d);                                                          \
    else if (d)                                                                             \
      h = ins_adapter_start(context, d->type, d->parentObj, &d->coll);                      \
    if (handle) *handle = h;                                                                \
    return PROF_SUCCESS;                                                                    \
  }

prof_result_t ins_adapter_stop(void *handle);
prof_result_t ins_adapter_record(void *handle, int state, union prof_state_args *args);
prof_result_t ins_adapter_finalize(void *context);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracefmt.c - trace line formatting (see tracefmt.h).
 */
#include "trace/tracefmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl/profiler_abi.h"
#include "core/utf8.h"

size_t ins_tracefmt_str(char *out, size_t cap, const char *s) {
  return cap ? ins_utf8_escape(out, cap, s, ins_utf8_json_escape, 0) : 0;
}

/* NCCL's strings as JSON string content, in rotating buffers (one line uses at most 5). */
struct strs { char v[5][256]; int next; };
static const char *s(struct strs *st, const char *p) {
  char *out = st->v[st->next++ % 5];
  ins_tracefmt_str(out, sizeof st->v[0], p);
  return out;
}

int ins_tracefmt_prefix_at(char *buf, size_t cap, uint64_t t_ns, long tid) {
  return snprintf(buf, cap, "{\"t\":%" PRIu64 ",\"tid\":%ld,", t_ns, tid);
}

int ins_tracefmt_prefix(char *buf, size_t cap) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ins_tracefmt_prefix_at(buf, cap,
                                (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec,
                                (long)syscall(SYS_gettid));
}

int ins_tracefmt_start(char *buf, size_t cap, int ctx, uint64_t id, uint64_t type,
                       uint64_t parent_id, int rank, const void *u, uint64_t pgroup_id) {
  int n = snprintf(buf, cap, "\"cb\":\"start\",\"ctx\":%d,\"id\":%" PRIu64 ",\"type\":%" PRIu64
                   ",\"parent\":%" PRIu64 ",\"rank\":%d", ctx, id, type, parent_id, rank);
  if (n < 0 || (size_t)n >= cap) return n;
  buf += n, cap -= (size_t)n;
  int m = 0;
  struct strs st = {.next = 0};
  switch (type) {
  case PROF_EV_COLL: {
    const struct prof_coll_v4 *e = u;
    m = snprintf(buf, cap, ",\"seq\":%" PRIu64 ",\"func\":\"%s\",\"count\":%zu,\"root\":%d,"
                 "\"dtype\":\"%s\",\"nch\":%u,\"nwarps\":%u,\"algo\":\"%s\",\"proto\":\"%s\","
                 "\"pgroup\":%" PRIu64, e->seqNumber, s(&st, e->func), e->count, e->root,
                 s(&st, e->datatype), e->nChannels, e->nWarps, s(&st, e->algo), s(&st, e->proto), pgroup_id);
    break;
  }
  case PROF_EV_P2P: {
    const struct prof_p2p_v4 *e = u;
    m = snprintf(buf, cap, ",\"func\":\"%s\",\"dtype\":\"%s\",\"count\":%zu,\"peer\":%d,"
                 "\"nch\":%u,\"pgroup\":%" PRIu64, s(&st, e->func), s(&st, e->datatype), e->count, e->peer,
                 e->nChannels, pgroup_id);
    break;
  }
  case PROF_EV_KERNEL_CH: {
    const struct prof_kernel_ch *e = u;
    m = snprintf(buf, cap, ",\"ch\":%u,\"ptimer\":%" PRIu64, e->channelId, e->pTimer);
    break;
  }
  case PROF_EV_GROUP_API: {
    const struct prof_group_api *e = u;
    m = snprintf(buf, cap, ",\"graph\":%d,\"depth\":%d", e->graphCaptured, e->groupDepth);
    break;
  }
  case PROF_EV_COLL_API: {
    const struct prof_coll_api *e = u;
    m = snprintf(buf, cap, ",\"func\":\"%s\",\"count\":%zu,\"dtype\":\"%s\",\"root\":%d,\"graph\":%d",
                 s(&st, e->func), e->count, s(&st, e->datatype), e->root, e->graphCaptured);
    break;
  }
  case PROF_EV_P2P_API: {
    const struct prof_p2p_api *e = u;
    m = snprintf(buf, cap, ",\"func\":\"%s\",\"count\":%zu,\"dtype\":\"%s\",\"graph\":%d",
                 s(&st, e->func), e->count, s(&st, e->datatype), e->graphCaptured);
    break;
  }
  case PROF_EV_PROXY_OP: {
    const struct prof_proxy_op *e = u;
    m = snprintf(buf, cap, ",\"pid\":%d,\"ch\":%u,\"peer\":%d,\"nsteps\":%d,\"chunk\":%d,\"send\":%d",
                 (int)e->pid, e->channelId, e->peer, e->nSteps, e->chunkSize, e->isSend);
    break;
  }
  case PROF_EV_PROXY_STEP: {
    const struct prof_proxy_step *e = u;
    m = snprintf(buf, cap, ",\"step\":%d", e->step);
    break;
  }
  case PROF_EV_CE_COLL: {
    const struct prof_ce_coll *e = u;
    m = snprintf(buf, cap, ",\"seq\":%" PRIu64 ",\"func\":\"%s\",\"count\":%zu,\"root\":%d,"
                 "\"dtype\":\"%s\",\"sync\":\"%s\",\"ceseq\":%u", e->seqNumber, s(&st, e->func),
                 e->count, e->root, s(&st, e->datatype), s(&st, e->syncStrategy), e->ceSeqNum);
    break;
  }
  case PROF_EV_CE_SYNC: {
    const struct prof_ce_sync *e = u;
    m = snprintf(buf, cap, ",\"complete\":%d,\"nranks\":%d", e->isComplete, e->nRanks);
    break;
  }
  case PROF_EV_CE_BATCH: {
    const struct prof_ce_batch *e = u;
    m = snprintf(buf, cap, ",\"nops\":%d,\"bytes\":%zu", e->numOps, e->totalBytes);
    break;
  }
  default:
    break;
  }
  return m < 0 ? m : n + m;
}

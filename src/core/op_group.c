/* SPDX-License-Identifier: Apache-2.0 */
/*
 * op_group.c - the application's groups and API calls as the tracker sees them (op.h): a
 * group begun (its first API call, or its Group event), the collectives it called that NCCL
 * never reported counted when it closes, the calls that can make work counted for the issue
 * order (core/judge.h). On the callbacks' path: no lock, no allocation, relaxed stores of
 * fields only the communicator's application thread writes (op_fields.h).
 */
#include "core/comm.h"
#include "core/names.h"
#include "core/op.h"
#include "core/op_fields.h"
#include "core/sampler.h"

void ins_op_group_start(struct ins_comm *c) {
  if (!c) return;
  STORE(c->group_first_op, LOAD(c->ops_seq));
  STORE(c->group_seq, LOAD(c->group_seq) + 1);
}

void ins_op_close_group(struct ins_comm *c) {
  if (!c) return;
  for (uint32_t m = c->group_funcs; m; m &= m - 1) {
    int f = __builtin_ctz(m);
    if (c->group_calls[f] > c->group_reports[f] && !ins_sampler_active)
      STORE(c->unreported[f], LOAD(c->unreported[f]) + (c->group_calls[f] - c->group_reports[f]));
    c->group_calls[f] = c->group_reports[f] = 0;
  }
  c->group_funcs = 0;
}

void ins_op_api_call(struct ins_comm *c, int coll, const char *func) {
  if (!c) return;
  /* The first API call after an op: a new application group (its Group event comes
   * later, at ncclGroupEnd, after all of the group's API calls). */
  if (!LOAD(c->in_api_calls)) {
    STORE(c->in_api_calls, true);
    STORE(c->group_api_base, LOAD(c->api_seq));
    ins_op_group_start(c);
    ins_op_close_group(c); /* the last group's reports are all in */
  }
  if (!LOAD(c->api_seen)) STORE(c->api_seen, true);
  /* api_seq counts the calls that can make work: a collective's call (NCCL may run it
   * and report no Coll event: comm.h), a P2P call only through its P2p event (op_start) */
  if (coll) {
    STORE(c->api_seq, LOAD(c->api_seq) + 1);
    enum ins_func fid = ins_func_id(func);
    c->group_calls[fid]++;
    c->group_funcs |= 1u << fid;
  }
}

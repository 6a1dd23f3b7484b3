/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schedule.h - the cross-thread orderings kept by --threads.
 *
 * Owns: splitting a trace into one line list per recorded thread and, for
 * each line, the few waits ("thread T has processed its line P") that keep
 * the replay causally valid when the threads run concurrently:
 *  - a line that names an event (stop/record of it, a start whose parent or
 *    group it is) waits for that event's start line;
 *  - a finalize waits for every earlier line of its ctx;
 *  - an init is a barrier: it waits for every earlier line, and every later
 *    line waits for it. NCCL creates communicators outside the traffic of
 *    others only loosely, but the plugin's init writes the process-wide
 *    activation mask with a plain store that the other threads read, so the
 *    replay orders it (also what makes the run TSan-clean).
 *  - a communicator's lines keep their recorded order across threads: the
 *    plugin judges an op's timestamps by how many ops were issued before it
 *    completed and which had completed before it was issued (core/judge.h), so a
 *    replay that let the application thread run ahead of the proxy thread would
 *    decide otherwise than NCCL's run did. Communicators still run concurrently,
 *    and so do the plugin's own threads. --threads-free (rp_schedule_free) drops
 *    this rule: any interleaving the other rules allow, for races within a
 *    communicator (its records may then differ from the recording's).
 * Every wait points at an earlier line of the file, so the replay cannot
 * deadlock: the earliest unprocessed line can always run.
 */
#ifndef RP_SCHEDULE_H
#define RP_SCHEDULE_H

#include "trace.h"

#include <stdbool.h>

/* --threads-free: no per-communicator order (set before the first build). */
extern bool rp_schedule_free;

/* Fills t->tlines, t->tnlines, t->dep and each line's dep_off/dep_n (again after new lines). */
void rp_schedule_build(struct rp_trace *t);

#endif /* RP_SCHEDULE_H */

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
 * Every wait points at an earlier line of the file, so the replay cannot
 * deadlock: the earliest unprocessed line can always run.
 */
#ifndef RP_SCHEDULE_H
#define RP_SCHEDULE_H

#include "trace.h"

/* Fills t->tlines, t->tnlines, t->dep and each line's dep_off/dep_n (again after new lines). */
void rp_schedule_build(struct rp_trace *t);

#endif /* RP_SCHEDULE_H */

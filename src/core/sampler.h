/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler.h - sampled kernel timing (NCCL_INSPECTOR_SAMPLE_*): which
 * application groups NCCL times, chosen by writing NCCL's activation mask.
 *
 * NCCL keeps the mask word whose address every init receives (one word per
 * process), re-reads it when an application group starts and tags that
 * group's ops with what it read. The ABI does not promise one word: the
 * sampler writes every distinct word it was given, each until the finalize of
 * the last communicator given it (ins_sampler_detach). Ops tagged without
 * KernelCh get no kernel instrumentation at all, so between sampled windows
 * the job runs at no-plugin speed. Two ways to choose the timed groups:
 *  - time windows: a thread writes the mask at wall-clock boundaries (the
 *    first W ms of every P ms, counted from the Unix epoch, so that every
 *    rank of a job on clock-synchronised hosts samples the same windows);
 *  - group count: one group in N (or one run of B consecutive groups in N
 *    runs), counted at group ends (the
 *    stop of a GroupApi event, or of a Group event where the ABI has no API
 *    events), which is where the next group's mask is decided. No thread.
 * With sampling off (the default) the mask is written once per init and
 * every op is timed.
 *
 * CUDA graphs: NCCL 2.28.9 tags a captured op with the mask read at capture,
 * but starts its Coll events at each launch from the mask of that moment; a
 * graph captured while sampling was off then produced Coll events without
 * kernel events, and the job hung in teardown (docs/VALIDATION.md). So the
 * first group captured into a graph (GroupApi.graphCaptured, ABI v5+) stops
 * sampling for good, freezing the mask at the value NCCL read for that group:
 * every later op is timed if it was on, none if it was off, with one warning.
 */
#ifndef INS_SAMPLER_H
#define INS_SAMPLER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core/config.h" /* struct ins_config, enum ins_sample_mode: the sampler reads the settings */

/* Process init: remember the configuration and, in time mode, start the thread.
 * full_mask: what the plugin asks for when an op is to be timed. */
void ins_sampler_start(const struct ins_config *cfg, int full_mask, int abi_version);

/* Communicator init: NCCL's mask word; writes the mask wanted now. Returns what the
 * communicator's finalize passes to ins_sampler_detach: the word, if the sampler keeps
 * writing it, else NULL (sampling off; or MAX_WORDS other words live: then this one is
 * set to time everything, once). */
int *ins_sampler_attach(int *mask_word);
/* Communicator finalize (before it returns: its host may free the word then): one user
 * less of the word; at its last, the sampler stops writing it, and when this returns no
 * thread of the plugin is writing it or will. NULL: nothing. */
void ins_sampler_detach(int *kept);

/* Group-count mode only: the handles startEvent returns for Group and
 * GroupApi events, so that NCCL calls stopEvent on them. [1] Group, [2] GroupApi;
 * the array is 64-byte aligned, so a token never is, and a stopEvent tells a token from
 * the tracker's handles, which always are (core/op_types.h), by that alone
 * (abi/adapter.c). */
extern _Alignas(64) char ins_sampler_group_token[3];
extern bool ins_sampler_counting;        /* group-count mode is on (set before any init returns) */
extern bool ins_sampler_active;          /* any sampling mode is on (likewise) */

/* A group is being captured into a CUDA graph: keep the mask NCCL read for it from now on. */
void ins_sampler_graph_captured(void);

void ins_sampler_saw_group_api(void);
static inline void *ins_sampler_group_start(int api) {
  if (!ins_sampler_counting) return (void *)0;
  if (api) ins_sampler_saw_group_api();
  return &ins_sampler_group_token[1 + api];
}
static inline bool ins_sampler_is_group(const void *handle) {
  return handle == &ins_sampler_group_token[1] || handle == &ins_sampler_group_token[2];
}
/* stopEvent on a group token: counts a group end and sets the next group's mask. */
void ins_sampler_group_stop(const void *handle);

/* What the output says about sampling. */
struct ins_sample_stats {
  int mode;                     /* enum ins_sample_mode */
  long long window_ms, period_ms, every, burst;
  uint64_t groups, groups_timed; /* group-count mode */
  bool graph_capture;            /* sampling stopped by a CUDA graph capture */
  double covered;               /* share of wall time (time) or of groups (count) timed */
};
void ins_sampler_stats(struct ins_sample_stats *s);

/* Process exit: stop the thread. */
void ins_sampler_shutdown(void);

/* fork() (called by abi/lifecycle.c's handlers): the prepare takes the time thread's
 * lock (waiting until `until` at most), the parent releases it, the child makes it
 * anew; the child's first own communicator restarts the time thread (fork_restart). */
void ins_sampler_fork_prepare(const struct timespec *until);
void ins_sampler_fork_parent(void);
void ins_sampler_fork_child(void);
void ins_sampler_fork_restart(void);

/* ---- time windows: the decision and the clock, exposed for unit tests ---- */

/* Whether wall-clock time now_ns (ns since the Unix epoch) lies in a window,
 * the first window_ns of every period_ns counted from the epoch (so that the
 * boundaries are multiples of period_ns, the same on every rank, whenever
 * each process started), and in *next_ns when that next changes. Pure: the
 * sampling thread's only decision. Needs window_ns < period_ns. */
bool ins_sample_window_at(uint64_t now_ns, uint64_t window_ns, uint64_t period_ns,
                          uint64_t *next_ns);

/* The time-window thread's clock (also read by ins_sampler_stats): now()
 * gives ns since the Unix epoch (default CLOCK_REALTIME); wait() blocks on
 * cond, with mutex held and released meanwhile as pthread_cond_timedwait
 * does, until now() reaches deadline_ns (returns ETIMEDOUT) or cond is
 * signalled (returns 0). A unit test installs a fake one before
 * ins_sampler_start to run the thread through chosen instants; never set
 * while the thread runs. NULL restores the real clock. The group-end path
 * never reads it. */
struct ins_sampler_clock {
  uint64_t (*now)(void);
  int (*wait)(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t deadline_ns);
};
void ins_sampler_set_clock(const struct ins_sampler_clock *clock); /* kept, not copied */

#endif

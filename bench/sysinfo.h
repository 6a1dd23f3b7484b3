/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sysinfo.h - what the benchmark reads from /proc: resident memory, a
 * thread's CPU time, and which thread the plugin started.
 */
#ifndef BP_SYSINFO_H
#define BP_SYSINFO_H

#include <stdint.h>
#include <sys/types.h>

/* Resident set size of this process, bytes. */
uint64_t bp_rss_bytes(void);

/* CPU time of thread tid of this process, ns (schedstat); 0 if unreadable. */
uint64_t bp_thread_cpu_ns(pid_t tid);

/* The threads of this process, at most max, into tids; returns how many. */
int bp_threads(pid_t *tids, int max);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procs.h - --procs: one child process per trace file or per rank.
 *
 * Owns: fork, and waiting for every child. A child runs like a separate
 * process of a real job (its own plugin instance, its own output file) and
 * ends with exit(), not _exit(), so that the plugin's exit-time work runs.
 * At most max_running children are alive at once (--max-procs): a 1,024-rank
 * job on a 2-core machine would otherwise have 1,024 plugins (each with its
 * dump and writer threads) contending at once, with nothing to gain: the
 * children never wait for each other.
 */
#ifndef RP_PROCS_H
#define RP_PROCS_H

/* The work of child i; its return value is the child's exit status. */
typedef int (*rp_child_fn)(void *arg, int i);

/* Runs n children, 0..n-1 started in order, at most max_running of them alive at once
   (<= 0: 2 x the online CPUs). 0 if all exited with 0, else 1: a child failed or was killed,
   or a fork failed (then no further child is started; those started are waited for). */
int rp_run_procs(int n, int max_running, rp_child_fn fn, void *arg);

#endif /* RP_PROCS_H */

/*
 * procs.h - --procs: one child process per trace file or per rank.
 *
 * Owns: fork, and waiting for every child. A child runs like a separate
 * process of a real job (its own plugin instance, its own output file) and
 * ends with exit(), not _exit(), so that the plugin's exit-time work runs.
 */
#ifndef RP_PROCS_H
#define RP_PROCS_H

/* The work of child i; its return value is the child's exit status. */
typedef int (*rp_child_fn)(void *arg, int i);

/* Runs n children concurrently; 0 if all exited with 0, else 1. */
int rp_run_procs(int n, rp_child_fn fn, void *arg);

#endif /* RP_PROCS_H */

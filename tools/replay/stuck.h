/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stuck.h - the stuck point of a synthetic job that hangs (--hang-rank, synth.h): what a
 * process does once it has issued everything it will issue.
 *
 * Why: a hung job's processes keep running; what Inspector says about the hang (its dump
 * thread's lines, its textfiles) must be there while they do, so a test copies the logs then.
 * To know when, it waits for the ready files, not for wall time: each process, at its stuck
 * point, writes DIR/rank-R for each rank R it drives (--hang-ready-dir DIR; the file holds the
 * process's pid and a newline, and appears whole: written beside, then renamed). Then it
 * holds: sleeps --hang-hold-s seconds with the plugin loaded and its threads running, and only
 * then finalizes (or not, --no-finalize) and exits. A quiet job (no --hang-rank) given
 * --hang-hold-s or --hang-ready-dir reaches its stuck point once all its ops completed: the
 * control, in which nothing is stuck.
 *
 * A test that has what it needs ends the hold at once with SIGUSR1 (to the pids of the ready
 * files, or the replay's whole process group): rp_stuck_prepare blocks the signal in the
 * process before any thread exists, so every thread, the plugin's too, inherits the block and
 * the hold takes the signal with sigtimedwait, whichever thread it was sent to. A SIGUSR1 that
 * comes before the hold (or to the --procs parent, which never holds) stays pending and is
 * taken by the hold (or by no one): it never kills the process.
 *
 * Not here: which ops hang and what each rank issues (synth.c), when the stuck point comes
 * (syn_stream's stuck callback, main.c).
 */
#ifndef RP_STUCK_H
#define RP_STUCK_H

/* Blocks SIGUSR1 in the calling thread (main, before the plugin is loaded or any thread made). */
void rp_stuck_prepare(void);

/* The parent, before any child: DIR is a directory the ready files can be written in.
   0, or -1 with a message on stderr (a runtime error). */
int rp_stuck_check_dir(const char *dir);

/*
 * The stuck point: DIR/rank-R for each R in [r0, r1) when DIR is not NULL, then the hold:
 * hold_s seconds of CLOCK_MONOTONIC, or less if SIGUSR1 comes. 0, or -1 when a ready file
 * could not be written (said on stderr; the hold is kept all the same, the job's other
 * processes are holding too).
 */
int rp_stuck_hold(const char *dir, int r0, int r1, double hold_s);

#endif /* RP_STUCK_H */

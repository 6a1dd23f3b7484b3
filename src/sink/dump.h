/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dump.h - the dump thread and the drains that move records from the
 * communicators' rings to the sinks (sink.h).
 *
 * Three ways records leave a ring: the dump thread's passes (on its
 * interval, or woken early by a filling ring, or by each record when the
 * interval is 0); a communicator's finalize (it drains its own rings
 * before returning); and process exit (everything that is left).
 */
#ifndef INS_DUMP_H
#define INS_DUMP_H

#include <time.h>

struct ins_comm;
struct ins_config;

/* Start the dump thread (if enabled); called once, from the first init. */
void ins_dump_start(const struct ins_config *cfg);
/* A new context, on its init thread, before it is registered: its consumer state and
 * each sink's (which may ask the GPU runtime about the current device). -1: out of memory. */
int ins_dump_attach(struct ins_comm *c);
/* Write every record and the stats of a context being finalized, then detach it from the
 * sinks. It waits for no dump pass, only for a drain of this context in progress (bounded:
 * dump.c); a pass that still holds the context afterwards passes it by. */
void ins_dump_comm_final(struct ins_comm *c);
/* Drain one context now, as the dump thread would (tests; a context that stays live). */
void ins_dump_comm_drain(struct ins_comm *c);
/* Process exit / library unload: stop the thread, drain every live context. */
void ins_dump_shutdown(void);
/* Library unload or process exit, after ins_dump_shutdown: what the sinks keep past it
 * (sink.h release: the JSON log file closed), the GPU-runtime lookup and the registry's
 * arrays freed, so that a plugin NCCL loads and unloads again leaks nothing. */
void ins_dump_release(void);

/* fork() (pthread_atfork, registered by abi/lifecycle.c at process init): prepare waits,
 * until `until` at most, until no plugin thread holds a lock of the dump layer or of a
 * sink; the child starts clean (inherited contexts foreign: comm.h; the threads
 * restarted by its first own context). dump.c says how. */
#define INS_FORK_WAIT_MS 1000 /* how long a fork waits for the plugin's threads, at most */
void ins_dump_fork_prepare(const struct timespec *until);
void ins_dump_fork_parent(void);
void ins_dump_fork_child(void);

/* Tests only (tests/unit/plugin/test_fork_locks.c, test_comm_registry.c, test_hang.c): called, when
 * set, on the dump thread at the start of each pass (inside the fork's gate: c NULL), on a
 * draining thread after each record it took out of c's rings (c's drain_lock held), in the
 * fork's prepare before it waits (c NULL), and on the dump thread at the end of each check
 * of hang detection (sink/hang.h; inside the gate, c NULL). Set before the first init. */
enum ins_dump_hook_at { INS_DUMP_HOOK_PASS, INS_DUMP_HOOK_DRAIN, INS_DUMP_HOOK_FORK_PREPARE,
                        INS_DUMP_HOOK_HANG };
extern void (*ins_dump_test_hook)(enum ins_dump_hook_at at, const struct ins_comm *c);

#endif

/*
 * wqueue.h - the dump thread's writes, handed to a writer thread.
 *
 * Formatting and writing used to share the dump thread: while a write to the
 * log file stalled (a slow file system, or tmpfs allocating fresh memory), no
 * ring was drained, and a fast job's rings filled. With the queue, the dump
 * thread hands each full batch of lines to the writer thread and goes back to
 * the rings; the batches are written in the order they were pushed. At most
 * INS_WQUEUE_DEPTH batches wait (about 32 MiB of text, 50,000 records:
 * 100 ms at 500,000 records/s); beyond that the dump thread waits too, and the
 * rings absorb the rest, as before. The depth is what tmpfs in a VM needed:
 * at 500,000 records/s single 256 KiB writes took up to 7.5 ms, the queue
 * reached 45 batches; with 32, one 10 s run in 8 dropped records
 * (docs/BENCHMARKS.md). The queue costs memory only while the writer is
 * behind: buffers are allocated as batches are queued, and at most
 * INS_WQUEUE_SPARES written ones are kept for reuse.
 *
 * Order: a line written by another thread (a communicator's finalize, exit)
 * must come after the lines of its context already queued, so such writers
 * call ins_wqueue_sync() first.
 *
 * fork(): the writer thread does not survive it, and what it had queued is the
 * parent's to write; a child starts its own thread and queue (sink/dump.c says
 * when).
 */
#ifndef INS_WQUEUE_H
#define INS_WQUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "io/buf.h"

#define INS_WQUEUE_DEPTH 128
#define INS_WQUEUE_SPARES 8

/* Start the writer thread; false (after a warning) if it cannot start. */
bool ins_wqueue_start(void);
/* Queue b's lines (`records` records among them) and give b an empty buffer. */
void ins_wqueue_push(struct ins_buf *b, uint64_t records);
/* Return once every batch queued before the call has been written (those queued
 * meanwhile are not waited for: a writer behind a busy dump thread would never be
 * idle). */
void ins_wqueue_sync(void);
/* Tests only (tests/unit/test_wqueue_sync.c): called, when set, in ins_wqueue_sync once
 * it knows what it waits for, before it waits (the queue's lock held). */
extern void (*ins_wqueue_test_hook)(void);
/* Write what is queued, stop the thread, free the buffers. */
void ins_wqueue_stop(void);

/* fork(), in the parent before it: the queue's lock, and no batch in writing (the writer
 * thread then holds the log file's lock, writer.c), waited for until `deadline`
 * (CLOCK_REALTIME). 0; -1 if a batch was still in writing then. The lock is held either
 * way, until ins_wqueue_fork_parent / ins_wqueue_fork_child. */
struct timespec;
int ins_wqueue_fork_prepare(const struct timespec *deadline);
void ins_wqueue_fork_parent(void);
/* In the child: no writer thread; the batches queued or in writing are the parent's,
 * freed at the child's ins_wqueue_start. `locked`: ins_wqueue_fork_prepare ran (else the
 * lock is made anew: its holder does not exist here). */
void ins_wqueue_fork_child(bool locked);

#endif

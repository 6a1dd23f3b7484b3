/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wqueue.h - the dump thread's writes, handed to a writer thread.
 *
 * Formatting and writing used to share the dump thread: while a write to the
 * log file stalled (a slow file system, or tmpfs allocating fresh memory), no
 * ring was drained, and a fast job's rings filled. With the queue, the dump
 * thread hands each full batch of lines to the writer thread and goes back to
 * the rings; the batches are written in the order they were pushed (but for
 * those a finalize has written ahead of the others: below). At most
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
 * must come after the lines of its context already queued, and be in the file
 * when the finalize returns. Every batch holds
 * one communicator's lines (the dump thread hands them on per communicator:
 * sink/dump.c), tagged with their owner, so such a writer takes its
 * communicator's batches out of the queue and has them written, then its own,
 * next (ins_wqueue_write_now): it waits for the batch in writing, whoever's
 * (the file takes one at a time: json/writer.c), never for other
 * communicators' batches queued. The file idle, it writes them itself, the
 * writer thread waiting meanwhile; else it hands them to the writer thread,
 * first in line (writing them itself, it would lose the file's lock, batch
 * after batch, to a writer thread that always has one more: 0.4 s with two
 * communicators completing 2 million ops/s between them).
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
/* Queue b's lines (`records` records among them), every one of them `owner`'s (an
 * opaque tag: the JSON sink's state of their communicator), and give b an empty buffer. */
void ins_wqueue_push(struct ins_buf *b, uint64_t records, const void *owner);
/* owner's last lines (a finalize's, or exit's: `records` records among them), written
 * before every batch still queued: first owner's batches still queued (taken out of the
 * queue, in order), then these. Returns once they are in the file: it waits for the
 * batch in writing, whoever's (the file takes one at a time), never for other owners'
 * batches queued. Written on the calling thread when the file is idle (or there is no
 * writer thread), else by the writer thread, next. */
void ins_wqueue_write_now(const void *owner, const char *data, size_t len, uint64_t records);
/* Tests only (tests/unit/sink/json/test_wqueue_now.c): called, when set, in ins_wqueue_write_now
 * once its lines are next in line, before it waits (the queue's lock held). */
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

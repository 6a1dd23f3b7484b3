/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resolve.h - bounded network waits: the clock and deadline every step looks
 * at, a wait on a descriptor that stop can cut, a name lookup that a resolver
 * which never answers cannot hold past the deadline, and a non-blocking connect.
 * Owns time and sockets up to a connected descriptor; what is written over it
 * is the client's (http1.c), and libcurl does its own lookups (curl.c uses only
 * the clock and deadlines from here).
 */
#ifndef INS_NET_RESOLVE_H
#define INS_NET_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/net.h"

/* The network code's clock (CLOCK_MONOTONIC ns); a test may put its own in (the hooks). */
uint64_t ins_net_now_ns(void);
/* The deadline in force: deadline, or stop's when that is sooner; *stopping: stop was called. */
uint64_t ins_net_deadline(const struct ins_net_cut *cut, uint64_t deadline, bool *stopping);
/* Milliseconds from now to deadline (> now), rounded up: never a busy 0 ms poll. */
int ins_net_ms_until(uint64_t deadline, uint64_t now);
/* Waits until fd has `ev`: 1 ready (or in error: the caller's read/write says which),
 * 0 the deadline (or stop's) passed, -1 poll failed. */
int ins_net_wait_fd(int fd, short ev, const struct ins_net_cut *cut, uint64_t deadline);
/* The deadline (or stop's) has passed. */
bool ins_net_past_deadline(const struct ins_net_cut *cut, uint64_t deadline);

/* A name lookup that outlived its request's deadline, kept for the next request. */
struct ins_net_lookup;

/* A connected non-blocking, close-on-exec TCP socket to host:port (a literal is never
 * looked up), or -1 with the reason in why and *timed_out set when the deadline (or
 * stop's) passed. *dns holds a lookup still in flight between calls: the next call
 * waits for it instead of starting another (NULL when none). */
int ins_net_connect(struct ins_net_lookup **dns, const char *host, const char *port,
                    const struct ins_net_cut *cut, uint64_t deadline, char *why, size_t whylen,
                    bool *timed_out);
/* Cancels and frees a lookup in flight (or leaves it to libc if it cannot be cancelled). */
void ins_net_lookup_free(struct ins_net_lookup **dns);

/* How names are looked up in this process: "getaddrinfo_a (libc)", "getaddrinfo_a
 * (libanl.so.1)" (both bounded by the request's deadline), or "getaddrinfo" (no
 * asynchronous lookup found: unbounded). Decided once, at the first lookup or call. */
const char *ins_net_lookup_kind(void);

#endif

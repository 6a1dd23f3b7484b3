/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net.h - what every file of src/net/ shares: the cut (how a stopping caller
 * shortens every wait), the test hooks of the network code, and the one text
 * helper they all use.
 *
 * src/net/ is the plugin's network floor: an endpoint URL, HTTP dates, the
 * HTTP/1.1 response parser, bounded name lookup / connect / waits, the plain
 * HTTP/1.1 client, the libcurl binding, and the connection that picks one of
 * the two clients. It knows no telemetry protocol: what an answer means (OTLP's
 * retry rules, its partial success) is the caller's (src/sink/otlp/otlp_rules.c). It
 * includes nothing from src/sink/, from src/core/ only the clock and the redaction rule
 * (core/redact.h: what a message may show of a host), and from src/io/
 * (the floor below) the library loader that brings libcurl in (io/dynlib.h).
 * tests/test_layers.py holds these rules.
 */
#ifndef INS_NET_H
#define INS_NET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef INSPECTOR_VERSION
#define INSPECTOR_VERSION "0"
#endif
#define INS_NET_USER_AGENT "nccl-inspector/" INSPECTOR_VERSION

/* Cutting waits short when the caller stops: while *stop_ns is 0 every wait also
 * watches wake_fd (written once by stop); once it is set, no wait goes past it. */
struct ins_net_cut {
  int wake_fd;
  const _Atomic uint64_t *stop_ns; /* CLOCK_MONOTONIC deadline of stop, 0 until then */
};

/* Test hooks: read when a connection is made or a request runs, never changed while
 * one runs. Zero values mean the real thing. Defined in resolve.c. */
struct ins_net_test_hooks {
  const char *curl_lib;       /* a name dlopen cannot find: the missing-libcurl path */
  const char *ca_file;        /* CURLOPT_CAINFO: a test collector's self-signed certificate */
  uint64_t (*now_ns)(void);   /* the network code's clock (CLOCK_MONOTONIC ns): every
                               * deadline it checks reads it */
  const char *anl_lib;        /* the asynchronous lookup from this library only (not libc's):
                               * a name dlopen cannot find is the plain-getaddrinfo fallback */
};
extern struct ins_net_test_hooks ins_net_test_hooks;

/* n bytes of s into out as a string, cut to cap - 1 bytes (nothing when cap is 0). */
static inline void ins_net_copy_text(char *out, size_t cap, const char *s, size_t n) {
  if (!cap) return;
  if (n >= cap) n = cap - 1;
  memcpy(out, s, n);
  out[n] = '\0';
}

#endif

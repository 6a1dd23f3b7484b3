/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_export.h - delivering OTLP request bodies to a collector, on a thread
 * of its own, so that NCCL's threads and the dump thread never wait on the
 * network.
 *
 * The exporter thread asks its `collect` callback for bodies (the sink encodes
 * them; each under the size limit): a new turn of the sink's series every
 * `interval_ms`, or back to back when delivering one takes longer; a queueful
 * (`queue_max` bodies) at a time, the next once those are out, so nothing is
 * dropped for room and every series is sent in its turn however slow the
 * collector (otlp_export.c says why and what it costs). It sends them over one
 * keep-alive connection per the OTLP/HTTP spec: POST to the endpoint, retry on
 * 429/502/503/504 and connection errors or timeouts with exponential backoff
 * and jitter (honouring Retry-After), never retry other answers (400: dropped
 * and counted; a 200 with a partial success is success). One warning when the
 * collector goes away, one when it comes back, never one per attempt. http://
 * needs only libc; https:// uses libcurl, loaded with dlopen when asked for (a
 * warning if it is missing); gzip uses zlib the same way.
 */
#ifndef INS_OTLP_EXPORT_H
#define INS_OTLP_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/buf.h"

struct ins_otlp_endpoint {
  char url[2048];        /* full URL of the metrics endpoint, path included */
  char *headers;         /* extra request headers, "Key: value\r\n" each; never logged */
  bool json;             /* http/json (Content-Type application/json), else http/protobuf */
  bool gzip;             /* Content-Encoding: gzip */
  uint32_t timeout_ms;   /* per request */
};

/* What a body holds, in the sink's terms: when it was made (a number of the sink's that
 * only grows) and the series [first, end) in the sink's numbering. The exporter only
 * hands it back (delivered). */
struct ins_otlp_held {
  uint64_t made;
  size_t first, end;
};

/* One body of an export: the encoded request (owned by the exporter afterwards) and what
 * it holds. */
struct ins_otlp_body {
  struct ins_buf data;
  struct ins_otlp_held held;
};

/* Fills up to `max` bodies of a turn; returns how many, 0 for none. A turn holds every
 * series once, each body with its values as of its making; fresh = true starts a new turn
 * where the sink's last one stopped making bodies (from the first series after a whole
 * turn; at stop, mid-way, wrapping round). A turn may need more bodies than the queue
 * holds (thousands of communicators): the sink then sets *more, and the exporter asks
 * again with fresh = false for the same turn's next bodies once these are out of its
 * queue (delivered or rejected), however long that takes. A body left empty (data.len 0)
 * among them is one the sink could not make (out of memory): counted as dropped. Runs on
 * the exporter thread. */
typedef int (*ins_otlp_collect_fn)(void *arg, struct ins_otlp_body *bodies, int max, bool fresh, bool *more);
/* A body the collector took (a 2xx, a partial success included): what it held, as collect
 * said. Runs on the exporter thread, in the order the bodies were delivered; never for a
 * body that was dropped. So the sink can tell, at exit, which series never reached the
 * collector. */
typedef void (*ins_otlp_delivered_fn)(void *arg, const struct ins_otlp_held *held);

struct ins_otlp_exporter;

/* Starts the exporter thread. NULL (after one warning) if it cannot. delivered may be NULL. */
struct ins_otlp_exporter *ins_otlp_exporter_start(const struct ins_otlp_endpoint *ep, uint32_t interval_ms,
                                                  int queue_max, ins_otlp_collect_fn collect,
                                                  ins_otlp_delivered_fn delivered, void *arg);

/* The bodies waiting, then a last turn (fresh, every body of it) and its delivery,
 * bounded by deadline_ms in all (retries included); then the thread ends and e is freed.
 * Whatever is left is counted as dropped, bodies the sink had still to make as one. */
void ins_otlp_exporter_stop(struct ins_otlp_exporter *e, uint32_t deadline_ms);

/* Bodies dropped so far (answer not retryable, not made, or left at stop). Any thread. */
uint64_t ins_otlp_exporter_dropped(const struct ins_otlp_exporter *e);

#define INS_OTLP_ZLIB_LIB "libz.so.1"

/* Test hooks: read when an exporter is started, never changed while one runs. Zero
 * values mean the real thing. The network's own (libcurl's name, a CA file, the
 * clock, the lookup library) are net/net.h's ins_net_test_hooks. */
struct ins_otlp_test_hooks {
  const char *zlib_lib;       /* a name dlopen cannot find: gzip without zlib */
  bool curl_for_http;         /* http:// through libcurl too: the curl path without TLS */
  uint32_t backoff_base_ms;   /* a faster retry schedule (the rule is the same) */
  uint32_t backoff_cap_ms;
  uint64_t (*random)(void);   /* the jitter's random source */
};
extern struct ins_otlp_test_hooks ins_otlp_test_hooks;

#endif

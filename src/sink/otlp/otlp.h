/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.h - the OTLP metrics sink (NCCL_INSPECTOR_OTLP_EXPORT=1): live metrics
 * pushed to an OpenTelemetry Collector (or any OTLP/HTTP receiver), beside the
 * JSON log or Prometheus files, or alone (NCCL_INSPECTOR_JSON_DUMP=0).
 *
 * Records fold, as they are drained, into one series per data-point attribute
 * set (communicator, rank, operation, algorithm/protocol, message-size bucket,
 * GPU; for P2P the peer's rank, for a context's first 64 peers), each holding cumulative counts (operations, bytes) and two base-2
 * exponential histograms (execution time in seconds, bus bandwidth in GB/s),
 * from the series' first record on: so a backend computes rates, p50 and p99
 * across ranks and jobs, and a lost export loses no count. Per GPU, cumulative
 * counts of records dropped and of records excluded (timed from a subset of
 * their channels: *_stale_channels > 0, as the Prometheus sink leaves them out
 * too). The exporter thread (otlp_export.h) exports all of it every
 * OTEL_METRIC_EXPORT_INTERVAL (back to back when delivering takes longer), in
 * turns of as many bodies as it takes, each body with its values as of its
 * making; the bodies it had to drop are counted and that count is exported
 * too. The last export is made at shutdown, after which the sink frees its
 * state.
 *
 * Metric names and attributes: README.md, section OTLP. One mutex serialises
 * the state; it is taken by draining threads and the exporter thread, never in
 * an event callback.
 */
#ifndef INS_OTLP_H
#define INS_OTLP_H

#include <stdatomic.h>

#include "io/buf.h"
#include "sink/otlp/otlp_export.h"
#include "sink/sink.h"

extern const struct ins_sink ins_otlp_sink;
/* Tests only (tests/unit/plugin/test_fork_locks.c, test_otlp_collect.c): called, when set, by
 * the exporter's collect with the sink's lock held, before each body, with the number of
 * drains waiting for that lock. Set before the first init. */
extern void (*ins_otlp_test_hook)(const atomic_int *drains_waiting);

/* The encoded bodies of a turn, up to max at a time, as the exporter thread asks for
 * them (ins_otlp_collect_fn, otlp_export.h: fresh starts a turn where the last one
 * stopped making bodies, *more says that it has more bodies). Exposed for unit tests:
 * they call it without an exporter. Returns how many bodies. */
int ins_otlp_collect(void *arg, struct ins_otlp_body *bodies, int max, bool fresh, bool *more);
/* The exporter's word that a body the collector took held these series
 * (ins_otlp_delivered_fn): what the warning at exit counts. Exposed for unit tests. */
void ins_otlp_delivered(void *arg, const struct ins_otlp_held *held);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom.h - Prometheus textfile output (NCCL_INSPECTOR_PROM_DUMP=1): the
 * per-device aggregator and the writer of
 * <dump_dir>/nccl_inspector_metrics_<device_uuid>.prom.
 *
 * Records are folded, as the dump thread (or a finalize) drains them, into
 * one series per label set of their device; a write ends the device's
 * window: its file is replaced by one sample per series (mean execution
 * time, geometric-mean bus bandwidth of the window's ops) and the series
 * start again empty. A label set with no op in a window has no sample in
 * that window's file. Records timed from a subset of their channels
 * (stale_channels > 0) stay out of the series: they are only counted. Files
 * are written to a temporary name in the same directory and renamed (never
 * seen half-written), mode 0644, and removed when the last communicator
 * context of their device is finalized.
 *
 * Every function here runs on init, finalize, exit or the dump thread,
 * never in an event callback; one mutex serialises their updates, and no file
 * is formatted or written under it (prom.c: an attach never waits for a write).
 */
#ifndef INS_PROM_H
#define INS_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "core/record.h"
#include "sink/prom/prom_labels.h" /* ins_prom_escape (unit tests) */
#include "sink/sink.h"

struct ins_comm;
struct ins_config;
struct ins_prom_dev; /* one GPU's series and counters */

/* The Prometheus sink (sink/sink.h): its per-communicator state is the device. */
extern const struct ins_sink ins_prom_sink;

/* The sink's parts, exposed for unit tests. */
/* Resolve the process-wide labels (version, cluster, job id, node); once, before any attach. */
void ins_prom_configure(const struct ins_config *cfg);
/* The device of a new context (identified now, on the init thread); NULL out of memory. */
struct ins_prom_dev *ins_prom_attach(const struct ins_comm *c);
/* Fold one record into its device's window and count it as aggregated; -1 (count it as
 * dropped) if it cannot be kept. A record timed from a subset of its channels
 * (stale_channels > 0) is not folded: it is counted as excluded (0). */
int ins_prom_add(struct ins_prom_dev *d, const struct ins_comm *c, const struct ins_record *r);
/* Add to the device's counters what a context's counts say happened since its last ones:
 * records dropped, ops left untimed (by kind and reason), collectives never reported. */
struct ins_sink_counts;
void ins_prom_count(struct ins_prom_dev *d, const struct ins_sink_counts *k);
/* End the window of every device that has live contexts: write their files. */
void ins_prom_write_all(void);
/* After a context's final drain: write its device's file, or remove the file if the
 * context was the device's last. */
void ins_prom_detach(struct ins_prom_dev *d);
/* Process exit: write what remains (after the last drain), then free everything. */
void ins_prom_shutdown(void);

#endif

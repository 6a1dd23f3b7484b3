/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_body.h - one export body of the OTLP sink: a run of its series (and, in a turn's
 * first body, the per-GPU and exporter counters and hang detection's gauges) laid out as
 * OTLP metrics and encoded (otlp_pb.h). Reads the sink's state (otlp_state.h) as given,
 * under the sink's lock (otlp.c); keeps nothing.
 */
#ifndef INS_OTLP_BODY_H
#define INS_OTLP_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/buf.h"
#include "sink/otlp/otlp_state.h"

struct ins_otlp_body_in {
  struct ins_otlp_series *const *series; /* the body's series, in order */
  size_t nseries;
  bool counters; /* the counters and gauges go in this body */
  /* with counters: */
  const struct ins_otlp_device *devs;  /* every GPU's counters */
  const struct ins_otlp_comm *comms;   /* the contexts attached, for the gauges */
  bool gauges;                         /* hang detection is on: its gauges exist */
  uint64_t exports_dropped, start_ns;  /* the exporter's count, from the sink's start */
  /* the request: */
  const struct ins_otlp_kv *resource;
  int nresource;
  bool json;    /* OTLP/JSON, else protobuf */
  uint64_t now; /* every point's time */
};

/* Encodes the body into body (appended). 0, or -1 out of memory. */
int ins_otlp_body_encode(struct ins_buf *body, const struct ins_otlp_body_in *in);

#endif

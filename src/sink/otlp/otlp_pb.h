/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_pb.h - encoding one export (otlp_model.h) as an OTLP/HTTP request body:
 * protobuf (application/x-protobuf, the default) or the proto3 JSON mapping
 * (application/json). Our own small encoder rather than a protobuf library:
 * the messages are few and fixed, the plugin must not link anything beyond
 * libc, and an encoder of these shapes is a few hundred lines (see otlp_pb.c).
 */
#ifndef INS_OTLP_PB_H
#define INS_OTLP_PB_H

#include "io/buf.h"
#include "sink/otlp/otlp_model.h"

/* Appends the encoding of r to b. 0, or -1 when out of memory (b then holds a prefix:
 * the caller discards it). */
int ins_otlp_encode_pb(struct ins_buf *b, const struct ins_otlp_request *r);
int ins_otlp_encode_json(struct ins_buf *b, const struct ins_otlp_request *r);

#endif

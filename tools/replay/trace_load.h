/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_load.h - reading a recorded trace file into memory.
 *
 * Owns: the trace file format (tests/data/README.md): gzip or plain
 * JSON lines, one callback per line, parsed once with jansson into a
 * struct rp_trace, and which lines are too broken to replay (trace_load.c
 * says which and why). Strings are interned (intern.h) so the replay hands
 * the plugin pointers that stay valid for the whole run, as NCCL's do.
 */
#ifndef RP_TRACE_LOAD_H
#define RP_TRACE_LOAD_H

#include "trace.h"

#include <stddef.h>

/* 0 on success; on failure prints "inspector-replay: PATH:LINE: why" and returns -1. */
int rp_trace_load(const char *path, struct rp_trace *out);

/*
 * The same from memory: buf[0..len) holds the file's lines (plain, not gzip;
 * the last may lack its newline; NUL bytes are just bad JSON). `name` stands
 * for the path in messages and in out->path. On failure *out is freed, as
 * with rp_trace_load; on success the caller frees it with rp_trace_free.
 */
int rp_trace_load_mem(const char *name, const char *buf, size_t len, struct rp_trace *out);

#endif /* RP_TRACE_LOAD_H */

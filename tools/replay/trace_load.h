/*
 * trace_load.h - reading a recorded trace file into memory.
 *
 * Owns: the trace file format (../shared/fixtures/README.md): gzip or plain
 * JSON lines, one callback per line, parsed once with jansson into a
 * struct rp_trace. Strings are interned (intern.h) so the replay hands the
 * plugin pointers that stay valid for the whole run, as NCCL's do.
 */
#ifndef RP_TRACE_LOAD_H
#define RP_TRACE_LOAD_H

#include "trace.h"

/* 0 on success; on failure prints "inspector-replay: PATH:LINE: why" and returns -1. */
int rp_trace_load(const char *path, struct rp_trace *out);

#endif /* RP_TRACE_LOAD_H */

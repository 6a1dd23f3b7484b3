/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracefmt.h - the text of one NCCL callback in the trace format that
 * inspector-replay reads (tests/data/README.md, "Line format"). Shared by the
 * plugin's trace mode (src/trace/) and the recording plugin
 * (tests/plugins/trace_plugin.c), so both write exactly the same lines.
 */
#ifndef INS_TRACEFMT_H
#define INS_TRACEFMT_H

#include <stddef.h>
#include <stdint.h>

/* The "start" line's fields after "cb":"start" (no braces). `u` is the
 * descriptor's union: coll/p2p/kernelCh read with the layout all versions
 * share; API events (v5+) and CE events (v6) only for those types. */
int ins_tracefmt_start(char *buf, size_t cap, int ctx, uint64_t id, uint64_t type,
                       uint64_t parent_id, int rank, const void *u, uint64_t pgroup_id);
/* s (NULL: "") as the content of a JSON string, into out (cap bytes, NUL-terminated):
 * quotes, backslashes and control characters escaped, bytes that are not UTF-8 as
 * U+FFFD, cut between characters. Returns the length. */
size_t ins_tracefmt_str(char *out, size_t cap, const char *s);
/* "t" and "tid" prefix of every line: CLOCK_MONOTONIC ns and the thread id, now (the
 * recording plugin), or as the trace thread was told (src/trace/). */
int ins_tracefmt_prefix(char *buf, size_t cap);
int ins_tracefmt_prefix_at(char *buf, size_t cap, uint64_t t_ns, long tid);

#endif

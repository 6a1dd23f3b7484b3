/*
 * json.h - the JSON-lines format of records (docs/CONTRACTS.md section 2).
 *
 * Owns the field names and their order. Each communicator's "header"
 * object is built once; "metadata" once per write batch; the rest per record.
 */
#ifndef INS_JSON_H
#define INS_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "core/record.h"
#include "sink/buf.h"

/* inspector_output_format_version of the JSON records; also the Prometheus "version" label. */
#define INS_FORMAT_VERSION "v4.0"

struct ins_comm;

/* "\"header\":{...}" for a communicator context, malloc'd; *len its length. */
char *ins_json_header(const struct ins_comm *c, int *len);
/* "\"metadata\":{...}" into meta (cap bytes); returns its length. */
int ins_json_metadata(char *meta, int cap, const char *hostname, long pid, uint64_t ts_us);

/* Append one record line (with trailing newline); -1 if out of memory. */
int ins_json_record(struct ins_buf *b, const struct ins_comm *c, const char *meta, int meta_len,
                    const struct ins_record *r, int verbose);

struct ins_dump_counts {
  uint64_t total[2], since[2], dropped_total[2], dropped_since[2];
};
struct ins_sample_stats;
/* Append one dump_stats line; smp (may be NULL) adds its "sampling" object
 * when sampling is on. */
int ins_json_stats(struct ins_buf *b, const struct ins_comm *c, const char *meta, int meta_len,
                   const struct ins_dump_counts *k, const struct ins_sample_stats *smp);

/* Record lines (not dump_stats lines) among the lines of text: what a write that
 * failed part way lost (sink/writer.c). */
uint64_t ins_json_count_records(const char *text, size_t len);

#endif

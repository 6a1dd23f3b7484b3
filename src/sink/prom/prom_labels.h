/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom_labels.h - the Prometheus sink's label text: escaping, and the label sets
 * of the process, a device and a record (the message-size bucket and the version
 * are the outputs' shared vocabulary: sink/vocab.h).
 *
 * A series stores only the labels that vary (comm_name onwards, built per
 * record here); the device's fixed ones (version, cluster, slurm_job_id,
 * node, gpu) are built once and prepended when the file is written.
 */
#ifndef INS_PROM_LABELS_H
#define INS_PROM_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "core/record.h"

struct ins_comm;
struct ins_config;

/* Label value escaping of the text exposition format: \ -> \\, " -> \", newline -> \n.
 * Bytes that are not UTF-8 become U+FFFD (a label value must be UTF-8). Writes at most
 * cap-1 bytes and a NUL (never a partial escape or character); returns the length. */
size_t ins_prom_escape(char *out, size_t cap, const char *s);
/* Append name="value" (escaped, at most max_value bytes of it) at *o, comma-separated. */
void ins_prom_label(char *buf, size_t cap, size_t *o, const char *name, const char *value,
                    size_t max_value);
/* The process's labels: version, cluster, slurm_job_id, node. */
void ins_prom_process_labels(char *buf, size_t cap, const struct ins_config *cfg);
/* A communicator context's labels on hang detection's gauges: comm_name, comm_id ("0x..."),
 * rank. */
void ins_prom_comm_labels(char *buf, size_t cap, const struct ins_comm *c);
/* The labels of a record's series: comm_name, n_nodes, nranks, then collective,
 * message_size, algo_proto or p2p_operation, message_size. */
void ins_prom_record_labels(char *buf, size_t cap, const struct ins_comm *c,
                            const struct ins_record *r);

#endif

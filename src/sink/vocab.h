/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vocab.h - what the three outputs say alike: the format version and the
 * message-size bucket.
 *
 * The JSON records, the Prometheus series and the OTLP metrics describe the
 * same records, and a dashboard or a report that joins two of them relies on
 * their agreeing: the version a JSON record carries is the Prometheus
 * "version" label and the OTLP scope's version; an op's message_size label
 * is the same text in Prometheus and OTLP. So these live here, below the
 * three sinks (sink/json/, sink/prom/, sink/otlp/), none of which may include
 * another's headers.
 */
#ifndef INS_SINK_VOCAB_H
#define INS_SINK_VOCAB_H

#include <stddef.h>
#include <stdint.h>

/* inspector_output_format_version of the JSON records; also the Prometheus "version" label
 * and the OTLP instrumentation scope's version. */
#define INS_FORMAT_VERSION "v4.0"

/* The message-size bucket (Prometheus' message_size label, OTLP's nccl.message_size): with
 * u the largest of B, KB, MB, GB, TB, PB, EB (powers of 1024) not above bytes (B for 0),
 * "<floor(bytes/u)>-<floor(bytes/u)+1><unit>": 4.5 GiB -> "4-5GB", 512 MiB -> "512-513MB",
 * 100 B -> "100-101B". */
void ins_vocab_size_bucket(uint64_t bytes, char *out, size_t cap);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.h - the JSON-lines format of records (docs/CONTRACTS.md section 2).
 *
 * Owns the field names and their order. Each communicator's "header"
 * object is built once (at attach); "metadata" once per pass; the rest per record.
 */
#ifndef INS_JSON_H
#define INS_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "sink/sink.h"

/* The JSON-lines sink (sink/sink.h): one line per record, one dump_stats line per
 * communicator and drain with news; its lines go to the log file (sink/json/writer.h),
 * the dump thread's through the writer thread (sink/json/wqueue.h) this sink owns. */
extern const struct ins_sink ins_json_sink;

/* metadata.job_id: the batch system's job id (core/config.h: the first of SLURM_JOB_ID,
 * SLURM_JOBID, PBS_JOBID, LSB_JOBID set), as valid UTF-8 (core/utf8.h) cut to at most this
 * many bytes between characters; no key when none is set. Real ids are far shorter (Slurm's
 * "4242_7", PBS's "4242.server"): the bound keeps a hostile value from making every line
 * long, and a record line below a page of the log (writer.h) with a long host and
 * communicator name too. */
#define INS_JSON_JOB_ID_MAX 128

/* Record lines (not dump_stats lines) among the lines of text: what a write that
 * failed part way lost (sink/json/writer.c). */
uint64_t ins_json_count_records(const char *text, size_t len);

#endif

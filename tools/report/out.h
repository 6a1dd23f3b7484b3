/* SPDX-License-Identifier: Apache-2.0 */
/*
 * out.h - the report's outputs, each a pure function of a finished job (job.h).
 *
 * Owns: the list of formats. Each writer reads the model only: no figure is
 * computed in an output, so the terminal, JSON, CSV, HTML and trace views
 * of one job always agree. Each returns 0, or -1 after printing why (a path
 * it cannot write) on stderr.
 */
#ifndef RPT_OUT_H
#define RPT_OUT_H

#include <stdio.h>

#include "job.h"

int rpt_write_text(struct rpt_job *j, FILE *f);           /* the terminal tables (default) */
int rpt_write_json(struct rpt_job *j, FILE *f);           /* --json: everything, one object */
int rpt_write_csv(struct rpt_job *j, const char *dir);    /* --csv DIR: one table per file */
int rpt_write_html(struct rpt_job *j, const char *path);  /* --html FILE: one page, inline SVG */
int rpt_write_trace(struct rpt_job *j, const char *path); /* --trace FILE: Perfetto/Chrome JSON */

/*
 * An output file (--csv's tables, --html, --trace), never written through a link planted
 * at its name (outfile.c says how): rpt_out_open refuses a link there, and writes a new
 * temporary file beside it; rpt_out_close(o, rc) renames it over the name when rc is 0
 * and every write succeeded, else removes it. Each says why on stderr when it fails:
 * open returns NULL, close -1 (or rc when rc was not 0).
 */
struct rpt_outfile {
  FILE *f;
  const char *path;
  char tmp[4400]; /* the temporary file, "" when written in place (a FIFO, a device) */
};
FILE *rpt_out_open(struct rpt_outfile *o, const char *path);
int rpt_out_close(struct rpt_outfile *o, int rc);

/* A JSON string, quotes included: escaped, and valid UTF-8 whatever the log held (through
 * src/core/utf8.h, the walk the plugin's writers use). Shared by the JSON and trace writers. */
void rpt_put_json_string(FILE *f, const char *s);

/* Shared by the writers: "64.0 MiB", "512 B". */
const char *rpt_human_bytes(uint64_t b, char *out, size_t n);

#endif /* RPT_OUT_H */

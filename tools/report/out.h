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

/* A JSON string, quotes included: escaped, and valid UTF-8 whatever the log held (through
 * src/core/utf8.h, the walk the plugin's writers use). Shared by the JSON and trace writers. */
void rpt_put_json_string(FILE *f, const char *s);

/* Shared by the writers: "64.0 MiB", "512 B". */
const char *rpt_human_bytes(uint64_t b, char *out, size_t n);

#endif /* RPT_OUT_H */

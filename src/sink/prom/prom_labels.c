/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom_labels.c - label text of the Prometheus sink (see prom_labels.h).
 */
#include "sink/prom/prom_labels.h"

#include <stdio.h>
#include <string.h>

#include "core/comm.h"
#include "core/config.h"
#include "core/utf8.h"
#include "sink/vocab.h"

/* The exposition format's label value escapes: \\, \" and \n. */
static const char *label_escape(unsigned char c, char *tmp) {
  (void)tmp;
  return c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : NULL;
}

size_t ins_prom_escape(char *out, size_t cap, const char *s) {
  return cap ? ins_utf8_escape(out, cap, s, label_escape, 0) : 0;
}

/* Room is checked: values are capped by their callers (a label set fits its buffer). */
void ins_prom_label(char *buf, size_t cap, size_t *o, const char *name, const char *value,
                  size_t max_value) {
  char esc[512];
  if (*o + 1 >= cap) return; /* full (a cut label set), as a label set never is */
  if (max_value > sizeof esc) max_value = sizeof esc;
  ins_prom_escape(esc, max_value, value ? value : "unknown");
  int n = snprintf(buf + *o, cap - *o, "%s%s=\"%s\"", *o ? "," : "", name, esc);
  if (n > 0) *o += (size_t)n < cap - *o ? (size_t)n : cap - *o - 1;
}

void ins_prom_process_labels(char *buf, size_t cap, const struct ins_config *cfg) {
  size_t o = 0;
  ins_prom_label(buf, cap, &o, "version", INS_FORMAT_VERSION, 64);
  ins_prom_label(buf, cap, &o, "cluster", cfg->cluster, 256);
  ins_prom_label(buf, cap, &o, "slurm_job_id", cfg->job_id, 256);
  ins_prom_label(buf, cap, &o, "node", cfg->hostname, 512);
}

void ins_prom_record_labels(char *buf, size_t cap, const struct ins_comm *c,
                            const struct ins_record *r) {
  char size[48], ap[160], algo[64], proto[64];
  size_t o = 0;
  ins_prom_label(buf, cap, &o, "comm_name", c->name, 300);
  snprintf(size, sizeof size, "%d", c->nnodes);
  ins_prom_label(buf, cap, &o, "n_nodes", size, 32);
  snprintf(size, sizeof size, "%d", c->nranks);
  ins_prom_label(buf, cap, &o, "nranks", size, 32);
  ins_vocab_size_bucket(r->bytes, size, sizeof size);
  if (r->kind == INS_KIND_COLL) {
    ins_prom_label(buf, cap, &o, "collective", r->func_name, 128);
    ins_prom_label(buf, cap, &o, "message_size", size, 48);
    snprintf(algo, sizeof algo, "%s", r->algo ? r->algo : "unknown");
    snprintf(proto, sizeof proto, "%s", r->proto ? r->proto : "unknown");
    snprintf(ap, sizeof ap, "%s_%s", algo, proto);
    ins_prom_label(buf, cap, &o, "algo_proto", ap, 300);
  } else {
    ins_prom_label(buf, cap, &o, "p2p_operation", r->func_name, 128);
    ins_prom_label(buf, cap, &o, "message_size", size, 48);
  }
}

void ins_prom_comm_labels(char *buf, size_t cap, const struct ins_comm *c) {
  char v[32];
  size_t o = 0;
  ins_prom_label(buf, cap, &o, "comm_name", c->name, 300);
  snprintf(v, sizeof v, "0x%llx", (unsigned long long)c->id);
  ins_prom_label(buf, cap, &o, "comm_id", v, 32);
  snprintf(v, sizeof v, "%d", c->rank);
  ins_prom_label(buf, cap, &o, "rank", v, 32);
}

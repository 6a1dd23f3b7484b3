/* SPDX-License-Identifier: Apache-2.0 */
/*
 * out_json.c - everything the report knows as one JSON object (--json; see out.h).
 *
 * Field names carry their unit (_us, _ns, _gbs, _s); times are GPU clock ns
 * before alignment unless named *_aligned; *_us of the hangs are wall clock. The object's shape is documented
 * in docs/report.md; scripts should read this rather than parse the tables.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "out.h"

static void jstr(FILE *f, const char *s) { rpt_put_json_string(f, s); }

/* A finite number, or null (JSON has no NaN or infinity). */
static void jnum(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.6g", v);
  else fputs("null", f);
}

static void group(FILE *f, struct rpt_group *g) {
  fprintf(f, "{\"op\":");
  jstr(f, rpt_str(g->op));
  fprintf(f, ",\"kind\":\"%s\",\"bytes\":%" PRIu64 ",\"records\":%" PRIu64 ",\"excluded\":{", g->p2p ? "p2p" : "coll",
          g->bytes, g->records);
  for (int e = 0; e < RPT_NEXCL; e++) fprintf(f, "%s\"%s\":%" PRIu64, e ? "," : "", rpt_excl_name(e), g->excluded[e]);
  fprintf(f, "},\"timing_source\":{");
  int k = 0;
  for (int t = 0; t < RPT_NTIMING; t++)
    if (g->timing[t]) fprintf(f, "%s\"%s\":%" PRIu64, k++ ? "," : "", rpt_timing_name(t), g->timing[t]);
  fprintf(f, "},\"kept\":%" PRIu64, g->time_ns.n);
  if (g->time_ns.n) {
    fprintf(f, ",\"time_us\":{\"p50\":");
    jnum(f, rpt_qs_quantile(&g->time_ns, 0.5) / 1e3);
    fprintf(f, ",\"p95\":");
    jnum(f, rpt_qs_quantile(&g->time_ns, 0.95) / 1e3);
    fprintf(f, ",\"p99\":");
    jnum(f, rpt_qs_quantile(&g->time_ns, 0.99) / 1e3);
    fprintf(f, "},\"busbw_gbs\":{\"p10\":");
    jnum(f, rpt_qs_quantile(&g->busbw, 0.1));
    fprintf(f, ",\"p50\":");
    jnum(f, rpt_qs_quantile(&g->busbw, 0.5));
    fprintf(f, ",\"p90\":");
    jnum(f, rpt_qs_quantile(&g->busbw, 0.9));
    fputc('}', f);
  }
  const struct rpt_series *s = &g->series;
  if (s->nbins) {
    fprintf(f, ",\"busbw_over_time\":{\"t0_ns\":%" PRIu64 ",\"bin_ns\":%" PRIu64 ",\"count\":[", s->t0_ns, s->width_ns);
    for (int i = 0; i < s->nbins; i++) fprintf(f, "%s%u", i ? "," : "", s->count[i]);
    fprintf(f, "],\"mean_gbs\":[");
    for (int i = 0; i < s->nbins; i++) {
      if (i) fputc(',', f);
      if (s->count[i]) jnum(f, (double)s->sum_mbs[i] / 1000.0 / s->count[i]);
      else fputs("null", f);
    }
    fprintf(f, "]}");
  }
  fputc('}', f);
}

static void rank_stat(FILE *f, const struct rpt_job *j, const struct rpt_rank_stat *r) {
  fprintf(f, "{\"rank\":%d,\"hostname\":", r->rank);
  jstr(f, rpt_rank_host(j, r->comm, r->rank));
  fprintf(f, ",\"ops\":%" PRIu64 ",\"late_ops\":%" PRIu64 ",\"last_ops\":%" PRIu64 ",\"median_late_us\":", r->ops,
          r->late_ops, r->last_ops);
  jnum(f, r->med_late_ns / 1e3);
  fprintf(f, ",\"mean_late_us\":");
  jnum(f, r->mean_late_ns / 1e3);
  fprintf(f, ",\"median_exec_us\":");
  jnum(f, r->med_exec_ns / 1e3);
  fprintf(f, ",\"others_median_exec_us\":");
  jnum(f, r->others_med_exec_ns / 1e3);
  fprintf(f, ",\"busbw_ratio\":");
  jnum(f, r->busbw_ratio);
  fputc('}', f);
}

/* A communicator's groups and rank stats: [g, g_end) and [r, r_end) of job.groups and
 * job.rstats, both sorted by communicator (job.h). The writer walks the two lists once
 * along the communicators; a search of both per communicator was quadratic. */
struct cursor {
  int g, r, p; /* p: job.p2p_stats, sorted by communicator too */
};

static void comm_obj(FILE *f, struct rpt_job *j, int ci, struct cursor *at) {
  const struct rpt_comm *c = &j->comms[ci];
  fprintf(f, "{\"id\":\"0x%" PRIx64 "\",\"name\":", c->id);
  jstr(f, c->name);
  fprintf(f, ",\"n_ranks\":%d,\"nnodes\":%d,\"kind\":\"%s\",\"ranks_seen\":%d,\"records_written\":%" PRIu64
             ",\"dropped\":%" PRIu64,
          c->nranks, c->nnodes, rpt_kind_name(c->kind), c->ranks_seen, c->written[0] + c->written[1],
          c->dropped[0] + c->dropped[1]);
  if (c->covered_hi >= 0) {
    fprintf(f, ",\"sampled_share\":{\"min\":");
    jnum(f, c->covered_lo);
    fprintf(f, ",\"max\":");
    jnum(f, c->covered_hi);
    fputc('}', f);
  }
  fprintf(f, ",\"groups\":[");
  assert(at->g == j->ngroups || j->groups[at->g].comm >= ci);
  for (int k = 0; at->g < j->ngroups && j->groups[at->g].comm == ci; k++, at->g++) {
    if (k) fputc(',', f);
    group(f, &j->groups[at->g]);
  }
  fprintf(f, "],\"ranks\":[");
  assert(at->r == j->nrstats || j->rstats[at->r].comm >= ci);
  for (int k = 0; at->r < j->nrstats && j->rstats[at->r].comm == ci; k++, at->r++) {
    if (k) fputc(',', f);
    rank_stat(f, j, &j->rstats[at->r]);
  }
  /* per rank, its P2P transfers matched with their peers' (late.c): lateness against the peer */
  fprintf(f, "],\"p2p_ranks\":[");
  for (int k = 0; at->p < j->np2p_stats && j->p2p_stats[at->p].comm == ci; k++, at->p++) {
    const struct rpt_p2p_stat *q = &j->p2p_stats[at->p];
    fprintf(f, "%s{\"rank\":%d,\"transfers\":%" PRIu64 ",\"late_transfers\":%" PRIu64 ",\"median_late_us\":",
            k ? "," : "", q->rank, q->ops, q->late_ops);
    jnum(f, q->med_late_ns / 1e3);
    fputc('}', f);
  }
  fprintf(f, "]}");
}

/* A late rank (named, or "not enough data"): its whole-job figures as before, then how it was
 * judged over time (kind, onset, windows), its evidence and confidence. */
static void straggler_obj(FILE *f, const struct rpt_job *j, const struct rpt_straggler *s, int i) {
  const struct rpt_rank_stat *r = s->stat;
  const struct rpt_p2p_stat *q = s->p2p_stat;
  struct rpt_late_judge tmp;
  const struct rpt_late_judge *g = rpt_straggler_judge(s, &tmp);
  fprintf(f, "%s{\"comm\":\"0x%" PRIx64 "\",\"comm_name\":", i ? "," : "", j->comms[s->comm].id);
  jstr(f, j->comms[s->comm].name);
  fprintf(f, ",\"rank\":%d,\"hostname\":", s->rank);
  jstr(f, s->host >= 0 ? rpt_str(s->host) : "?");
  uint64_t ops = s->p2p ? q->ops : r->ops, late = s->p2p ? q->late_ops : r->late_ops;
  fprintf(f, ",\"pid\":%lld,\"kind\":\"%s\",\"ops\":%" PRIu64 ",\"late_ops\":%" PRIu64 ",\"late_share\":", s->pid,
          s->p2p ? "p2p" : "collective", ops, late);
  jnum(f, ops ? (double)late / (double)ops : NAN);
  fprintf(f, ",\"median_late_us\":");
  jnum(f, (s->p2p ? q->med_late_ns : r->med_late_ns) / 1e3);
  fprintf(f, ",\"mean_late_us\":");
  jnum(f, s->p2p ? NAN : r->mean_late_ns / 1e3);
  fprintf(f, ",\"top_op\":");
  jstr(f, !s->p2p && r->top_op >= 0 ? rpt_str(r->top_op) : "");
  fprintf(f, ",\"median_exec_us\":");
  jnum(f, r ? r->med_exec_ns / 1e3 : NAN);
  fprintf(f, ",\"others_median_exec_us\":");
  jnum(f, r ? r->others_med_exec_ns / 1e3 : NAN);
  if (q) fprintf(f, ",\"p2p_transfers\":%" PRIu64 ",\"p2p_late_transfers\":%" PRIu64, q->ops, q->late_ops);
  fprintf(f, ",\"onset_ns\":%" PRIu64 ",\"from_start\":%s,\"windows\":%d,\"onset_window\":%d,\"window_ns\":%" PRIu64,
          g->onset_ns, g->onset_window ? "false" : "true", g->windows, g->onset_window, g->window_ns);
  fprintf(f, ",\"evidence\":{\"ops\":%" PRIu64 ",\"late_ops\":%" PRIu64 ",\"late_share\":", g->since_ops,
          g->since_late);
  jnum(f, g->share);
  fprintf(f, ",\"late_share_low\":");
  jnum(f, g->share_lo);
  fprintf(f, ",\"median_late_us\":");
  jnum(f, g->late_med_ns / 1e3);
  fprintf(f, ",\"others_late_share\":");
  jnum(f, g->others_share);
  fprintf(f, ",\"min_late_ops\":%d},\"confidence\":\"%s\"}", RPT_MIN_LATE_OPS,
          g->verdict == RPT_LATE_NAMED ? rpt_conf_name(g->conf) : "not enough data");
}

/* A rank with no log that the others wait for (job.h, struct rpt_missing). */
static void missing_obj(FILE *f, const struct rpt_job *j, const struct rpt_missing *m, int i) {
  fprintf(f, "%s{\"comm\":\"0x%" PRIx64 "\",\"comm_name\":", i ? "," : "", j->comms[m->comm].id);
  jstr(f, j->comms[m->comm].name);
  fprintf(f, ",\"rank\":%d,\"log\":false,\"measured_in\":\"0x%" PRIx64 "\",\"median_late_us\":", m->rank,
          j->comms[m->via].id);
  jnum(f, m->late_med_ns / 1000);
  fprintf(f, ",\"others_wait_us\":");
  jnum(f, m->wait_med_ns / 1000);
  fprintf(f, ",\"whole_comms_wait_us\":");
  jnum(f, m->ref_ns / 1000);
  fprintf(f, ",\"evidence\":{\"ops\":%" PRIu64 ",\"waited_ops\":%" PRIu64 ",\"share\":", m->ops, m->waited_ops);
  jnum(f, m->share);
  fprintf(f, ",\"share_low\":");
  jnum(f, m->share_lo);
  fprintf(f, ",\"min_ops\":%d},\"confidence\":\"%s\"}", RPT_MIN_LATE_OPS, rpt_conf_name(m->conf));
}

/* A slow link (or one on too few transfers): its findings per (op, size), evidence, confidence. */
static void link_obj(FILE *f, const struct rpt_job *j, const struct rpt_link *l, int i, bool few) {
  fprintf(f, "%s{\"between\":\"%s\",\"a\":", i ? "," : "", l->host < 0 ? "hosts" : "ranks");
  if (l->host < 0) {
    jstr(f, rpt_str(l->a));
    fprintf(f, ",\"b\":");
    jstr(f, rpt_str(l->b));
  } else {
    fprintf(f, "%d,\"b\":%d,\"hostname\":", l->a, l->b);
    jstr(f, rpt_str(l->host));
    fprintf(f, ",\"comm\":\"0x%" PRIx64 "\"", j->comms[l->comm].id);
  }
  fprintf(f, ",\"one_way\":%s,\"worst_ratio\":", l->one_way ? "true" : "false");
  jnum(f, l->worst_ratio);
  fprintf(f, ",\"findings\":[");
  for (int k = 0; k < l->nfind; k++) {
    const struct rpt_link_finding *x = &l->find[k];
    fprintf(f, "%s{\"comm\":\"0x%" PRIx64 "\",\"op\":", k ? "," : "", j->comms[x->comm].id);
    jstr(f, rpt_str(x->op));
    fprintf(f, ",\"bytes\":%" PRIu64 ",\"busbw_gbs\":", x->bytes);
    jnum(f, x->busbw_p50);
    fprintf(f, ",\"class_median_gbs\":");
    jnum(f, x->class_p50);
    fprintf(f, ",\"samples\":%" PRIu64 ",\"links_compared\":%d}", x->samples, x->class_links);
  }
  fprintf(f, "],\"evidence\":{\"samples\":%" PRIu64 ",\"groups\":%d,\"pairs\":%d,\"pairs_below\":%d,\"agree_low\":",
          l->samples, l->groups, l->pairs, l->pairs_below);
  jnum(f, l->agree_lo);
  fprintf(f, ",\"min_samples\":%d},\"confidence\":\"%s\"}", RPT_MIN_LINK_SAMPLES,
          few ? "not enough data" : rpt_conf_name(l->conf));
}

/* ---- hangs ---- */

/* Seconds: 6 decimals (the plugin's precision), or null. */
static void jsec(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.6f", v);
  else fputs("null", f);
}

/* An op: "coll":"AllReduce","coll_sn":7 (or the p2p_ keys). */
static void op_keys(FILE *f, int p2p, int op, uint64_t sn) {
  const char *k = p2p ? "p2p" : "coll";
  fprintf(f, "\"%s\":", k);
  jstr(f, rpt_str(op));
  fprintf(f, ",\"%s_sn\":%" PRIu64, k, sn);
}

/* The unknown ranks listed per stuck op, at most (a communicator may claim 16 M ranks): the
 * count is whole, the rest is said by unknown_ranks_unlisted. */
#define UNKNOWN_LISTED 65536

/* The ranks of h in state st, as a JSON array. */
static void state_ranks(FILE *f, const struct rpt_hang *h, enum rpt_hang_state st) {
  fputc('[', f);
  int n = 0;
  if (st == RPT_HS_UNKNOWN) {
    for (int i = 0; i < h->nunknown; i++)
      for (int r = h->unknown[i].lo; r <= h->unknown[i].hi && n < UNKNOWN_LISTED; r++) fprintf(f, "%s%d", n++ ? "," : "", r);
  } else {
    for (int i = 0; i < h->nranks; i++)
      if (h->ranks[i].state == st) fprintf(f, "%s%d", n++ ? "," : "", h->ranks[i].rank);
  }
  fputc(']', f);
}

static void hang_rank_obj(FILE *f, const struct rpt_hang *h, const struct rpt_hang_rank *r) {
  fprintf(f, "{\"rank\":%d,\"state\":\"%s\",\"host\":", r->rank, rpt_hang_state_name(r->state));
  if (r->host >= 0) jstr(f, rpt_str(r->host));
  else fputs("null", f);
  if (r->pid >= 0) fprintf(f, ",\"pid\":%lld", r->pid);
  else fputs(",\"pid\":null", f);
  const struct rpt_hang_row *w = r->row && r->state != RPT_HS_COMPLETED ? r->row : r->own;
  if (w) { /* waiting or queued: what its newest hang line says */
    if (r->own) { /* a P2P peer stuck in its own side of the transfer */
      fputs(",\"own_op\":{", f);
      op_keys(f, w->p2p, w->op, w->sn);
      fputc('}', f);
    }
    fputs(",\"in_flight_s\":", f);
    jsec(f, w->in_flight_s);
    fprintf(f, ",\"kernel_started\":%s", w->kernel_started ? "true" : "false");
    if (w->channels_started >= 0) fprintf(f, ",\"channels_started\":%d", w->channels_started);
    if (w->channels_stopped >= 0) fprintf(f, ",\"channels_stopped\":%d", w->channels_stopped);
    if (w->ops_in_flight >= 0) fprintf(f, ",\"ops_in_flight\":%d", w->ops_in_flight);
    if (w->repeat >= 0) fprintf(f, ",\"repeat\":%d", w->repeat);
    fprintf(f, ",\"hang_lines\":%u,\"first_seen_us\":", w->lines);
    if (w->first_seen_us) fprintf(f, "%" PRIu64, w->first_seen_us);
    else fputs("null", f);
  }
  if (h->p2p && (r->row || r->own) && (w ? w : r->row)->peer >= 0) fprintf(f, ",\"p2p_peer\":%d", (w ? w : r->row)->peer);
  if (r->state == RPT_HS_COMPLETED && r->row && r->row->resolved) {
    fputs(",\"resolved_after_s\":", f);
    jsec(f, r->row->resolved_s >= 0 ? r->row->resolved_s : NAN);
  }
  fputs(",\"last_op\":", f);
  if (r->last.op >= 0) {
    fputc('{', f);
    op_keys(f, r->last.p2p, r->last.op, r->last.sn);
    if (r->last.end_ns) fprintf(f, ",\"end_ts_ns\":%" PRIu64, r->last.end_ns);
    fputc('}', f);
  } else {
    fputs("null", f);
  }
  fputs(",\"last_op_age_s\":", f);
  jsec(f, r->last_op_age_s);
  fprintf(f, ",\"last_op_age_exact\":%s,\"last_line_age_s\":", r->last_op_age_exact ? "true" : "false");
  jsec(f, r->last_line_age_s);
  if (r->state == RPT_HS_MISSING) {
    fprintf(f, ",\"alive\":%s,\"stuck_in\":", r->alive < 0 ? "null" : r->alive ? "true" : "false");
    if (r->stuck_in) {
      fputc('{', f);
      op_keys(f, r->stuck_in->p2p, r->stuck_in->op, r->stuck_in->sn);
      fputc('}', f);
    } else {
      fputs("null", f);
    }
  }
  fputc('}', f);
}

static void hang_obj(FILE *f, const struct rpt_job *j, const struct rpt_hang *h, bool first) {
  fprintf(f, "%s{\"comm\":\"0x%" PRIx64 "\",\"comm_name\":", first ? "" : ",", j->comms[h->comm].id);
  jstr(f, j->comms[h->comm].name);
  fputc(',', f);
  op_keys(f, h->p2p, h->op, h->sn);
  fputs(",\"size_bytes\":", f);
  if (h->bytes >= 0) fprintf(f, "%" PRId64, h->bytes);
  else fputs("null", f);
  fprintf(f, ",\"resolved\":%s,\"stuck_s\":", h->resolved ? "true" : "false");
  jsec(f, h->stuck_s);
  fputs(",\"began_us\":", f);
  if (h->began_us) fprintf(f, "%" PRIu64, h->began_us);
  else fputs("null", f);
  fprintf(f, ",\"n_ranks\":%d", j->comms[h->comm].nranks);
  static const char *const key[RPT_NHS] = {"waiting_ranks", "queued_ranks", "missing_ranks", "completed_ranks",
                                           "unknown_ranks"};
  for (int st = 0; st < RPT_NHS; st++) {
    fprintf(f, ",\"%s\":", key[st]);
    state_ranks(f, h, (enum rpt_hang_state)st);
  }
  fprintf(f, ",\"counts\":{");
  for (int st = 0; st < RPT_NHS; st++)
    fprintf(f, "%s\"%s\":%d", st ? "," : "", rpt_hang_state_name((enum rpt_hang_state)st), h->count[st]);
  fputc('}', f);
  if (h->count[RPT_HS_UNKNOWN] > UNKNOWN_LISTED)
    fprintf(f, ",\"unknown_ranks_unlisted\":%d", h->count[RPT_HS_UNKNOWN] - UNKNOWN_LISTED);
  /* every rank in rank order: those with a log, and the unknown ones from their ranges */
  fputs(",\"ranks\":[", f);
  int n = 0, u = 0, ur = h->nunknown ? h->unknown[0].lo : -1, listed = 0;
  for (int i = 0; i <= h->nranks;) {
    int known = i < h->nranks ? h->ranks[i].rank : -1;
    if (ur >= 0 && (known < 0 || ur < known)) {
      if (listed++ < UNKNOWN_LISTED)
        fprintf(f, "%s{\"rank\":%d,\"state\":\"unknown\",\"host\":null,\"pid\":null,\"alive\":null}",
                n++ ? "," : "", ur);
      if (ur++ == h->unknown[u].hi || listed >= UNKNOWN_LISTED) /* past the listed ones: range by range */
        ur = ++u < h->nunknown ? h->unknown[u].lo : -1;
      continue;
    }
    if (known < 0) break;
    if (n++) fputc(',', f);
    hang_rank_obj(f, h, &h->ranks[i++]);
  }
  fputs("]}", f);
}

/* "inputs": what was read, and left out. */
static void inputs_obj(FILE *f, const struct rpt_job *j) {
  fprintf(f, "\"inputs\":{\"files\":%ld,\"duplicates_skipped\":%ld,\"bytes\":%" PRIu64 ",\"records\":%" PRIu64
             ",\"collective\":%" PRIu64 ",\"p2p\":%" PRIu64 ",\"lines_rejected\":%ld,\"lines_not_records\":%ld"
             ",\"no_start_time\":%" PRIu64 ",\"excluded\":{",
          j->files, j->duplicates, j->bytes_read, j->records, j->records_kind[0], j->records_kind[1], j->rejected,
          j->not_records, j->no_start);
  for (int e = 0; e < RPT_NEXCL; e++) fprintf(f, "%s\"%s\":%" PRIu64, e ? "," : "", rpt_excl_name(e), j->excluded[e]);
  uint64_t dropped = 0;
  for (int c = 0; c < j->ncomms; c++) dropped += j->comms[c].dropped[0] + j->comms[c].dropped[1];
  fprintf(f, "},\"dropped\":%" PRIu64, dropped);
  /* once there are some: the output of logs without them is as before */
  if (j->bounds) fprintf(f, ",\"bound_lines\":%ld", j->bounds);
  if (j->sampling[0]) {
    fprintf(f, ",\"sampling\":{\"description\":");
    jstr(f, j->sampling);
    fprintf(f, ",\"covered_min\":");
    jnum(f, j->covered_lo);
    fprintf(f, ",\"covered_max\":");
    jnum(f, j->covered_hi);
    fputc('}', f);
  }
  fprintf(f, ",\"op_sample\":{\"one_in\":%u,\"ops\":%zu}", 1u << j->sample_shift, j->nops);
  fprintf(f, ",\"hang_lines\":%" PRIu64 ",\"hang_resolved_lines\":%" PRIu64 ",\"comm_idle_lines\":%" PRIu64
             ",\"hang_lines_left_out\":%" PRIu64 ",\"hangs_unlisted\":%d,\"last_line_us\":",
          j->hang_lines[0], j->hang_lines[1], j->hang_lines[2], j->hang_rows_dropped, j->nhangs_unlisted);
  if (j->last_line_us) fprintf(f, "%" PRIu64 "}", j->last_line_us);
  else fputs("null}", f);
}

/* "options": the thresholds the findings were judged by. */
static void options_obj(FILE *f, const struct rpt_job *j) {
  fprintf(f, "\"options\":{\"max_busbw_gbs\":");
  jnum(f, j->opt.max_busbw_gbs);
  fprintf(f, ",\"late_us\":");
  jnum(f, j->opt.late_ns / 1e3);
  fprintf(f, ",\"late_share\":");
  jnum(f, j->opt.late_share);
  fprintf(f, ",\"slow_link_ratio\":");
  jnum(f, j->opt.slow_link_ratio);
  fprintf(f, ",\"change_ratio\":");
  jnum(f, j->opt.change_ratio);
  fputc('}', f);
}

/* "alignment": the processes' clocks, as aligned. */
static void alignment_obj(FILE *f, const struct rpt_job *j) {
  fprintf(f, "\"alignment\":{\"available\":%s,\"ops\":%" PRIu64 ",\"components\":%d,\"residual_p50_us\":",
          j->have_starts ? "true" : "false", j->align_ops, j->ncomponents);
  jnum(f, j->resid_p50_ns / 1e3);
  fprintf(f, ",\"residual_p95_us\":");
  jnum(f, j->resid_p95_ns / 1e3);
  fprintf(f, ",\"reference_ns\":%" PRIu64 ",\"drift_min_ppm\":", j->clock_ref_ns);
  jnum(f, j->drift_min_ppm);
  fprintf(f, ",\"drift_max_ppm\":");
  jnum(f, j->drift_max_ppm);
  fprintf(f, ",\"clocks_with_rate\":%d,\"clocks_piecewise\":%d,\"late_threshold_us\":",
          j->clocks_line + j->clocks_windows, j->clocks_windows);
  jnum(f, j->have_starts ? j->late_threshold_ns / 1e3 : j->opt.late_ns / 1e3);
  fprintf(f, ",\"late_threshold_from\":\"%s\"", j->late_threshold_raised ? "residual_p95" : "late_us");
  fprintf(f, ",\"clocks\":[");
  for (int c = 0; c < j->nclocks; c++) {
    const struct rpt_clock *k = &j->clocks[c];
    fprintf(f, "%s{\"hostname\":", c ? "," : "");
    jstr(f, rpt_str(k->host));
    fprintf(f, ",\"pid\":%lld,\"aligned\":%s,\"component\":%d,\"offset_ns\":%" PRId64 ",\"ops\":%" PRIu64
               ",\"residual_p95_us\":",
            k->pid, k->aligned ? "true" : "false", k->component, k->offset_ns, k->ops);
    jnum(f, k->resid_p95_ns / 1e3);
    fprintf(f, ",\"drift_ppm\":");
    jnum(f, k->drift_ppm);
    fprintf(f, ",\"model\":\"%s\"", rpt_clock_model_name(k->model));
    fputc('}', f);
  }
  fprintf(f, "]}");
}

static void slow_node_obj(FILE *f, const struct rpt_slow_node *n, int i) {
  fprintf(f, "%s{\"hostname\":", i ? "," : "");
  jstr(f, rpt_str(n->host));
  fprintf(f, ",\"links\":%d,\"worst_ratio\":", n->links);
  jnum(f, n->worst_ratio);
  fprintf(f, ",\"evidence\":{\"samples\":%" PRIu64 ",\"pairs\":%d,\"pairs_below\":%d,\"agree_low\":", n->samples,
          n->pairs, n->pairs_below);
  jnum(f, n->agree_lo);
  fprintf(f, "},\"confidence\":\"%s\"}", rpt_conf_name(n->conf));
}

static void change_obj(FILE *f, const struct rpt_job *j, const struct rpt_change *c, int i) {
  const struct rpt_group *g = &j->groups[c->group];
  fprintf(f, "%s{\"comm\":\"0x%" PRIx64 "\",\"op\":", i ? "," : "", j->comms[g->comm].id);
  jstr(f, rpt_str(g->op));
  fprintf(f, ",\"bytes\":%" PRIu64 ",\"t_ns\":%" PRIu64 ",\"before_gbs\":", g->bytes, c->t_ns);
  jnum(f, c->before_gbs);
  fprintf(f, ",\"after_gbs\":");
  jnum(f, c->after_gbs);
  fprintf(f, ",\"evidence\":{\"bins_before\":%d,\"bins_after\":%d,\"agree_before\":%d,\"agree_after\":%d,"
             "\"ops_before\":%" PRIu64 ",\"ops_after\":%" PRIu64 ",\"agree_low\":",
          c->bins_before, c->bins_after, c->agree_before, c->agree_after, c->ops_before, c->ops_after);
  jnum(f, c->agree_lo);
  fprintf(f, ",\"p_value\":");
  jnum(f, c->p_value);
  fprintf(f, ",\"tests\":%.0f},\"confidence\":\"%s\"}", c->tests, rpt_conf_name(c->conf));
}

int rpt_write_json(struct rpt_job *j, FILE *f) {
  fputc('{', f);
  inputs_obj(f, j);
  fputc(',', f);
  options_obj(f, j);
  fputc(',', f);
  alignment_obj(f, j);
  fprintf(f, ",\"hangs\":[");
  for (int i = 0, k = 0; i < j->nhangs; i++)
    if (!j->hangs[i].resolved) hang_obj(f, j, &j->hangs[i], !k++);
  fprintf(f, "],\"hangs_resolved\":[");
  for (int i = 0, k = 0; i < j->nhangs; i++)
    if (j->hangs[i].resolved) hang_obj(f, j, &j->hangs[i], !k++);
  fprintf(f, "],\"stragglers\":[");
  for (int i = 0; i < j->nstragglers; i++) straggler_obj(f, j, &j->stragglers[i], i);
  fprintf(f, "],\"missing_stragglers\":[");
  for (int i = 0; i < j->nmissing; i++) missing_obj(f, j, &j->missing[i], i);
  fprintf(f, "],\"slow_links\":[");
  for (int i = 0; i < j->nlinks; i++) link_obj(f, j, &j->links[i], i, false);
  fprintf(f, "],\"slow_nodes\":[");
  for (int i = 0; i < j->nslow_nodes; i++) slow_node_obj(f, &j->slow_nodes[i], i);
  fprintf(f, "],\"changes\":[");
  for (int i = 0; i < j->nchanges; i++) change_obj(f, j, &j->changes[i], i);
  /* what the rules would name on more evidence: the same objects, never in the lists above */
  fprintf(f, "],\"not_enough_data\":{\"stragglers\":[");
  for (int i = 0; i < j->nfew_stragglers; i++) straggler_obj(f, j, &j->few_stragglers[i], i);
  fprintf(f, "],\"slow_links\":[");
  for (int i = 0; i < j->nfew_links; i++) link_obj(f, j, &j->few_links[i], i, true);
  fprintf(f, "]}");
  fprintf(f, ",\"communicators\":[");
  struct cursor at = {0, 0, 0};
  for (int c = 0; c < j->ncomms; c++) {
    if (c) fputc(',', f);
    comm_obj(f, j, c, &at);
  }
  assert(at.g == j->ngroups && at.r == j->nrstats && at.p == j->np2p_stats &&
         "groups and rank stats sorted by communicator (job.h)");
  fprintf(f, "]}\n");
  return ferror(f) ? -1 : 0;
}

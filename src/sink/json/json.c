/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.c - the JSON-lines sink: record and stats lines, field by field (see
 * json.h), and how its lines reach the log file. Its per-communicator state is
 * the communicator's "header" object, built once at attach; its per-drainer
 * state (struct json_batch) the lines of the communicator being drained and
 * their "metadata" object, built once per pass. The lines go to the log file
 * (writer.c): the dump thread's through the writer thread (wqueue.c), which
 * this sink starts and stops with the dump thread, one communicator's at a
 * time; a finalizing or exiting thread's next, after its communicator's lines
 * still queued, ahead of the other communicators' (wqueue.h).
 */
#include "sink/json/json.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/names.h"
#include "core/sampler.h"
#include "core/timer.h"
#include "core/utf8.h"
#include "io/buf.h"
#include "sink/json/writer.h"
#include "sink/json/wqueue.h"
#include "sink/sink.h"
#include "sink/vocab.h"

#ifndef INSPECTOR_GIT_REV
#define INSPECTOR_GIT_REV "unknown"
#endif

#define FLUSH_BYTES (256 * 1024) /* a drainer's lines handed on at this size, not only at the pass's end */

/* by enum ins_timing (a shadow is never written) */
static const char *const k_timing[] = {"kernel_gpu", "kernel_cpu", "collective_cpu", "unverified",
                                       "", "bound"};

/* The sink's state per communicator: its prebuilt "\"header\":{...}". */
struct json_comm {
  int len;
  char text[];
};

static struct json_comm *header(const struct ins_comm *c) {
  struct ins_buf b = {0};
  if (ins_buf_reserve(&b, 160 + ins_buf_jstr_max(c->name))) return NULL;
  ins_buf_lit(&b, "\"header\":{\"id\":\"0x");
  ins_buf_hex(&b, c->id);
  ins_buf_lit(&b, "\",\"comm_name\":");
  ins_buf_jstr(&b, c->name);
  ins_buf_lit(&b, ",\"rank\":");
  ins_buf_i64(&b, c->rank);
  ins_buf_lit(&b, ",\"n_ranks\":");
  ins_buf_i64(&b, c->nranks);
  ins_buf_lit(&b, ",\"nnodes\":");
  ins_buf_i64(&b, c->nnodes);
  ins_buf_lit(&b, "}");
  struct json_comm *h = malloc(sizeof *h + b.len + 1);
  if (h) {
    h->len = (int)b.len;
    memcpy(h->text, b.data, b.len);
    h->text[b.len] = '\0';
  }
  ins_buf_free(&b);
  return h;
}

/*
 * The "metadata" object of every line of the log (records, dump_stats, hang lines): who
 * wrote it and when. Built once per pass (or per hang line) into a buffer of META_CAP, which
 * holds the longest there can be: each string escaped at 6 bytes a byte at most (\u00XX),
 * the host name of config.h, the job id cut to INS_JSON_JOB_ID_MAX, the build's git
 * revision, and 256 bytes of keys and numbers. job_id: NULL, no key (no batch system).
 */
#define META_CAP 4096
_Static_assert(256 + 6 * (sizeof(INSPECTOR_GIT_REV) + sizeof(((struct ins_config *)0)->hostname) +
                          INS_JSON_JOB_ID_MAX) + 3 * 2 < META_CAP,
               "the longest metadata object fits its buffer");

static int metadata(char *meta, int cap, const char *hostname, const char *job_id, long pid,
                    uint64_t ts_us) {
  struct ins_buf b = {0};
  if (ins_buf_reserve(&b, 256 + ins_buf_jstr_max(INSPECTOR_GIT_REV) + ins_buf_jstr_max(hostname) +
                              (job_id ? ins_buf_jstr_max(job_id) : 0)))
    return 0;
  ins_buf_lit(&b, "\"metadata\":{\"inspector_output_format_version\":\"" INS_FORMAT_VERSION "\",\"git_rev\":");
  ins_buf_jstr(&b, INSPECTOR_GIT_REV);
  ins_buf_lit(&b, ",\"rec_mechanism\":\"nccl_profiler_interface\",\"dump_timestamp_us\":");
  ins_buf_u64(&b, ts_us);
  ins_buf_lit(&b, ",\"hostname\":");
  ins_buf_jstr(&b, hostname);
  ins_buf_lit(&b, ",\"pid\":");
  ins_buf_i64(&b, pid);
  if (job_id) {
    ins_buf_lit(&b, ",\"job_id\":");
    ins_buf_jstr(&b, job_id);
  }
  ins_buf_lit(&b, "}");
  int n = b.len < (size_t)cap ? (int)b.len : 0;
  if (n) memcpy(meta, b.data, (size_t)n);
  ins_buf_free(&b);
  return n;
}

static void trace_block(struct ins_buf *b, const char *pfx, size_t pfx_len,
                        const struct ins_record *r, int ts) {
  ins_buf_lit(b, ",\"event_trace_");
  if (ts) ins_buf_lit(b, "ts\":{\""); else ins_buf_lit(b, "sn\":{\"");
  ins_buf_mem(b, pfx, pfx_len);
  if (ts) ins_buf_lit(b, "start_ts\":"); else ins_buf_lit(b, "start_sn\":");
  const struct ins_record_trace *tr = r->trace;
  ins_buf_u64(b, ts ? tr->op_start_us : tr->op_start_sn);
  ins_buf_lit(b, ",\"");
  ins_buf_mem(b, pfx, pfx_len);
  if (ts) ins_buf_lit(b, "stop_ts\":"); else ins_buf_lit(b, "stop_sn\":");
  ins_buf_u64(b, ts ? tr->op_stop_us : tr->op_stop_sn);
  ins_buf_lit(b, ",\"kernel_events\":[");
  for (int i = 0; i < r->nchannels; i++) {
    const struct ins_trace_ch *t = &tr->ch[i];
    if (i) ins_buf_lit(b, ",");
    ins_buf_lit(b, "{\"channel_id\":");
    ins_buf_u64(b, t->channel);
    if (ts) {
      ins_buf_lit(b, ",\"kernel_start_ts\":");
      ins_buf_u64(b, t->start_us);
      ins_buf_lit(b, ",\"kernel_stop_ts\":");
      ins_buf_u64(b, t->stop_us);
      ins_buf_lit(b, ",\"kernel_record_ts\":");
      ins_buf_u64(b, t->record_us);
    } else {
      ins_buf_lit(b, ",\"kernel_start_sn\":");
      ins_buf_u64(b, t->start_sn);
      ins_buf_lit(b, ",\"kernel_stop_sn\":");
      ins_buf_u64(b, t->stop_sn);
      ins_buf_lit(b, ",\"kernel_record_sn\":");
      ins_buf_u64(b, t->record_sn);
    }
    ins_buf_lit(b, "}");
  }
  ins_buf_lit(b, "]}");
}

static int record_line(struct ins_buf *b, const struct ins_comm *c, const struct json_comm *h,
                       const char *meta, int meta_len, const struct ins_record *r, int verbose) {
  size_t need = (size_t)h->len + (size_t)meta_len + 640 + ins_buf_jstr_max(r->func_name) +
                ins_buf_jstr_max(r->datatype) + ins_buf_jstr_max(r->algo) + ins_buf_jstr_max(r->proto) +
                (verbose ? 2 * 160 * (size_t)r->nchannels + 256 : 0);
  if (ins_buf_reserve(b, need)) return -1;
  int coll = r->kind == INS_KIND_COLL;
  const char *pfx = coll ? "coll_" : "p2p_";
  size_t pfx_len = coll ? 5 : 4;

  ins_buf_lit(b, "{");
  ins_buf_mem(b, h->text, (size_t)h->len);
  ins_buf_lit(b, ",");
  ins_buf_mem(b, meta, (size_t)meta_len);
  /* an op whose timestamps could not be verified (NCCL_INSPECTOR_DUMP_UNVERIFIED=1), or
   * its bound (NCCL_INSPECTOR_BOUNDS), is not a record: another key, that readers of
   * records skip (core/judge.h) */
  bool bound = r->timing == INS_TIMING_BOUND;
  if (bound && coll)
    ins_buf_lit(b, ",\"coll_bound\":{\"coll\":");
  else if (bound)
    ins_buf_lit(b, ",\"p2p_bound\":{\"p2p\":");
  else if (r->timing == INS_TIMING_UNVERIFIED && coll)
    ins_buf_lit(b, ",\"coll_unverified\":{\"coll\":");
  else if (r->timing == INS_TIMING_UNVERIFIED)
    ins_buf_lit(b, ",\"p2p_unverified\":{\"p2p\":");
  else if (coll)
    ins_buf_lit(b, ",\"coll_perf\":{\"coll\":");
  else
    ins_buf_lit(b, ",\"p2p_perf\":{\"p2p\":");
  ins_buf_jstr(b, r->func_name);
#define F(name) do { ins_buf_lit(b, ",\""); ins_buf_mem(b, pfx, pfx_len); ins_buf_lit(b, name "\":"); } while (0)
  F("sn");
  ins_buf_u64(b, r->sn);
  if (!coll) {
    F("peer");
    ins_buf_i64(b, r->peer);
  }
  F("msg_size_bytes");
  ins_buf_u64(b, r->bytes);
  F("exec_time_us");
  ins_buf_u64(b, r->exec_ns / 1000);
  F("timing_source");
  ins_buf_jstr(b, k_timing[r->timing <= INS_TIMING_BOUND ? r->timing : 0]);
  if (!bound) { /* a bracket's bandwidth would be a floor only: none */
    double algbw = r->exec_ns ? (double)ins_bw_bytes(r->func, r->bytes, c->nranks) / (double)r->exec_ns : 0;
    F("algobw_gbs");
    ins_buf_f6(b, algbw);
    F("busbw_gbs");
    ins_buf_f6(b, algbw * ins_busbw_factor(r->func, c->nranks));
  }
  F("exec_time_ns");
  ins_buf_u64(b, r->exec_ns);
  F("start_ts_ns");
  ins_buf_u64(b, r->start_ns);
  if (bound) { /* the bracket's end, and the ops that ran in it */
    F("end_ts_ns");
    ins_buf_u64(b, r->start_ns + r->exec_ns);
    F("bound_ops");
    ins_buf_u64(b, r->bound_ops);
  }
  F("datatype");
  ins_buf_jstr(b, r->datatype);
  F("count");
  ins_buf_u64(b, r->count);
  F("nchannels");
  ins_buf_u64(b, r->nchannels);
  F("stale_channels");
  ins_buf_u64(b, r->stale_channels);
  if (coll) {
    ins_buf_lit(b, ",\"coll_algo\":");
    ins_buf_jstr(b, r->algo);
    ins_buf_lit(b, ",\"coll_proto\":");
    ins_buf_jstr(b, r->proto);
  }
#undef F
  if (verbose) {
    trace_block(b, pfx, pfx_len, r, 0);
    trace_block(b, pfx, pfx_len, r, 1);
  }
  ins_buf_lit(b, "}}\n");
  return 0;
}

/* "sampling":{...} inside dump_stats: what was timed (core/sampler.h). */
static void sampling_object(struct ins_buf *b, const struct ins_sample_stats *s) {
  if (s->mode == INS_SAMPLE_TIME) {
    ins_buf_lit(b, ",\"sampling\":{\"mode\":\"time\",\"window_ms\":");
    ins_buf_u64(b, (uint64_t)s->window_ms);
    ins_buf_lit(b, ",\"period_ms\":");
    ins_buf_u64(b, (uint64_t)s->period_ms);
  } else {
    ins_buf_lit(b, ",\"sampling\":{\"mode\":\"groups\",\"every\":");
    ins_buf_u64(b, (uint64_t)s->every);
    ins_buf_lit(b, ",\"burst\":");
    ins_buf_u64(b, (uint64_t)s->burst);
    ins_buf_lit(b, ",\"groups\":");
    ins_buf_u64(b, s->groups);
    ins_buf_lit(b, ",\"groups_timed\":");
    ins_buf_u64(b, s->groups_timed);
  }
  if (s->graph_capture)
    ins_buf_lit(b, ",\"graph_capture\":true");
  else
    ins_buf_lit(b, ",\"graph_capture\":false");
  ins_buf_lit(b, ",\"covered\":");
  ins_buf_f6(b, s->covered);
  ins_buf_lit(b, "}");
}

/* "gpu_timer":{...} inside dump_stats, with the HIP runtime in the process: how the
 * kernel pTimers were read (core/timer.h). */
static void gpu_timer_object(struct ins_buf *b, const struct ins_timer *t) {
  static const char *const unit[] = {"pending", "ns", "ticks"};
  ins_buf_lit(b, ",\"gpu_timer\":{\"unit\":");
  ins_buf_jstr(b, unit[t->unit <= INS_TIMER_TICKS ? t->unit : 0]);
  ins_buf_lit(b, ",\"rate_khz\":");
  ins_buf_u64(b, t->rate_khz);
  ins_buf_lit(b, ",\"basis\":");
  ins_buf_jstr(b, t->unit == INS_TIMER_PENDING ? "pending" : t->measured ? "measured" : "assumed");
  ins_buf_lit(b, ",\"ratio\":");
  ins_buf_f6(b, t->measured ? t->ratio : 0);
  ins_buf_lit(b, "}");
}

/* "coll_unreported":{"Broadcast":56} inside dump_stats, when NCCL left collectives
 * unreported (core/comm.h). */
static void unreported_object(struct ins_buf *b, const struct ins_sink_counts *k) {
  int n = 0;
  for (int f = 0; f < INS_FUNC_COUNT; f++) {
    if (!k->unreported_total[f]) continue;
    if (n++) ins_buf_lit(b, ",\"");
    else ins_buf_lit(b, ",\"coll_unreported\":{\"");
    ins_buf_mem(b, ins_func_name[f], strlen(ins_func_name[f]));
    ins_buf_lit(b, "\":");
    ins_buf_u64(b, k->unreported_total[f]);
  }
  if (n) ins_buf_lit(b, "}");
}

/* ,"<pfx><name>": a member's key, without the comma for an object's first member. pfx: the
 * kind's ("coll_", "p2p_"), for dump_stats' members that come once per kind, or "". */
static void put_key(struct ins_buf *b, bool first, const char *pfx, const char *name) {
  if (first) ins_buf_lit(b, "\"");
  else ins_buf_lit(b, ",\"");
  ins_buf_mem(b, pfx, strlen(pfx));
  ins_buf_mem(b, name, strlen(name));
  ins_buf_lit(b, "\":");
}

/* ,"<pfx><name>":<v> */
static void put_count(struct ins_buf *b, bool first, const char *pfx, const char *name, uint64_t v) {
  put_key(b, first, pfx, name);
  ins_buf_u64(b, v);
}

static int stats_line(struct ins_buf *b, const struct json_comm *h, const char *meta,
                      int meta_len, const struct ins_sink_counts *k) {
  const struct ins_sample_stats *smp = k->sampling;
  if (ins_buf_reserve(b, (size_t)h->len + (size_t)meta_len + 1536)) return -1;
  static const char *const pfx[2] = {"coll_", "p2p_"};
  ins_buf_lit(b, "{");
  ins_buf_mem(b, h->text, (size_t)h->len);
  ins_buf_lit(b, ",");
  ins_buf_mem(b, meta, (size_t)meta_len);
  ins_buf_lit(b, ",\"dump_stats\":{");
  for (int i = 0; i < 2; i++) {
    put_count(b, i == 0, pfx[i], "records_total", k->total[i]);
    put_count(b, false, pfx[i], "records_since_last_dump", k->since[i]);
    put_count(b, false, pfx[i], "dropped_total", k->dropped_total[i]);
    put_count(b, false, pfx[i], "dropped_since_last_dump", k->dropped_since[i]);
    /* ops NCCL reported that left no record, by reason; records without some channels */
    uint64_t untimed = 0;
    for (int r = 0; r < INS_UNTIMED_REASONS; r++) untimed += k->untimed_total[i][r];
    put_count(b, false, pfx[i], "untimed_total", untimed);
    put_key(b, false, pfx[i], "untimed");
    ins_buf_lit(b, "{");
    for (int r = 0; r < INS_UNTIMED_REASONS; r++)
      put_count(b, r == 0, "", ins_untimed_name[r], k->untimed_total[i][r]);
    ins_buf_lit(b, "}");
    put_count(b, false, pfx[i], "partial_total", k->partial_total[i]);
    /* of the unverified, those written as bounds (once there is one: core/judge.h) */
    if (k->bounded_total[i]) put_count(b, false, pfx[i], "bounded_total", k->bounded_total[i]);
  }
  /* steps back of the GPU clock (core/clock_step.h), once there is one */
  if (k->clock_steps) put_count(b, false, "", "clock_steps", k->clock_steps);
  unreported_object(b, k);
  if (smp && smp->mode != INS_SAMPLE_ALL) sampling_object(b, smp);
  if (k->timer && k->timer->rate_khz) gpu_timer_object(b, k->timer);
  ins_buf_lit(b, "}}\n");
  return 0;
}

/* ---- hang detection's lines (sink/hang.h; docs/CONTRACTS.md section 2) ---------- */

/* "coll":"AllReduce","coll_sn":7 or "p2p":"Recv","p2p_sn":3,"p2p_peer":5; `size`: with the
 * op's size, count and datatype. */
static void op_keys(struct ins_buf *b, const struct ins_sink_op *op, bool size) {
  bool coll = op->kind == INS_KIND_COLL;
  const char *pfx = coll ? "coll_" : "p2p_";
  ins_buf_lit(b, "\"");
  ins_buf_mem(b, pfx, strlen(pfx) - 1);
  ins_buf_lit(b, "\":");
  ins_buf_jstr(b, op->func);
  put_count(b, false, pfx, "sn", op->sn);
  if (!coll) {
    ins_buf_lit(b, ",\"p2p_peer\":");
    ins_buf_i64(b, op->peer);
  }
  if (!size) return;
  put_count(b, false, pfx, "msg_size_bytes", op->bytes);
  put_count(b, false, pfx, "count", op->count);
  put_key(b, false, pfx, "datatype");
  ins_buf_jstr(b, op->datatype);
}

/* ,"last_completed":{...} or null */
static void last_object(struct ins_buf *b, const struct ins_sink_last *l) {
  if (!l) {
    ins_buf_lit(b, ",\"last_completed\":null");
    return;
  }
  struct ins_sink_op op = {.kind = l->kind, .func = l->func, .sn = l->sn, .peer = -1};
  bool coll = l->kind == INS_KIND_COLL;
  ins_buf_lit(b, ",\"last_completed\":{");
  /* no peer here: what the record of the op says is enough to find it */
  ins_buf_lit(b, "\"");
  ins_buf_mem(b, coll ? "coll" : "p2p", coll ? 4 : 3);
  ins_buf_lit(b, "\":");
  ins_buf_jstr(b, op.func);
  put_count(b, false, coll ? "coll_" : "p2p_", "sn", op.sn);
  if (l->end_ns) put_count(b, false, "", "end_ts_ns", l->end_ns);
  ins_buf_lit(b, "}");
}

static int hang_line(struct ins_buf *b, const struct json_comm *h, const char *meta, int meta_len,
                     const struct ins_sink_hang *g) {
  const char *f1 = g->what == INS_HANG_IDLE ? NULL : g->op.func;
  const char *f2 = g->last ? g->last->func : NULL;
  size_t need = (size_t)h->len + (size_t)meta_len + 768 + ins_buf_jstr_max(f1) +
                ins_buf_jstr_max(g->op.datatype) + ins_buf_jstr_max(f2);
  if (ins_buf_reserve(b, need)) return -1;
  ins_buf_lit(b, "{");
  ins_buf_mem(b, h->text, (size_t)h->len);
  ins_buf_lit(b, ",");
  ins_buf_mem(b, meta, (size_t)meta_len);
  switch (g->what) {
  case INS_HANG_STUCK:
    ins_buf_lit(b, ",\"hang\":{");
    op_keys(b, &g->op, true);
    ins_buf_lit(b, ",\"in_flight_s\":");
    ins_buf_f6(b, g->in_flight_s);
    put_count(b, false, "", "first_seen_us", g->first_seen_us);
    if (g->channels_started) ins_buf_lit(b, ",\"kernel_started\":true");
    else ins_buf_lit(b, ",\"kernel_started\":false");
    put_count(b, false, "", "channels_started", (uint64_t)g->channels_started);
    put_count(b, false, "", "channels_stopped", (uint64_t)g->channels_stopped);
    put_count(b, false, "", "ops_in_flight", g->ops_in_flight);
    put_count(b, false, "", "repeat", g->repeat);
    last_object(b, g->last);
    break;
  case INS_HANG_RESOLVED:
    ins_buf_lit(b, ",\"hang_resolved\":{");
    op_keys(b, &g->op, false);
    ins_buf_lit(b, ",\"in_flight_s\":");
    ins_buf_f6(b, g->in_flight_s);
    break;
  case INS_HANG_IDLE:
    ins_buf_lit(b, ",\"comm_idle\":{\"idle_s\":");
    ins_buf_f6(b, g->idle_s);
    last_object(b, g->last);
    break;
  }
  ins_buf_lit(b, "}}\n");
  return 0;
}

uint64_t ins_json_count_records(const char *text, size_t len) {
  /* A record line holds "coll_perf":{ or "p2p_perf":{ exactly once; no string
   * value can hold either (its quotes would be escaped). */
  uint64_t n = 0;
  while (len) {
    const char *nl = memchr(text, '\n', len);
    size_t l = nl ? (size_t)(nl - text) + 1 : len;
    if (memmem(text, l, "\"coll_perf\":{", 13) || memmem(text, l, "\"p2p_perf\":{", 12)) n++;
    text += l;
    len -= l;
  }
  return n;
}

/* ---- the sink (sink/sink.h) ------------------------------------------------ */

static const char *g_hostname = "unknown";
static const char *g_dump_dir = "";
/* metadata.job_id (json.h), cleaned and cut at start; NULL: none, no key */
static char g_job_id_text[INS_JSON_JOB_ID_MAX + 1];
static const char *g_job_id;
/* The writer thread takes the dump thread's batches (dump_starting; false if it could not
 * start: the dump thread then writes its own). Set before the dump thread is created, and
 * cleared after it is joined or in a forked child, where it is gone. */
static bool g_queued;

/* One drainer's lines, on their way to the log file. */
struct json_batch {
  struct ins_buf buf;
  uint64_t records; /* record lines in buf (the rest are stats lines): exact loss counts */
  const struct json_comm *owner; /* whose lines buf holds (one communicator's: flush) */
  char meta[META_CAP]; /* the pass's "metadata" object */
  int meta_len;
};

static void json_start(const struct ins_config *cfg) {
  g_hostname = cfg->hostname;
  g_dump_dir = cfg->dump_dir;
  /* an environment variable's bytes: valid UTF-8, cut between characters (json.h) */
  if (cfg->job_id_set) ins_utf8_clean(g_job_id_text, sizeof g_job_id_text, cfg->job_id);
  g_job_id = cfg->job_id_set ? g_job_id_text : NULL;
  ins_writer_configure(cfg->dump_dir, cfg->hostname);
}

static int json_attach(struct ins_comm *c, void **state) {
  return (*state = header(c)) ? 0 : -1;
}

/* No memory for the drainer's state: its records are dropped (json_record fails). */
static void json_begin_pass(struct ins_sink_batch *b) {
  if (!b->state) b->state = calloc(1, sizeof(struct json_batch));
  struct json_batch *j = b->state;
  if (j) j->meta_len = metadata(j->meta, (int)sizeof j->meta, g_hostname, g_job_id, (long)getpid(), b->wall_us);
}

/* The drainer's lines of communicator h (json_comm) to the log file: queued for the
 * writer thread, or, a direct writer's (finalize, exit), written next, after h's lines
 * still queued, even with nothing of its own (wqueue.h): when a finalize returns, every
 * record of its communicator is in the file, those the dump thread took and queued
 * included, and it waited for no other communicator's queued lines. */
static void flush_lines(struct ins_sink_batch *b, const struct json_comm *h) {
  struct json_batch *j = b->state;
  assert(!j || !j->owner || j->owner == h);
  if (!b->direct && g_queued) {
    if (j) ins_wqueue_push(&j->buf, j->records, h); /* nothing when empty */
  } else if (j) {
    ins_wqueue_write_now(h, j->buf.data, j->buf.len, j->records);
    j->buf.len = 0;
  } else {
    ins_wqueue_write_now(h, NULL, 0, 0); /* its lines queued, at least */
  }
  if (j) j->records = 0, j->owner = NULL;
}

static void json_flush(struct ins_sink_batch *b, const struct ins_comm *c, void *state) {
  (void)c;
  flush_lines(b, state);
}

static int json_record(struct ins_sink_batch *b, const struct ins_comm *c, void *state,
                       const struct ins_record *r) {
  struct json_batch *j = b->state;
  if (!j || !j->meta_len || record_line(&j->buf, c, state, j->meta, j->meta_len, r, c->verbose) != 0)
    return -1; /* no metadata (out of memory at begin_pass): no line, counted as dropped */
  assert(!j->owner || j->owner == state); /* one communicator's lines at a time */
  j->owner = state;
  if (r->timing != INS_TIMING_UNVERIFIED && r->timing != INS_TIMING_BOUND) j->records++;
  if (j->buf.len >= FLUSH_BYTES) flush_lines(b, state);
  return 0;
}

static int json_counts(struct ins_sink_batch *b, const struct ins_comm *c, void *state,
                       const struct ins_sink_counts *k) {
  (void)c;
  struct json_batch *j = b->state;
  if (!j || !j->meta_len || stats_line(&j->buf, state, j->meta, j->meta_len, k) != 0) return -1;
  assert(!j->owner || j->owner == state);
  j->owner = state;
  return 0;
}

/* A hang line (sink.h: written at once): after the context's lines queued and this batch's
 * (its records the check drained first), in the file when this returns, without waiting
 * for the next dump. Not a record: it counts as none. */
static int json_hang(struct ins_sink_batch *b, const struct ins_comm *c, void *state,
                     const struct ins_sink_hang *h) {
  (void)c;
  struct json_batch *j = b->state;
  char meta[META_CAP];
  int meta_len = metadata(meta, (int)sizeof meta, g_hostname, g_job_id, (long)getpid(), h->wall_us);
  if (!j || !meta_len || hang_line(&j->buf, state, meta, meta_len, h) != 0) return -1;
  assert(!j->owner || j->owner == state);
  ins_wqueue_write_now(state, j->buf.data, j->buf.len, j->records);
  j->buf.len = 0;
  j->records = 0;
  j->owner = NULL;
  return 0;
}

static void json_detach(struct ins_comm *c, void *state) {
  (void)c;
  free(state);
}

static void json_batch_free(struct ins_sink_batch *b) {
  struct json_batch *j = b->state;
  if (j) ins_buf_free(&j->buf);
  free(j);
  b->state = NULL;
}

/* Lines go to a writer thread, so that a slow write never stops the draining. */
static void json_dump_starting(void) { g_queued = ins_wqueue_start(); }

static void json_dump_stopped(void) {
  ins_wqueue_stop(); /* what the dump thread queued is written first */
  g_queued = false;
}

static void json_shutdown(void) {
  unsigned long long lost = ins_writer_unwritten();
  if (lost)
    ins_notice(NULL, NULL, "%llu records could not be written to %s (see the earlier warning)", lost,
               g_dump_dir); /* records lost: a notice (core/log.h), at exit */
}

static void json_release(void) { ins_writer_close(); }

/* fork() (sink.h): the writer queue's lock, with no batch in writing (the writer thread
 * then holds the log file's lock, writer.c). Not idle by `until`: the lock let go, the
 * child records nothing. */
static int json_fork_prepare(const struct timespec *until) {
  if (ins_wqueue_fork_prepare(until) == 0) return 0;
  ins_wqueue_fork_parent();
  return -1;
}

static void json_fork_parent(void) { ins_wqueue_fork_parent(); }

/* No writer thread in the child until its first own communicator starts its dump thread
 * (dump_starting); the batches queued are the parent's (wqueue.h). */
static void json_fork_child(bool taken) {
  ins_wqueue_fork_child(taken);
  g_queued = false;
}

const struct ins_sink ins_json_sink = {
    .name = "json",
    .start = json_start,
    .attach = json_attach,
    .begin_pass = json_begin_pass,
    .record = json_record,
    .counts = json_counts,
    .end_window = NULL,
    .detach = json_detach,
    .flush = json_flush,
    .batch_free = json_batch_free,
    .dump_starting = json_dump_starting,
    .dump_stopped = json_dump_stopped,
    .shutdown = json_shutdown,
    .release = json_release,
    .fork_prepare = json_fork_prepare,
    .fork_parent = json_fork_parent,
    .fork_child = json_fork_child,
    .hang = json_hang,
};

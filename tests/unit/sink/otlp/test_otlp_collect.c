/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp_collect.c - the OTLP sink's exports (src/sink/otlp/otlp.c) as its
 * exporter takes them, one behaviour per case:
 *
 *   inspector-unit-otlp_collect [CASE...]     (all cases without arguments)
 *
 *   in_turns          1,000 series, bodies of at most 64 KiB, 4 bodies a call:
 *                     an export comes in turns (fresh, then "more" until
 *                     done) and holds every series exactly once, every body
 *                     under the limit, each with one time (its values'), none
 *                     before the body made before it, the per-GPU counters in
 *                     the first body only; after a whole turn a fresh call
 *                     starts from the first series; a series created mid-turn
 *                     is in that turn, at its end
 *   turn_resumes      a turn's next bodies carry the values recorded since its
 *                     first, timed later; a fresh call mid-turn (the last turn
 *                     at stop) begins where making stopped, wraps round, and
 *                     holds every series once with its newest values; the next
 *                     fresh turn begins where that one ended
 *   slow_collector    a collector slower than the export interval (each answer
 *                     10 ms late, the interval 1 ms) and 360 series (more than
 *                     a queueful of bodies per turn): after 2 turns' bodies
 *                     more (and a queueful) it has taken every series, while a
 *                     thread records all the time; each body it took is one
 *                     moment's values, never older than those of a body it took
 *                     before. Until issue 32 the exporter dropped the oldest
 *                     queued bodies at each interval and some series never
 *                     arrived
 *   after_shutdown    a communicator still attached when the sink shuts down
 *                     (and frees its state) records nothing more and does
 *                     not touch freed memory; a second start starts empty
 *   drains_first      a drain (a record) that waits for the sink's lock while an
 *                     export is being encoded gets it before the export's next
 *                     body: the dump thread waits at most one body, never a
 *                     whole export (56k series at 200 ms starved it: half a
 *                     million records dropped). Through the sink's test hook,
 *                     called before each body: at body 1 a helper thread
 *                     records and the hook waits until it waits for the lock;
 *                     at body 2 the record must be done (waited for 5 s at
 *                     most: only a lock held across bodies makes it wait)
 *   publish_race      the exporter thread collecting every millisecond right
 *                     after the sink's start (a collector that takes every
 *                     body at once: ok_collector.h), with nothing else taking
 *                     the sink's lock: the exporter's handle is published so
 *                     that ThreadSanitizer finds no race (this test's point is
 *                     its TSan build, labelled "threads")
 *   exit_counts_undelivered
 *                     a collector (tests/lib/otlp_receiver.py) that takes bodies of
 *                     300 series until some have reached it, then rejects all
 *                     (400); 200 series made after that never reach it. The
 *                     warning at exit counts, of the 500 series, those that never
 *                     reached the collector and those that reached it only in
 *                     earlier exports, and its numbers equal what the receiver
 *                     took (the series named in bodies it answered 200), however
 *                     many bodies it took before the switch
 *   exec_time_point   four records of one series: the nccl.exec_time metric's unit
 *                     is "s", and its point's count, sum, min and max are the
 *                     records' times in seconds
 *
 * The sink is driven through its own table (ins_otlp_sink) with communicators
 * made by hand; bodies are asked for in http/json and read by searching for
 * the attribute values this test gave (each series' communicator name).
 * Nothing is sent anywhere but a port on 127.0.0.1 that nothing listens on, the
 * collector of publish_race, or the receiver of exit_counts_undelivered and
 * slow_collector.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "closed_port.h"
#include "ok_collector.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/record.h"
#include "io/buf.h"
#include "otlp_receiver.h"
#include "sink/otlp/otlp.h"

#define NSERIES 1000
#define BODY_MAX 65536
#define PER_CALL 4

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The sink started as the plugin starts it, with this export interval, exporting to this
 * port on 127.0.0.1 (0: one that nothing listens on, where the last export at shutdown is
 * refused at once), each request bounded by timeout_ms. */
static void sink_start_to(const char *interval_ms, int port, const char *timeout_ms) {
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port ? port : closed_port());
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url, 1);
  setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", 1);
  setenv("OTEL_EXPORTER_OTLP_TIMEOUT", timeout_ms, 1);
  setenv("OTEL_METRIC_EXPORT_INTERVAL", interval_ms, 1);
  char max[32];
  snprintf(max, sizeof max, "%d", BODY_MAX);
  setenv("INSPECTOR_OTLP_MAX_BODY_BYTES", max, 1);
  static struct ins_config cfg; /* the sink keeps no pointer into it, but be safe */
  memset(&cfg, 0, sizeof cfg);
  snprintf(cfg.hostname, sizeof cfg.hostname, "testhost");
  snprintf(cfg.job_id, sizeof cfg.job_id, "unknown");
  snprintf(cfg.cluster, sizeof cfg.cluster, "unknown");
  ins_otlp_sink.start(&cfg);
}

static void sink_start(const char *interval_ms) { sink_start_to(interval_ms, 0, "50"); }

struct comm {
  struct ins_comm *c;
  void *state;
};

/* Communicator i: its name "series-<i>" marks its one series in the bodies. */
static int comm_new(struct comm *k, int i) {
  k->c = calloc(1, sizeof *k->c);
  if (!k->c) return -1;
  k->c->id = 0x1000 + (uint64_t)i;
  k->c->rank = 0, k->c->nranks = 2, k->c->nnodes = 1;
  snprintf(k->c->name, sizeof k->c->name, "series-%05d", i);
  return ins_otlp_sink.attach(k->c, &k->state);
}

static int comm_record(struct comm *k) {
  struct ins_record r;
  memset(&r, 0, sizeof r);
  r.kind = INS_KIND_COLL;
  r.timing = INS_TIMING_KERNEL_GPU;
  r.func = 1; /* INS_FUNC_ALLREDUCE */
  r.func_name = "AllReduce";
  r.algo = "RING", r.proto = "SIMPLE";
  r.bytes = 1 << 20;
  r.exec_ns = 250000;
  return ins_otlp_sink.record(NULL, k->c, k->state, &r);
}

static void comm_free(struct comm *k) {
  ins_otlp_sink.detach(k->c, k->state);
  free(k->c);
}

/* One export's bodies, read: how often each series' name appears, the data points'
 * times, which bodies hold the per-GPU counters. */
struct seen {
  int hits[NSERIES + 1];
  int bodies, over_limit, with_counters, first_with_counters;
  size_t bytes;
  unsigned long long first_time, time; /* the first body's time, the last one's */
  int times_differ;                    /* points of one body with another time than its first */
  int times_back;                      /* bodies timed before the body read before them */
};

static void read_body(struct seen *s, const struct ins_buf *b) {
  char *text = malloc(b->len + 1);
  memcpy(text, b->data, b->len);
  text[b->len] = '\0';
  int series_here = 0;
  for (const char *p = text; (p = strstr(p, "\"series-")); p += 8) {
    int i = atoi(p + 8);
    if (i >= 0 && i <= NSERIES) s->hits[i]++, series_here++;
  }
  unsigned long long body_time = 0;
  for (const char *p = text; (p = strstr(p, "\"timeUnixNano\":")); p += 15) {
    unsigned long long t = strtoull(p + 15 + (p[15] == '"'), NULL, 10);
    if (!body_time) body_time = t;
    else if (t != body_time) s->times_differ++;
  }
  if (body_time < s->time) s->times_back++;
  if (!s->first_time) s->first_time = body_time;
  s->time = body_time;
  if (strstr(text, "nccl.records.dropped")) {
    if (!s->with_counters) s->first_with_counters = s->bodies;
    s->with_counters++;
  }
  /* a body over the limit is allowed only for a series that does not fit alone */
  if (b->len > BODY_MAX && series_here > 4) s->over_limit++;
  s->bodies++;
  s->bytes += b->len;
  free(text);
}

/* Calls collect as the exporter does (fresh, then while it says more); returns the calls. */
static int take_export(struct seen *s, bool fresh, int max_calls) {
  memset(s, 0, sizeof *s);
  int calls = 0;
  bool more = true;
  while (more && calls < max_calls) {
    struct ins_otlp_body bodies[PER_CALL];
    memset(bodies, 0, sizeof bodies);
    int n = ins_otlp_collect(NULL, bodies, PER_CALL, fresh && calls == 0, &more);
    CHECK(n >= 0 && n <= PER_CALL);
    for (int i = 0; i < n; i++) read_body(s, &bodies[i].data);
    for (int i = 0; i < PER_CALL; i++) ins_buf_free(&bodies[i].data);
    calls++;
  }
  CHECK(!more);
  return calls;
}

static int count_hits(const struct seen *s, int from, int to, int want) {
  int bad = 0;
  for (int i = from; i < to; i++) bad += s->hits[i] != want;
  return bad;
}

static void case_in_turns(void) {
  sink_start("3600000"); /* the exporter thread collects only at shutdown */
  static struct comm k[NSERIES + 1];
  for (int i = 0; i < NSERIES; i++) {
    CHECK(comm_new(&k[i], i) == 0);
    CHECK(comm_record(&k[i]) == 0);
  }
  /* each series holds 4 data points (operations, bytes, time and bandwidth histograms),
   * each carrying the series' attributes: its name appears 4 times per export */
  struct seen s;
  int calls = take_export(&s, true, 10000);
  printf("in_turns: %d series in %d bodies over %d calls\n", NSERIES, s.bodies, calls);
  CHECK(s.bodies > 16); /* more than the exporter's queue: the old limit */
  CHECK(calls >= s.bodies / PER_CALL);
  CHECK_EQ_U(count_hits(&s, 0, NSERIES, 4), 0);
  CHECK_EQ_U(s.over_limit, 0);
  CHECK(s.bodies <= 2 * (int)(s.bytes / BODY_MAX) + 2); /* filled, not one series each */
  CHECK_EQ_U(s.times_differ, 0); /* one time per body: that of its values */
  CHECK_EQ_U(s.times_back, 0);
  CHECK(s.time > 0);
  CHECK_EQ_U(s.with_counters, 1);
  CHECK_EQ_U(s.first_with_counters, 0);
  unsigned long long first_time = s.time; /* the export's last body */

  /* asked again without fresh: nothing is open */
  struct ins_otlp_body none[PER_CALL];
  memset(none, 0, sizeof none);
  bool more = true;
  CHECK_EQ_U(ins_otlp_collect(NULL, none, PER_CALL, false, &more), 0);
  CHECK(!more);

  /* a fresh export starts from the first series again; a series created while it is in
   * progress (after its first call) is in it, at its end */
  memset(&s, 0, sizeof s);
  struct ins_otlp_body bodies[PER_CALL];
  memset(bodies, 0, sizeof bodies);
  sleep_ms(2); /* a later time (ns clock) */
  int n = ins_otlp_collect(NULL, bodies, PER_CALL, true, &more);
  CHECK(n == PER_CALL && more);
  for (int i = 0; i < n; i++) read_body(&s, &bodies[i].data);
  for (int i = 0; i < PER_CALL; i++) ins_buf_free(&bodies[i].data);
  CHECK(s.hits[0] == 4 && s.first_with_counters == 0);
  CHECK(comm_new(&k[NSERIES], NSERIES) == 0);
  CHECK(comm_record(&k[NSERIES]) == 0);
  while (more) {
    memset(bodies, 0, sizeof bodies);
    n = ins_otlp_collect(NULL, bodies, PER_CALL, false, &more);
    for (int i = 0; i < n; i++) read_body(&s, &bodies[i].data);
    for (int i = 0; i < PER_CALL; i++) ins_buf_free(&bodies[i].data);
  }
  CHECK_EQ_U(count_hits(&s, 0, NSERIES + 1, 4), 0);
  CHECK(s.first_time > first_time);
  CHECK_EQ_U(s.times_differ, 0);
  CHECK_EQ_U(s.times_back, 0);
  CHECK_EQ_U(s.with_counters, 1);

  for (int i = 0; i <= NSERIES; i++) comm_free(&k[i]);
  ins_otlp_sink.shutdown();
}

static atomic_int g_body, g_helper_done, g_done_by_body2 = -1;
static struct comm *g_helper_comm;
static pthread_t g_helper;

static void *helper_record(void *arg) {
  (void)arg;
  CHECK(comm_record(g_helper_comm) == 0);
  atomic_store(&g_helper_done, 1);
  return NULL;
}

static void body_hook(const atomic_int *drains_waiting) {
  int body = atomic_fetch_add(&g_body, 1);
  if (body == 1) {
    CHECK(pthread_create(&g_helper, NULL, helper_record, NULL) == 0);
    for (int ms = 0; ms < 10000 && atomic_load(drains_waiting) == 0; ms++) sleep_ms(1);
    CHECK(atomic_load(drains_waiting) > 0);
  } else if (body == 2) {
    for (int ms = 0; ms < 5000 && !atomic_load(&g_helper_done); ms++) sleep_ms(1);
    atomic_store(&g_done_by_body2, atomic_load(&g_helper_done));
  }
}

static void case_drains_first(void) {
  sink_start("3600000"); /* the exporter thread collects only at shutdown */
  static struct comm k[NSERIES];
  for (int i = 0; i < NSERIES; i++) {
    CHECK(comm_new(&k[i], i) == 0);
    CHECK(comm_record(&k[i]) == 0);
  }
  g_helper_comm = &k[0];
  ins_otlp_test_hook = body_hook;
  struct seen s;
  take_export(&s, true, 10000);
  ins_otlp_test_hook = NULL;
  CHECK(atomic_load(&g_body) > 2);
  CHECK_EQ_U(atomic_load(&g_done_by_body2), 1);
  pthread_join(g_helper, NULL);
  CHECK_EQ_U(count_hits(&s, 0, NSERIES, 4), 0);
  for (int i = 0; i < NSERIES; i++) comm_free(&k[i]);
  ins_otlp_sink.shutdown();
}

static void case_after_shutdown(void) {
  sink_start("3600000");
  struct comm a, b;
  CHECK(comm_new(&a, 1) == 0);
  CHECK(comm_record(&a) == 0);
  ins_otlp_sink.shutdown(); /* frees the series and the devices a's state points to */
  /* a communicator finalized after the last export: counted nowhere, no crash (ASan) */
  CHECK(comm_record(&a) == 0);
  struct ins_sink_counts counts;
  memset(&counts, 0, sizeof counts);
  counts.dropped_since[0] = 3;
  CHECK(ins_otlp_sink.counts(NULL, a.c, a.state, &counts) == 0);
  struct ins_otlp_body bodies[PER_CALL];
  memset(bodies, 0, sizeof bodies);
  bool more = true;
  CHECK_EQ_U(ins_otlp_collect(NULL, bodies, PER_CALL, true, &more), 0); /* nothing to export */
  CHECK(!more);
  /* a communicator attached after shutdown is kept (not an error) and records nothing */
  CHECK(comm_new(&b, 2) == 0);
  CHECK(comm_record(&b) == 0);

  /* started again (a unit test may; the plugin starts once per load): empty, and a's
   * old state, attached before the shutdown, stays inert */
  sink_start("3600000");
  CHECK(comm_record(&a) == 0);
  struct seen s;
  take_export(&s, true, 100);
  CHECK_EQ_U(s.hits[1], 0);
  CHECK_EQ_U(s.hits[2], 0);
  CHECK_EQ_U(s.with_counters, 1);
  comm_free(&a);
  comm_free(&b);
  ins_otlp_sink.shutdown();
}

static void case_publish_race(void) {
  int port = ok_collector_start(); /* one that refused would make one export and wait */
  CHECK(port > 0);
  sink_start_to("1", port, "50");
  sleep_ms(100); /* the exporter collects (and reads its own handle) about 100 times */
  ins_otlp_sink.shutdown();
  struct ins_otlp_body bodies[PER_CALL];
  memset(bodies, 0, sizeof bodies);
  bool more = true;
  CHECK_EQ_U(ins_otlp_collect(NULL, bodies, PER_CALL, true, &more), 0); /* shut down: nothing */
  CHECK(!more);
}

/* ---- the warning at exit against what a collector took ---- */

#define MAX_MSGS 64 /* the sink's own messages ("OTLP: ..."), not the exporter's */
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_msgs[MAX_MSGS][1100];
static int g_nmsgs;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  char text[1100];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[log] %s\n", text);
  pthread_mutex_lock(&g_log_lock);
  if (g_nmsgs < MAX_MSGS && strstr(text, "OTLP: ")) snprintf(g_msgs[g_nmsgs++], sizeof g_msgs[0], "%s", text);
  pthread_mutex_unlock(&g_log_lock);
}

static int count_msgs(const char *s) {
  int n = 0;
  pthread_mutex_lock(&g_log_lock);
  for (int i = 0; i < g_nmsgs; i++) n += strstr(g_msgs[i], s) != NULL;
  pthread_mutex_unlock(&g_log_lock);
  return n;
}

#define REQUESTS_MAX 20000
/* The series (by number) named in the bodies the receiver answered 200, into taken: those
 * of the requests from *next on (each body read once); how many series in all. */
static int series_taken(struct receiver *r, bool *taken, int nseries, int *next) {
  static struct rec q[REQUESTS_MAX];
  int n = receiver_requests(r, q, REQUESTS_MAX);
  for (int i = 0; i < n; i++) {
    if (q[i].seq < *next) continue;
    *next = q[i].seq + 1;
    if (strcmp(q[i].action, "200")) continue;
    char *body = receiver_file(r, q[i].seq, "body", NULL);
    for (const char *p = body; p && (p = strstr(p, "\"series-")); p += 8) {
      int k = atoi(p + 8);
      if (k >= 0 && k < nseries) taken[k] = true;
    }
    free(body);
  }
  int got = 0;
  for (int k = 0; k < nseries; k++) got += taken[k];
  return got;
}

static void case_exit_counts_undelivered(void) {
  enum { EARLY = 300, LATE = 200, ALL = EARLY + LATE };
  ins_log_set_logger(logger);
  struct receiver r;
  CHECK(receiver_start(&r, "{}")); /* 200 to everything */
  sink_start_to("300", r.port, "10000"); /* the last export's deadline: 3 s */
  static struct comm k[ALL];
  static bool taken[ALL];
  int next = 1;
  for (int i = 0; i < EARLY; i++) {
    CHECK(comm_new(&k[i], i) == 0);
    CHECK(comm_record(&k[i]) == 0);
  }
  /* until some early series have reached the collector (how many depends on its speed:
   * the numbers below are the receiver's, whatever they are) */
  int got = 0;
  for (time_t until = time(NULL) + RECEIVER_WAIT_S; (got = series_taken(&r, taken, ALL, &next)) == 0 &&
                                                     time(NULL) < until;)
    receiver_sleep_ms(20);
  CHECK(got > 0);
  /* from now on the collector rejects every body: the late series never reach it, and
   * the last export at exit is delivered to no series */
  CHECK(receiver_control(&r, "{\"default\": \"400\"}"));
  for (int i = EARLY; i < ALL; i++) {
    CHECK(comm_new(&k[i], i) == 0);
    CHECK(comm_record(&k[i]) == 0);
  }
  for (int i = 0; i < ALL; i++) comm_free(&k[i]);
  ins_otlp_sink.shutdown();
  /* what the receiver took, before the switch (after it, nothing): early series only */
  got = series_taken(&r, taken, ALL, &next);
  int late_taken = 0;
  for (int i = EARLY; i < ALL; i++) late_taken += taken[i];
  CHECK(got > 0 && got <= EARLY);
  CHECK_EQ_U(late_taken, 0);
  printf("exit_counts_undelivered: the collector took %d of the %d series\n", got, ALL);
  char want[200];
  snprintf(want, sizeof want, "of the %d series, %d never reached the collector (it has none of their values) "
           "and %d reached it only in earlier exports", ALL, ALL - got, got);
  CHECK_EQ_U(count_msgs(want), 1);
  CHECK_EQ_U(count_msgs("was not delivered whole"), 1);
  receiver_stop(&r);
  ins_log_detach();
}

/* ---- a turn's values, and a turn begun mid-way ---- */

/* The nccl.operations points of a JSON body, into out: for each, its series (by number),
 * its time and its value. Returns how many. */
struct point {
  int series;
  unsigned long long time;
  long long ops;
};

static int ops_points(const char *text, struct point *out, int max) {
  const char *m = strstr(text, "\"name\":\"nccl.operations\"");
  if (!m) return 0;
  const char *end = strstr(m + 1, "{\"name\":\""); /* the next metric */
  int n = 0;
  for (const char *p = m; n < max && (p = strstr(p, "\"series-")) && (!end || p < end); p += 8) {
    const char *t = strstr(p, "\"timeUnixNano\":"), *v = strstr(p, "\"asInt\":");
    if (!t || !v) break;
    t += 15, v += 8;
    out[n++] = (struct point){atoi(p + 8), strtoull(t + (*t == '"'), NULL, 10), strtoll(v + (*v == '"'), NULL, 10)};
  }
  return n;
}

/* One call's bodies read: for each series the value it carried (-1: not there; an error
 * if twice), the first series of the first body, the lowest and highest times, whether
 * the counters were there. */
struct call {
  long long ops[NSERIES];
  int twice, first_series, bodies;
  unsigned long long tmin, tmax;
  bool counters;
};

static bool take_call(struct call *c, bool fresh) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < NSERIES; i++) c->ops[i] = -1;
  c->first_series = -1;
  struct ins_otlp_body bodies[PER_CALL];
  memset(bodies, 0, sizeof bodies);
  bool more = false;
  int n = ins_otlp_collect(NULL, bodies, PER_CALL, fresh, &more);
  static struct point pts[NSERIES];
  for (int b = 0; b < n; b++) {
    char *text = malloc(bodies[b].data.len + 1);
    memcpy(text, bodies[b].data.data, bodies[b].data.len);
    text[bodies[b].data.len] = '\0';
    if (strstr(text, "nccl.records.dropped")) c->counters = true;
    int np = ops_points(text, pts, NSERIES);
    for (int i = 0; i < np; i++) {
      if (pts[i].series < 0 || pts[i].series >= NSERIES) continue;
      if (c->first_series < 0) c->first_series = pts[i].series;
      c->twice += c->ops[pts[i].series] >= 0;
      c->ops[pts[i].series] = pts[i].ops;
      if (!c->tmin || pts[i].time < c->tmin) c->tmin = pts[i].time;
      if (pts[i].time > c->tmax) c->tmax = pts[i].time;
    }
    free(text);
  }
  c->bodies = n;
  for (int i = 0; i < PER_CALL; i++) ins_buf_free(&bodies[i].data);
  return more;
}

/* The series a call held, as [lo, hi] when they are one run; -1 when they are not. */
static int held_run(const struct call *c, int *lo, int *hi) {
  *lo = -1, *hi = -1;
  for (int i = 0; i < NSERIES; i++)
    if (c->ops[i] >= 0) {
      if (*lo < 0) *lo = i;
      else if (*hi != i - 1) return -1;
      *hi = i;
    }
  return *lo < 0 ? -1 : 0;
}

static void case_turn_resumes(void) {
  sink_start("3600000"); /* the exporter thread collects only at shutdown */
  static struct comm k[NSERIES];
  for (int i = 0; i < NSERIES; i++) {
    CHECK(comm_new(&k[i], i) == 0);
    CHECK(comm_record(&k[i]) == 0);
  }
  static struct call c1, c2, c;
  CHECK(take_call(&c1, true)); /* a turn's first queueful: more to come */
  int lo1, hi1, lo2, hi2;
  CHECK(held_run(&c1, &lo1, &hi1) == 0 && lo1 == 0 && c1.counters && !c1.twice);
  for (int i = 0; i < NSERIES; i++) CHECK(comm_record(&k[i]) == 0); /* every series: 2 */
  sleep_ms(2); /* a later time (ns clock) */
  CHECK(take_call(&c2, false)); /* the turn's next bodies */
  CHECK(held_run(&c2, &lo2, &hi2) == 0 && lo2 == hi1 + 1 && !c2.counters && !c2.twice);
  int stale = 0;
  for (int i = lo2; i <= hi2; i++) stale += c2.ops[i] != 2; /* the newest at their making */
  CHECK_EQ_U(stale, 0);
  CHECK(c2.tmin > c1.tmax); /* and timed then, not at the turn's first body */
  printf("turn_resumes: the first call held series %d-%d, the next %d-%d\n", lo1, hi1, lo2, hi2);

  /* a fresh turn now (as the last one at stop): from series hi2 + 1 to the last, then from
   * the first to hi2, every series once, with its newest values */
  for (int i = 0; i < NSERIES; i++) CHECK(comm_record(&k[i]) == 0); /* every series: 3 */
  static long long ops[NSERIES];
  int order_breaks = 0, prev = -1, calls = 0, twice = 0;
  for (int i = 0; i < NSERIES; i++) ops[i] = -1;
  bool more = true, counters_first = false;
  for (bool fresh = true; more && calls < 1000; fresh = false, calls++) {
    more = take_call(&c, fresh);
    if (fresh) {
      CHECK_EQ_U(c.first_series, hi2 + 1);
      counters_first = c.counters;
    } else {
      CHECK(!c.counters);
    }
    for (int i = 0; i < NSERIES; i++) {
      if (c.ops[i] < 0) continue;
      twice += ops[i] >= 0;
      ops[i] = c.ops[i];
    }
    /* in the order made: one run up to the last series, then from the first */
    for (int i = 0, s0 = c.first_series; i < NSERIES; i++) {
      int x = (s0 + i) % NSERIES;
      if (c.ops[x] < 0) continue;
      if (prev >= 0 && x != (prev + 1) % NSERIES) order_breaks++;
      prev = x;
    }
  }
  CHECK(counters_first);
  CHECK(!more);
  CHECK_EQ_U(twice, 0);
  CHECK_EQ_U(order_breaks, 0);
  CHECK_EQ_U(prev, hi2); /* it ended where it began */
  int wrong = 0;
  for (int i = 0; i < NSERIES; i++) wrong += ops[i] != 3;
  CHECK_EQ_U(wrong, 0);
  /* the next fresh turn begins where that one ended: the round goes on */
  take_call(&c, true);
  CHECK_EQ_U(c.first_series, hi2 + 1);
  for (int i = 0; i < NSERIES; i++) comm_free(&k[i]);
  ins_otlp_sink.shutdown();
}

/* ---- a collector slower than the interval ---- */

#define SLOW_SERIES 360
#define TURN_MAX 30 /* bodies per turn this test allows (360 series: about 21); checked */
/* Answered requests after every series exists within which each must have arrived: the
 * rest of the turn in progress and the whole next one (otlp_export.c), and one more for
 * the request in flight when counting began. */
#define SLOW_WAIT (2 * TURN_MAX + 1)

struct slow_body {
  int seq;
  bool counters;
  int nseries, times;       /* series it held, distinct times among its points */
  long long lo, hi;         /* the moments its values fit (below) */
};

/* The recorder records series 0..S-1 in order, round after round, from one thread: at any
 * moment series i has had R + (i < p ? 1 : 0) records, where P = R * S + p (0 <= p < S)
 * is how many were made in all, and P only grows. A point of series i with value v fits
 * the moments (v - 1) * S + i + 1 <= P <= v * S + i: the body's points, read under one
 * hold of the sink's lock, must fit one moment together. */
static void fit_point(struct slow_body *b, int i, long long v) {
  long long lo = (v - 1) * SLOW_SERIES + i + 1, hi = v * SLOW_SERIES + i;
  if (!b->nseries || lo > b->lo) b->lo = lo;
  if (!b->nseries || hi < b->hi) b->hi = hi;
  b->nseries++;
}

static void case_slow_collector(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"default\": \"slow:0.01\"}")); /* every answer 10 ms late */
  sink_start_to("1", r.port, "10000");
  static struct comm k[SLOW_SERIES];
  for (int i = 0; i < SLOW_SERIES; i++) {
    CHECK(comm_new(&k[i], i) == 0);
    CHECK(comm_record(&k[i]) == 0);
  }
  /* every series exists: from here on, SLOW_WAIT answers bring every one of them; the
   * recorder goes on meanwhile, a round at a time */
  int n0 = receiver_count(&r), rounds = 1, failed = 0;
  for (time_t until = time(NULL) + RECEIVER_WAIT_S; receiver_count(&r) < n0 + SLOW_WAIT && time(NULL) < until;
       rounds++) {
    for (int i = 0; i < SLOW_SERIES; i++) failed += comm_record(&k[i]) != 0;
    sleep_ms(5); /* a round every 5 ms or so: values change between bodies */
  }
  CHECK_EQ_U(failed, 0);
  CHECK(receiver_count(&r) >= n0 + SLOW_WAIT);

  static struct rec q[REQUESTS_MAX];
  static struct slow_body b[REQUESTS_MAX];
  static struct point pts[SLOW_SERIES * 2];
  static bool taken[SLOW_SERIES];
  int n = receiver_requests(&r, q, REQUESTS_MAX), nb = 0, judged = 0, not_one_moment = 0, went_back = 0,
      times_differ = 0, longest_turn = 0, turn = -1;
  long long moment = 0; /* the earliest moment consistent with every body before */
  for (int j = 0; j < n; j++) {
    if (strncmp(q[j].action, "slow:", 5)) continue; /* answered 200, late */
    char *text = receiver_file(&r, q[j].seq, "body", NULL);
    if (!text) continue;
    struct slow_body *x = &b[nb++];
    *x = (struct slow_body){.seq = q[j].seq, .counters = strstr(text, "nccl.records.dropped") != NULL};
    int np = ops_points(text, pts, SLOW_SERIES * 2);
    unsigned long long t0 = np ? pts[0].time : 0;
    for (int i = 0; i < np; i++) {
      if (pts[i].series < 0 || pts[i].series >= SLOW_SERIES) continue;
      fit_point(x, pts[i].series, pts[i].ops);
      times_differ += pts[i].time != t0;
      if (q[j].seq > n0 && q[j].seq <= n0 + SLOW_WAIT) taken[pts[i].series] = true;
    }
    free(text);
    if (x->nseries) {
      judged++;
      not_one_moment += x->lo > x->hi;
      if (x->lo > moment) moment = x->lo;
      went_back += moment > x->hi; /* its values older than a body taken before */
    }
    /* turns: each begins with the body holding the per-GPU counters */
    if (x->counters) {
      if (turn >= 0 && nb - 1 - turn > longest_turn) longest_turn = nb - 1 - turn;
      turn = nb - 1;
    }
  }
  int got = 0;
  for (int i = 0; i < SLOW_SERIES; i++) got += taken[i];
  printf("slow_collector: %d rounds recorded; %d answers, %d after all %d series existed, which took %d "
         "of them; the longest whole turn %d bodies\n", rounds, nb, n - n0, SLOW_SERIES, got, longest_turn);
  CHECK_EQ_U(got, SLOW_SERIES);
  CHECK(longest_turn > 16 && longest_turn <= TURN_MAX); /* more than a queueful; the bound holds */
  CHECK(judged >= SLOW_WAIT);
  CHECK_EQ_U(not_one_moment, 0);
  CHECK_EQ_U(went_back, 0);
  CHECK_EQ_U(times_differ, 0);
  CHECK(receiver_control(&r, "{}")); /* the last export at exit goes fast */
  for (int i = 0; i < SLOW_SERIES; i++) comm_free(&k[i]);
  ins_otlp_sink.shutdown();
  receiver_stop(&r);
}


/* Issue 40, item 7: an exec-time point holds the records' times in the metric's declared
 * unit. One series, four records of 40, 1.5, 3000 and 250 us (its least not first, its
 * greatest not last): the nccl.exec_time metric says "s", and its point has count 4, sum
 * 3291.5 us, min 1.5 us, max 3000 us, in seconds. */
static double json_number_after(const char *text, const char *key) {
  const char *p = strstr(text, key);
  if (!p) return -1;
  p += strlen(key);
  return strtod(p + (*p == '"'), NULL); /* a 64-bit integer is a string in OTLP JSON */
}

static void case_exec_time_point(void) {
  sink_start("3600000");
  struct comm k;
  CHECK(comm_new(&k, 7) == 0);
  static const uint64_t ns[] = {40000, 1500, 3000000, 250000};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    struct ins_record r;
    memset(&r, 0, sizeof r);
    r.kind = INS_KIND_COLL;
    r.timing = INS_TIMING_KERNEL_GPU;
    r.func = 1; /* INS_FUNC_ALLREDUCE */
    r.func_name = "AllReduce";
    r.algo = "RING", r.proto = "SIMPLE";
    r.bytes = 1 << 20;
    r.exec_ns = ns[i];
    CHECK(ins_otlp_sink.record(NULL, k.c, k.state, &r) == 0);
  }
  struct ins_otlp_body bodies[PER_CALL];
  memset(bodies, 0, sizeof bodies);
  bool more = true;
  int n = ins_otlp_collect(NULL, bodies, PER_CALL, true, &more);
  CHECK(n == 1 && !more);
  char *text = n >= 1 ? malloc(bodies[0].data.len + 1) : NULL;
  if (text) {
    memcpy(text, bodies[0].data.data, bodies[0].data.len);
    text[bodies[0].data.len] = '\0';
    const char *m = strstr(text, "{\"name\":\"nccl.exec_time\"");
    CHECK(m != NULL);
    if (m) {
      /* this metric's text only: up to the next metric's name */
      char *end = strstr(m + 1, "{\"name\":");
      if (end) *end = '\0';
      CHECK(strstr(m, ",\"unit\":\"s\",") != NULL);
      CHECK(strstr(m, "\"series-00007\"") != NULL);
      CHECK_EQ_U(json_number_after(m, "\"count\":"), 4);
      double sum = json_number_after(m, "\"sum\":"), min = json_number_after(m, "\"min\":"),
             max = json_number_after(m, "\"max\":");
      printf("exec_time_point: sum %.17g min %.17g max %.17g\n", sum, min, max);
      CHECK(sum > 0.0032915 * (1 - 1e-12) && sum < 0.0032915 * (1 + 1e-12));
      CHECK(min == 1.5e-6);
      CHECK(max == 3e-3);
    }
  }
  free(text);
  for (int i = 0; i < PER_CALL; i++) ins_buf_free(&bodies[i].data);
  comm_free(&k);
  ins_otlp_sink.shutdown();
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {{"in_turns", case_in_turns}, {"turn_resumes", case_turn_resumes},
               {"slow_collector", case_slow_collector}, {"after_shutdown", case_after_shutdown},
               {"drains_first", case_drains_first},
               {"publish_race", case_publish_race},
               {"exit_counts_undelivered", case_exit_counts_undelivered},
               {"exec_time_point", case_exec_time_point}};
  setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    bool run = argc < 2;
    for (int a = 1; a < argc; a++) run |= !strcmp(argv[a], cases[i].name);
    if (run) cases[i].fn();
  }
  return check_report("otlp_collect");
}

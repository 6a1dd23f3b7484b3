/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_report_scan.c - inspector-report's fast line scanner (tools/report/scan.c) reads every
 * line exactly as the jansson reference does, and reads our plugin's lines itself.
 *
 * The rule under test is stated without the code: rpt_parse_line (scanner, jansson when the
 * scanner is unsure) and rpt_parse_line_reference (jansson alone) give the same struct
 * rpt_line, field for field and bit for bit, for any bytes. It is checked on every line of
 * the recorded logs (tests/data: live, straggler, graph, and the validation logs inside
 * validation/validation-data.tgz), on hand-written lines that probe the scanner's limits, on
 * every one-byte change and cut of a few real lines, and on bandwidths of every width. A
 * fast path that quietly gave up on everything would pass that rule, so the test also
 * counts: the scanner itself must read at least 99% of the plugin's records and statistics
 * lines. The values of the newer fields (host, pid, channels, timing source, algo) are
 * written out by hand from the lines.
 *
 * Usage: inspector-unit-report_scan DATA_DIR (tests/data).
 */
#include <glob.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "fields.h"
#include "parse.h"
#include "report_same_line.h"

/* ---- the rule ---- */

static int g_shown; /* mismatches printed so far: a broken scanner should not flood the log */

/* Checks the rule on one line; returns whether the scanner read it itself. */
static bool both_paths(const char *line, size_t len, struct rpt_line *fast) {
  struct rpt_line ref;
  struct rpt_fields f;
  rpt_parse_line(line, len, fast);
  rpt_parse_line_reference(line, len, &ref);
  bool same = same_line(fast, &ref);
  CHECK(same);
  if (!same && g_shown++ < 5)
    fprintf(stderr, "  differs (kinds %d/%d, why '%s' / '%s'): %.*s\n", fast->kind, ref.kind,
            fast->why, ref.why, (int)(len < 300 ? len : 300), line);
  return rpt_scan(line, len, &f);
}

static bool both(const char *line, struct rpt_line *fast) {
  return both_paths(line, strlen(line), fast);
}

/* ---- the fixtures ---- */

struct text {
  char *p;
  size_t n, cap;
};

static void text_add(struct text *t, const char *p, size_t n) {
  if (t->n + n + 1 > t->cap) {
    t->cap = (t->n + n + 1) * 2;
    t->p = realloc(t->p, t->cap);
    if (!t->p) abort();
  }
  memcpy(t->p + t->n, p, n);
  t->n += n;
}

static bool gunzip(const char *path, struct text *t) {
  gzFile z = gzopen(path, "rb");
  if (!z) return false;
  char buf[1 << 16];
  int n;
  while ((n = gzread(z, buf, sizeof buf)) > 0) text_add(t, buf, (size_t)n);
  gzclose(z);
  return n == 0;
}

/* The *.log members of a tar archive held in tar[0..n) (ustar: 512-byte blocks). */
static void tar_logs(const struct text *tar, struct text *out) {
  for (size_t at = 0; at + 512 <= tar->n;) {
    const char *h = tar->p + at;
    if (!h[0]) break; /* the end-of-archive blocks */
    char name[101] = {0}, size[13] = {0};
    memcpy(name, h, 100);
    memcpy(size, h + 124, 12);
    size_t sz = (size_t)strtoull(size, NULL, 8), nl = strlen(name);
    at += 512;
    if ((h[156] == '0' || h[156] == 0) && nl > 4 && !strcmp(name + nl - 4, ".log") &&
        at + sz <= tar->n)
      text_add(out, tar->p + at, sz);
    at += (sz + 511) / 512 * 512;
  }
}

struct tally {
  size_t lines, records, scanned_records;
};

static void run_lines(const struct text *t, struct tally *c) {
  for (size_t pos = 0; pos < t->n;) {
    const char *nl = memchr(t->p + pos, '\n', t->n - pos);
    size_t end = nl ? (size_t)(nl - t->p) + 1 : t->n;
    struct rpt_line l;
    bool scanned = both_paths(t->p + pos, end - pos, &l);
    c->lines++;
    if (l.kind == RPT_RECORD || l.kind == RPT_STATS) {
      c->records++;
      c->scanned_records += scanned;
    }
    pos = end;
  }
}

static void test_fixtures(const char *data) {
  char pat[4096];
  struct tally c = {0};
  glob_t g;
  snprintf(pat, sizeof pat, "%s/*/*.log.gz", data);
  CHECK(glob(pat, 0, NULL, &g) == 0 && g.gl_pathc >= 6);
  for (size_t i = 0; i < g.gl_pathc; i++) {
    struct text t = {0};
    CHECK(gunzip(g.gl_pathv[i], &t));
    run_lines(&t, &c);
    free(t.p);
  }
  globfree(&g);
  struct text tar = {0}, logs = {0};
  snprintf(pat, sizeof pat, "%s/validation/validation-data.tgz", data);
  CHECK(gunzip(pat, &tar));
  tar_logs(&tar, &logs);
  CHECK(logs.n > 1000000); /* its two logs, 1.2 MB each */
  run_lines(&logs, &c);
  free(tar.p);
  free(logs.p);
  printf("fixtures: %zu lines, %zu records and statistics lines, %zu (%.2f%%) read by the scanner\n",
         c.lines, c.records, c.scanned_records,
         c.records ? 100.0 * (double)c.scanned_records / (double)c.records : 0.0);
  CHECK(c.records > 3500);
  CHECK(c.scanned_records * 100 >= c.records * 99);
}

/* ---- lines written for the test ---- */

#define HDR "\"header\":{\"id\":\"0x7f8c496ae9f661\",\"comm_name\":\"DP Group 0\",\"rank\":2,\"n_ranks\":8,\"nnodes\":1}"
#define META "\"metadata\":{\"inspector_output_format_version\":\"v4.0\",\"git_rev\":\"9019a1912-dirty\",\"rec_mechanism\":\"nccl_profiler_interface\",\"dump_timestamp_us\":1748030377748202,\"hostname\":\"example-hostname\",\"pid\":1639453}"
/* NVIDIA's plugin: no exec_time_ns, start_ts_ns, nchannels, stale_channels, algo, proto */
static const char nvidia[] =
  "{" HDR "," META ",\"coll_perf\":{\"coll\":\"AllReduce\",\"coll_sn\":1407,\"coll_msg_size_bytes\":17179869184,\"coll_exec_time_us\":61974,\"coll_timing_source\":\"kernel_gpu\",\"coll_algobw_gbs\":277.210914,\"coll_busbw_gbs\":485.119099}}";
/* ours */
static const char ours[] =
  "{\"header\":{\"id\":\"0x302683ee5bc11ff7\",\"comm_name\":\"unknown\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"metadata\":{\"inspector_output_format_version\":\"v4.0\",\"git_rev\":\"39e07aedd-dirty\",\"rec_mechanism\":\"nccl_profiler_interface\",\"dump_timestamp_us\":1796059425822204,\"hostname\":\"vm\",\"pid\":1282},\"coll_perf\":{\"coll\":\"AllReduce\",\"coll_sn\":1,\"coll_msg_size_bytes\":8192,\"coll_exec_time_us\":15,\"coll_timing_source\":\"kernel_gpu\",\"coll_algobw_gbs\":0.517172,\"coll_busbw_gbs\":0.517172,\"coll_exec_time_ns\":15840,\"coll_start_ts_ns\":1796059425344785216,\"coll_datatype\":\"ncclFloat32\",\"coll_count\":2048,\"coll_nchannels\":3,\"coll_stale_channels\":1,\"coll_algo\":\"RING\",\"coll_proto\":\"LL\"}}";
static const char ours_p2p[] =
  "{\"header\":{\"id\":\"0xc3e00779656c9d1\",\"comm_name\":\"unknown\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"metadata\":{\"inspector_output_format_version\":\"v4.0\",\"git_rev\":\"39e07aedd-dirty\",\"rec_mechanism\":\"nccl_profiler_interface\",\"dump_timestamp_us\":1796059426119664,\"hostname\":\"vm\",\"pid\":1282},\"p2p_perf\":{\"p2p\":\"Recv\",\"p2p_sn\":1,\"p2p_peer\":1,\"p2p_msg_size_bytes\":8192,\"p2p_exec_time_us\":6,\"p2p_timing_source\":\"kernel_gpu\",\"p2p_algobw_gbs\":1.326425,\"p2p_busbw_gbs\":1.326425,\"p2p_exec_time_ns\":6176,\"p2p_start_ts_ns\":1796059425128451392,\"p2p_datatype\":\"ncclFloat32\",\"p2p_count\":2048,\"p2p_nchannels\":1,\"p2p_stale_channels\":0}}";
static const char ours_stats[] =
  "{\"header\":{\"id\":\"0x311c727cb8effac3\",\"comm_name\":\"unknown\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"metadata\":{\"inspector_output_format_version\":\"v4.0\",\"git_rev\":\"37f6666b0\",\"rec_mechanism\":\"nccl_profiler_interface\",\"dump_timestamp_us\":1796025812862812,\"hostname\":\"vm\",\"pid\":895},\"dump_stats\":{\"coll_records_total\":62,\"coll_records_since_last_dump\":62,\"coll_dropped_total\":3,\"coll_dropped_since_last_dump\":0,\"p2p_records_total\":0,\"p2p_records_since_last_dump\":0,\"p2p_dropped_total\":0,\"p2p_dropped_since_last_dump\":0,\"sampling\":{\"mode\":\"time\",\"window_ms\":1000,\"period_ms\":30000,\"graph_capture\":false,\"covered\":0.033333}}}";

/* The hang lines (docs/CONTRACTS.md section 2), as the plugin writes them: after a record's
 * header and metadata, so that the prefix cache meets them too. */
#define OURS_START "{\"header\":{\"id\":\"0x302683ee5bc11ff7\",\"comm_name\":\"unknown\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"metadata\":{\"inspector_output_format_version\":\"v4.0\",\"git_rev\":\"39e07aedd-dirty\",\"rec_mechanism\":\"nccl_profiler_interface\",\"dump_timestamp_us\":1796059425822204,\"hostname\":\"vm\",\"pid\":1282}"
static const char ours_hang[] =
  OURS_START ",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"coll_msg_size_bytes\":1048576,\"coll_count\":262144,\"coll_datatype\":\"ncclFloat32\",\"in_flight_s\":12.500000,\"first_seen_us\":1748030377748202,\"kernel_started\":true,\"channels_started\":8,\"channels_stopped\":0,\"ops_in_flight\":1,\"repeat\":0,\"last_completed\":{\"coll\":\"AllGather\",\"coll_sn\":6,\"end_ts_ns\":1796009766205403104}}}";
static const char ours_hang_p2p[] =
  OURS_START ",\"hang\":{\"p2p\":\"Recv\",\"p2p_sn\":3,\"p2p_peer\":1,\"p2p_msg_size_bytes\":4096,\"p2p_count\":1024,\"p2p_datatype\":\"ncclFloat32\",\"in_flight_s\":2.250000,\"first_seen_us\":1748030377748202,\"kernel_started\":false,\"channels_started\":0,\"channels_stopped\":0,\"ops_in_flight\":3,\"repeat\":2,\"last_completed\":null}}";
static const char ours_resolved[] =
  OURS_START ",\"hang_resolved\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":40.100000}}";
/* The bound of an op the plugin left out (NCCL_INSPECTOR_BOUNDS): not a record, counted apart */
static const char ours_bound[] =
  OURS_START ",\"coll_bound\":{\"coll\":\"AllReduce\",\"coll_sn\":20,\"coll_msg_size_bytes\":4194304,\"coll_exec_time_us\":135,\"coll_timing_source\":\"bound\",\"coll_exec_time_ns\":135368,\"coll_start_ts_ns\":1796130930711354976,\"coll_end_ts_ns\":1796130930711490344,\"coll_bound_ops\":1,\"coll_datatype\":\"ncclFloat32\",\"coll_count\":1048576,\"coll_nchannels\":64,\"coll_stale_channels\":0,\"coll_algo\":\"RING\",\"coll_proto\":\"SIMPLE\"}}";
static const char ours_bound_p2p[] =
  OURS_START ",\"p2p_bound\":{\"p2p\":\"Send\",\"p2p_sn\":4,\"p2p_peer\":1,\"p2p_msg_size_bytes\":1048576,\"p2p_exec_time_us\":9,\"p2p_timing_source\":\"bound\",\"p2p_exec_time_ns\":9001,\"p2p_start_ts_ns\":1,\"p2p_end_ts_ns\":9002,\"p2p_bound_ops\":3,\"p2p_datatype\":\"ncclFloat32\",\"p2p_count\":262144,\"p2p_nchannels\":2,\"p2p_stale_channels\":0}}";
static const char ours_idle[] =
  OURS_START ",\"comm_idle\":{\"idle_s\":301.500000,\"last_completed\":{\"p2p\":\"Send\",\"p2p_sn\":11,\"end_ts_ns\":1796009766205403104}}}";

static void test_key_table(void) {
  /* each object's fields are one range, the ranges tile the table, lengths are right */
  int next = 0;
  for (int o = 0; o < RPT_NOBJ; o++) {
    CHECK(rpt_objs[o].first == next && rpt_objs[o].end > rpt_objs[o].first);
    for (int k = rpt_objs[o].first; k < rpt_objs[o].end; k++) {
      CHECK(rpt_keys[k].obj == o);
      CHECK(rpt_keys[k].key ? rpt_keys[k].len == strlen(rpt_keys[k].key) : rpt_keys[k].len == 0);
    }
    next = rpt_objs[o].end;
  }
  CHECK(next == RPT_NFIELD);
}

static void test_vendor_shape(void) {
  struct rpt_line l;
  CHECK(both(nvidia, &l));
  CHECK(l.kind == RPT_RECORD);
  CHECK_EQ_U(l.hdr.comm, 0x7f8c496ae9f661ull);
  CHECK(l.hdr.rank == 2 && l.hdr.nranks == 8 && l.hdr.nnodes == 1);
  CHECK_STR(l.hdr.name, "DP Group 0");
  CHECK_STR(l.hdr.host, "example-hostname");
  CHECK(l.hdr.pid == 1639453);
  CHECK_EQ_U(l.hdr.dump_us, 1748030377748202ull);
  CHECK_STR(l.rec.op, "AllReduce");
  CHECK_EQ_U(l.rec.sn, 1407);
  CHECK_EQ_U(l.rec.bytes, 17179869184ull);
  CHECK_EQ_U(l.rec.exec_ns, 61974000ull); /* us only: times 1000 */
  CHECK_EQ_U(l.rec.start_ns, 0);
  CHECK(l.rec.timing == RPT_TIMING_KERNEL_GPU);
  CHECK(l.rec.busbw == 485.119099 && l.rec.algbw == 277.210914);
  CHECK(l.rec.nchannels == -1 && l.rec.stale_channels == 0 && !l.rec.stale);
  CHECK(l.rec.peer == -1 && !l.rec.p2p);
  CHECK_STR(l.rec.algo, "");
  CHECK_STR(l.rec.proto, "");
  /* the same record with its keys in another order, extra fields and verbose objects */
  CHECK(both("{\"coll_perf\":{\"coll_busbw_gbs\":485.119099,\"extra\":[1,{\"a\":null}],"
             "\"coll_sn\":1407,\"coll\":\"AllReduce\",\"coll_timing_source\":\"kernel_gpu\","
             "\"event_trace_sn\":{\"coll_start_sn\":1,\"kernel_events\":[{\"ch\":0,\"sn\":[2,3]}]},"
             "\"event_trace_ts\":{\"coll_start_ts\":1.5,\"k\":[[true,false],[]]},"
             "\"coll_msg_size_bytes\":17179869184,\"coll_algobw_gbs\":277.210914,"
             "\"coll_exec_time_us\":61974}," META ",\"future\":{\"x\":\"y\"}," HDR "}", &l));
  CHECK(l.kind == RPT_RECORD && l.rec.sn == 1407 && l.rec.exec_ns == 61974000);
  CHECK(l.hdr.pid == 1639453 && l.rec.algbw == 277.210914);
  /* RCCL's: v4.3 with fields of its own */
  CHECK(both("{\"header\":{\"id\":\"0xab\",\"comm_name\":\"\",\"rank\":1,\"n_ranks\":4,\"nnodes\":1,"
             "\"local_rank\":1},\"metadata\":{\"inspector_output_format_version\":\"v4.3\","
             "\"dump_timestamp_us\":1,\"hostname\":\"mi300\",\"pid\":7,\"gpu\":{\"uuid\":\"x\"}},"
             "\"p2p_perf\":{\"p2p\":\"Send\",\"p2p_sn\":4,\"p2p_peer\":3,\"p2p_msg_size_bytes\":1,"
             "\"p2p_exec_time_us\":2,\"p2p_timing_source\":\"kernel_cpu\",\"p2p_algobw_gbs\":0.0,"
             "\"p2p_busbw_gbs\":0}}", &l));
  CHECK(l.kind == RPT_RECORD && l.rec.p2p && l.rec.peer == 3 && l.rec.busbw == 0);
  CHECK(l.rec.timing == RPT_TIMING_KERNEL_CPU && l.rec.algbw == 0);
}

static void test_our_fields(void) {
  struct rpt_line l;
  CHECK(both(ours, &l));
  CHECK(l.kind == RPT_RECORD);
  CHECK_EQ_U(l.rec.exec_ns, 15840); /* ns wins over us */
  CHECK_EQ_U(l.rec.start_ns, 1796059425344785216ull);
  CHECK(l.rec.nchannels == 3 && l.rec.stale_channels == 1 && l.rec.stale);
  CHECK_STR(l.rec.algo, "RING");
  CHECK_STR(l.rec.proto, "LL");
  CHECK_STR(l.hdr.host, "vm");
  CHECK(both(ours_p2p, &l));
  CHECK(l.kind == RPT_RECORD && l.rec.p2p && l.rec.peer == 1 && l.rec.nchannels == 1);
  CHECK_STR(l.rec.algo, "");
  CHECK(both(ours_stats, &l));
  CHECK(l.kind == RPT_STATS && l.stats.written[0] == 62 && l.stats.dropped[0] == 3);
  CHECK(l.stats.sampling.present && l.stats.sampling.time_mode);
  CHECK(l.stats.sampling.a == 1000 && l.stats.sampling.b == 30000);
  CHECK(l.stats.sampling.covered == 0.033333);
  CHECK(l.hdr.pid == 895 && l.hdr.dump_us == 1796025812862812ull);
  /* bound lines: their own kind, the header read; with a record's body too: rejected */
  CHECK(both(ours_bound, &l));
  CHECK(l.kind == RPT_BOUND && l.hdr.rank == 0 && l.hdr.comm == 0x302683ee5bc11ff7ull);
  CHECK(both(ours_bound_p2p, &l));
  CHECK(l.kind == RPT_BOUND);
  CHECK(both(OURS_START ",\"coll_bound\":{},\"coll_perf\":{\"coll\":\"A\"}}", &l));
  CHECK(l.kind == RPT_REJECTED);
}

/* A record with the given coll_perf tail (after the required fields) and metadata. */
static void rec(char *buf, size_t size, const char *meta, const char *tail) {
  snprintf(buf, size,
           "{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"metadata\":%s,"
           "\"coll_perf\":{\"coll\":\"AllGather\",\"coll_sn\":7,\"coll_msg_size_bytes\":64,"
           "\"coll_exec_time_us\":12,\"coll_busbw_gbs\":1.5%s}}",
           meta, tail);
}

static void test_context_fields(void) {
  char b[2048];
  struct rpt_line l;
  static const struct {
    const char *src;
    enum rpt_timing want;
  } timings[] = {{"", RPT_TIMING_ABSENT},
                 {",\"coll_timing_source\":\"kernel_gpu\"", RPT_TIMING_KERNEL_GPU},
                 {",\"coll_timing_source\":\"kernel_cpu\"", RPT_TIMING_KERNEL_CPU},
                 {",\"coll_timing_source\":\"collective_cpu\"", RPT_TIMING_COLLECTIVE_CPU},
                 {",\"coll_timing_source\":\"kernel_gpu \"", RPT_TIMING_OTHER},
                 {",\"coll_timing_source\":\"\"", RPT_TIMING_OTHER},
                 {",\"coll_timing_source\":3", RPT_TIMING_OTHER}};
  for (size_t i = 0; i < sizeof timings / sizeof timings[0]; i++) {
    rec(b, sizeof b, "{}", timings[i].src);
    CHECK(both(b, &l) && l.kind == RPT_RECORD && l.rec.timing == timings[i].want);
  }
  /* absent context fields */
  rec(b, sizeof b, "{}", "");
  CHECK(both(b, &l) && l.kind == RPT_RECORD);
  CHECK(l.hdr.pid == -1 && l.hdr.dump_us == 0 && !l.hdr.host[0] && !strcmp(l.hdr.name, "unknown"));
  CHECK(l.rec.nchannels == -1 && l.rec.algbw == -1 && !l.rec.algo[0]);
  /* ill-formed ones read as absent and never reject */
  rec(b, sizeof b, "{\"hostname\":7,\"pid\":-3,\"dump_timestamp_us\":\"now\"}",
      ",\"coll_nchannels\":-1,\"coll_algobw_gbs\":-2.5,\"coll_algo\":[\"RING\"],\"coll_proto\":null");
  CHECK(both(b, &l) && l.kind == RPT_RECORD);
  CHECK(l.hdr.pid == -1 && l.hdr.dump_us == 0 && !l.hdr.host[0]);
  CHECK(l.rec.nchannels == -1 && l.rec.algbw == -1 && !l.rec.algo[0] && !l.rec.proto[0]);
  rec(b, sizeof b, "[\"vm\"]", ",\"coll_nchannels\":2147483648,\"coll_algobw_gbs\":\"1\"");
  CHECK(both(b, &l) && l.kind == RPT_RECORD && l.hdr.pid == -1 && l.rec.nchannels == -1);
  CHECK(l.rec.algbw == -1);
  /* an integer bandwidth, a huge stale count (held at INT_MAX) */
  rec(b, sizeof b, "{}", ",\"coll_algobw_gbs\":3,\"coll_stale_channels\":9000000000");
  CHECK(both(b, &l) && l.kind == RPT_RECORD && l.rec.algbw == 3.0);
  CHECK(l.rec.stale && l.rec.stale_channels == INT_MAX);
  /* the host name is cut at 63 bytes, never inside a character; algo and proto at 15 bytes */
  rec(b, sizeof b,
      "{\"hostname\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xC3\xA9\"}",
      ",\"coll_algo\":\"COLLNET_DIRECT_LONG\",\"coll_proto\":\"\xE6\x97\xA5\"");
  CHECK(both(b, &l) && l.kind == RPT_RECORD);
  CHECK(strlen(l.hdr.host) == 62 && l.hdr.host[61] == 'a');
  CHECK_STR(l.rec.algo, "COLLNET_DIRECT_");
  CHECK_STR(l.rec.proto, "\xE6\x97\xA5");
  rec(b, sizeof b,
      "{\"hostname\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xC3\xA9\"}", "");
  CHECK(both(b, &l) && strlen(l.hdr.host) == 63);
}

/* Lines at and past the scanner's limits: the rule holds; `fast` says which side of them. */
static void test_edges(void) {
  static const struct {
    const char *line;
    int fast; /* 1: the scanner reads it, 0: it gives up, -1: either */
  } cases[] = {
    /* escapes and Unicode */
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"DP \\\"grp\\\" \\\\ 1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"AllReduce\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"\\u00e9\\ud83d\\ude00\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"AllReduce\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"\\u0000\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"AllReduce\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"\\ud800\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1}}", 0},
    {"{\"he\\u0061der\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"Gruppe \xC3\x84 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"AllReduce\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 1},
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"bad \xC3\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"overlong \xC0\xAF\"}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"overlong \xE0\x80\xAF\"}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"surrogate \xED\xA0\x80\"}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"big \xF4\x90\x80\x80\"}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"comm_name\":\"max \xF4\x8F\xBF\xBF \xEF\xBF\xBF\"}}", 1},
    {"{\"x\":\"tab\there\"}", 0},
    {"{\"x\":1}\xC3\xA9", 0},
    /* numbers: exponents, too many digits, int64's edges, the fast path's edges */
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":4.85e2}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1E400}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1e-400}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":99999999999999999999,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":9223372036854775807,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 1},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":9223372036854775808,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":-9223372036854775808,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 1},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":-9223372036854775809,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":1.0,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 1},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":-0,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":-0.0}}", 1},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":9007199254740.992}}", 1},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":9007199254740.993}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":0.30000000000000004}}", 0},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":0.0000000000000000001}}", 1},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":0.00000000000000000001}}", 0},
    {"{\"x\":01}", 0}, {"{\"x\":1.}", 0}, {"{\"x\":.5}", 0}, {"{\"x\":-}", 0}, {"{\"x\":+1}", 0},
    {"{\"x\":0x10}", 0}, {"{\"x\":1.5.3}", 0}, {"{\"x\":NaN}", 0}, {"{\"x\":-Infinity}", 0},
    {"{\"x\":-0.0,\"y\":0,\"z\":-1.25}", 1},
    /* literals */
    {"{\"x\":true,\"y\":false,\"z\":null}", 1}, {"{\"x\":tru}", 0}, {"{\"x\":nulll}", 0},
    {"{\"x\":true1}", 0}, {"{\"x\":True}", 0},
    /* duplicates: jansson keeps the last */
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{\"coll\":\"A\",\"coll_sn\":1,\"coll_sn\":-1,\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":1,\"coll_busbw_gbs\":1}}", 0},
    {"{\"header\":1,\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"dump_stats\":{}}", 0},
    {"{\"x\":1,\"x\":2,\"dump_stats\":{},\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1}}", 1},
    /* shapes */
    {"{\"header\":[],\"metadata\":\"m\",\"coll_perf\":5}", 1},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"coll_perf\":{},\"p2p_perf\":{}}", 1},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"dump_stats\":{\"sampling\":{\"mode\":\"groups\",\"every\":3,\"burst\":1,\"covered\":1}}}", 1},
    {"{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":2,\"nnodes\":1},\"dump_stats\":{\"sampling\":{\"mode\":\"groups\",\"every\":3,\"burst\":1,\"covered\":1.000001}}}", 1},
    {"{\"t\":1000001000,\"tid\":101,\"cb\":\"init\",\"ver\":5}", 1},
    {"{}", 1}, {"{ }", 1}, {"[1,2,3]", 0}, {"\"str\"", 0}, {"42", 0}, {"null", 0},
    {"{\"a\":[]}", 1}, {"{\"a\":[ ]}", 1}, {"{\"a\":[1,]}", 0}, {"{\"a\":{,}}", 0},
    {" \t{ \"header\" : { \"id\" : \"0x1\" , \"rank\" : 0 , \"n_ranks\" : 2 , \"nnodes\" : 1 } ,\n\r \"dump_stats\" : { } } \t\r\n", 1},
    {"{\"a\":1}x", 0}, {"{\"a\":1}}", 0}, {"{\"a\":1} {\"b\":2}", 0}, {"{\"a\":1,}", 0},
    {"{\"a\"1}", 0}, {"{\"a\":}", 0}, {"{a:1}", 0}, {"{\"a\":1", 0}, {"{\"a", 0}, {"{", 0},
    {"", -1}, {" \t\r\n", -1},
    /* nesting: verbose objects are shallow; deep ones are jansson's */
    {"{\"a\":{\"b\":[{\"c\":[[1,2],{\"d\":{}}]}]}}", 1},
    {"{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}", 0},
  };
  struct rpt_line l;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    bool scanned = both(cases[i].line, &l);
    if (cases[i].fast >= 0 && scanned != (cases[i].fast == 1)) {
      fprintf(stderr, "  scanner %s: %s\n", scanned ? "read" : "gave up on", cases[i].line);
      CHECK(scanned == (cases[i].fast == 1));
    }
  }
  /* NUL bytes: inside a string, between tokens */
  static const char nul1[] = "{\"header\":{\"id\":\"0x1\",\"comm_name\":\"a\0b\"}}";
  static const char nul2[] = "{\"x\":1,\0\"y\":2}";
  CHECK(!both_paths(nul1, sizeof nul1 - 1, &l) && l.kind == RPT_REJECTED);
  CHECK(!both_paths(nul2, sizeof nul2 - 1, &l) && l.kind == RPT_REJECTED);
}

/* Every cut, and every one-byte change to a set of telling bytes, of a few real lines. */
static void test_mutations(void) {
  static const char *const lines[] = {nvidia, ours, ours_p2p, ours_stats, ours_hang, ours_hang_p2p, ours_idle};
  static const char bytes[] = {'"', '\\', '0', '9', '-', '.', 'e', '{', '}', '[', ']', ',', ':',
                               ' ', '\n', 't', 'x', 0, (char)0x80, (char)0xC3, (char)0xFF};
  char buf[1024];
  struct rpt_line l;
  size_t scanned = 0, total = 0;
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    size_t n = strlen(lines[i]);
    CHECK(n < sizeof buf);
    for (size_t cut = 0; cut <= n; cut++) both_paths(lines[i], cut, &l);
    for (size_t at = 0; at < n; at++) {
      for (size_t b = 0; b < sizeof bytes; b++) {
        memcpy(buf, lines[i], n);
        buf[at] = bytes[b];
        scanned += both_paths(buf, n, &l);
        total++;
      }
      memcpy(buf, lines[i], at); /* the byte removed */
      memcpy(buf + at, lines[i] + at + 1, n - at - 1);
      both_paths(buf, n - 1, &l);
    }
  }
  /* most changes keep valid JSON the scanner reads: the changes test it, not jansson alone */
  CHECK(scanned * 4 > total);
}

/*
 * Bandwidths of every width: 1 to 10 integer digits and 1 to 9 decimals, so both sides of
 * the scanner's exact bound (digits <= 2^53) are crossed; bit for bit either way.
 */
static void test_bandwidth_digits(void) {
  char b[2048], num[32];
  struct rpt_line l;
  uint64_t x = 88172645463325252ull; /* xorshift64 */
  size_t scanned = 0, total = 0;
  for (; total < 200000; total++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int idig = 1 + (int)(x % 10), frac = 1 + (int)((x >> 8) % 9), n = 0;
    uint64_t r = x >> 16;
    for (int d = 0; d < idig + frac; d++) {
      if (d == idig) num[n++] = '.';
      int digit = (int)(r % 10);
      r = r / 10 ? r / 10 : x * 2654435761u;
      num[n++] = (char)('0' + (d == 0 && idig > 1 && digit == 0 ? 1 : digit));
    }
    num[n] = 0;
    char tail[64];
    snprintf(tail, sizeof tail, ",\"coll_algobw_gbs\":%s", num);
    rec(b, sizeof b, "{}", tail);
    bool fast = both(b, &l);
    scanned += fast;
    CHECK(l.kind == RPT_RECORD && l.rec.algbw == strtod(num, NULL));
  }
  CHECK(scanned * 2 > total && scanned < total);
}

/* ---- the prefix cache (scan.c): a line after another with the same start ---- */

/* f and g hold the same fields, value for value; g's strings lie in [line, line + len). */
static bool same_fields(const struct rpt_fields *f, const struct rpt_fields *g, const char *line, size_t len) {
  bool same = true;
  for (int k = 0; k < RPT_NFIELD; k++) {
    if (f->type[k] != g->type[k]) {
      fprintf(stderr, "  field %d: type %d against %d\n", k, f->type[k], g->type[k]);
      same = false;
      continue;
    }
    if (f->type[k] == RPT_T_STRING) {
      same &= f->v[k].len == g->v[k].len && memcmp(f->v[k].s, g->v[k].s, f->v[k].len) == 0;
      same &= g->v[k].s >= line && g->v[k].s + g->v[k].len <= line + len; /* not the older line's */
    } else if (f->type[k] == RPT_T_INT) {
      same &= f->v[k].i == g->v[k].i;
    } else if (f->type[k] == RPT_T_REAL) {
      same &= memcmp(&f->v[k].d, &g->v[k].d, sizeof(double)) == 0;
    }
  }
  return same;
}

/* Scans `second` right after `first` with the cache, and alone without it: the same answer
 * and, when read, the same fields. Returns the answer. */
static bool after(const char *first, const char *second) {
  struct rpt_fields f, g;
  size_t n = strlen(second);
  char *copy = malloc(n); /* a buffer of its own: strings must point into it */
  CHECK(copy != NULL);
  if (!copy) return false;
  memcpy(copy, second, n);
  rpt_scan_prefix_cache(false);
  bool alone = rpt_scan(copy, n, &f);
  rpt_scan_prefix_cache(true);
  CHECK(rpt_scan(first, strlen(first), &g));
  bool cached = rpt_scan(copy, n, &g);
  CHECK_EQ_U(cached, alone);
  if (alone && cached) CHECK(same_fields(&f, &g, copy, n));
  struct rpt_line fast;
  both_paths(copy, n, &fast); /* and the line as a whole, against jansson */
  free(copy);
  return cached;
}

/* ours with one piece replaced (the first occurrence of `from`), into buf */
static const char *edit(char *buf, size_t size, const char *line, const char *from, const char *to) {
  const char *at = strstr(line, from);
  CHECK(at != NULL);
  if (!at) return line;
  snprintf(buf, size, "%.*s%s%s", (int)(at - line), line, to, at + strlen(from));
  return buf;
}

static void test_prefix_cache(void) {
  char b[4096];
  /* the same header and metadata, another record: read from the cache, the record's own */
  CHECK(after(ours, edit(b, sizeof b, ours, "\"coll_sn\":1,", "\"coll_sn\":2,")));
  /* another kind of record after the same start */
  char p2p[4096];
  edit(p2p, sizeof p2p, ours_p2p, "\"id\":\"0xc3e00779656c9d1\"", "\"id\":\"0x302683ee5bc11ff7\"");
  edit(b, sizeof b, p2p, "\"dump_timestamp_us\":1796059426119664", "\"dump_timestamp_us\":1796059425822204");
  CHECK(after(ours, b));
  /* one byte of the start differs, the length the same: nothing of the cache is taken */
  CHECK(after(ours, edit(b, sizeof b, ours, "\"rank\":0", "\"rank\":1")));
  CHECK(after(ours, edit(b, sizeof b, ours, "\"pid\":1282", "\"pid\":1283")));
  CHECK(after(ours, edit(b, sizeof b, ours, "\"hostname\":\"vm\"", "\"hostname\":\"wm\"")));
  /* the same start, then what the scanner is unsure of: unsure either way */
  CHECK(!after(ours, edit(b, sizeof b, ours, "\"coll_sn\":1,", "\"coll_sn\":1e0,")));
  CHECK(!after(ours, edit(b, sizeof b, ours, "\"coll_perf\":{", "\"header\":{},\"coll_perf\":{"))); /* twice */
  CHECK(!after(ours, edit(b, sizeof b, ours, "\"coll_proto\":\"LL\"}}", "\"coll_proto\":\"LL\"}")));
  /* the start alone, and the start cut short */
  const char *cut = strstr(ours, "\"coll_perf\"");
  snprintf(b, sizeof b, "%.*s", (int)(cut - ours), ours);
  CHECK(!after(ours, b));
  snprintf(b, sizeof b, "%.*s", (int)(cut - ours) - 1, ours);
  CHECK(!after(ours, b));
  /* blanks after the start's comma, and a line that is only an object's first member */
  CHECK(after(ours, edit(b, sizeof b, ours, ",\"coll_perf\"", ",  \"coll_perf\"")));
  CHECK(after(ours, "{\"coll_perf\":{}}") == after("{\"coll_perf\":{}}", "{\"coll_perf\":{}}"));
  /* the cache is per thread and follows the last line read: a line read once, and again */
  CHECK(after(ours_stats, ours_stats));
}

/* metadata.job_id (docs/CONTRACTS.md section 2), a key the report does not read: a line with
 * it reads as the same line without it; by the scanner itself when the value needs no escape
 * (non-ASCII included), by jansson when it has one (the scanner is unsure of any backslash).
 * The prefix cache keeps it with the rest of the metadata. */
#define JOB(v) "\"pid\":1282,\"job_id\":\"" v "\"}"
#define JOB_ESC "a\\\"b\\\\c\\u0001\\n\xc3\xa9\xef\xbf\xbd" /* a"b\c, ^A, newline, e-acute, U+FFFD */
static void test_job_id(void) {
  char job[4096], esc[4096], utf[4096], b[4096];
  struct rpt_line plain, l;
  CHECK(both(ours, &plain));
  edit(job, sizeof job, ours, "\"pid\":1282}", JOB("4242"));
  edit(esc, sizeof esc, ours, "\"pid\":1282}", JOB(JOB_ESC));
  edit(utf, sizeof utf, ours, "\"pid\":1282}", JOB("4242.pbs-\xc3\xa9"));
  CHECK(both(job, &l)); /* the scanner's */
  CHECK(same_line(&l, &plain));
  CHECK(both(utf, &l));
  CHECK(same_line(&l, &plain));
  CHECK(!both(esc, &l)); /* jansson's */
  CHECK(l.kind == RPT_RECORD && same_line(&l, &plain));
  /* the value's UTF-8 is checked as any string's: an invalid byte rejects the line, both ways */
  CHECK(!both(edit(b, sizeof b, ours, "\"pid\":1282}", JOB("42\xff")), &l));
  CHECK(l.kind == RPT_REJECTED);
  /* the other kinds of line, their metadata with it */
  CHECK(both(edit(b, sizeof b, ours_stats, "\"pid\":895}", "\"pid\":895,\"job_id\":\"4242\"}"), &l));
  CHECK(l.kind == RPT_STATS && l.stats.written[0] == 62);
  CHECK(both(edit(b, sizeof b, ours_hang, "\"pid\":1282}", JOB("4242")), &l));
  CHECK(l.kind == RPT_HANG && l.hang.op.sn == 7);
  CHECK(!both(edit(b, sizeof b, ours_hang, "\"pid\":1282}", JOB(JOB_ESC)), &l));
  CHECK(l.kind == RPT_HANG && l.hang.op.sn == 7);
  /* the prefix cache: the next record of the same job from it; another job's (a start of the
   * same length) scanned whole; an escaped one jansson's after any line (the cache keeps no
   * prefix of a line the scanner is unsure of) */
  CHECK(after(job, edit(b, sizeof b, job, "\"coll_sn\":1,", "\"coll_sn\":2,")));
  CHECK(after(utf, edit(b, sizeof b, utf, "\"coll_sn\":1,", "\"coll_sn\":2,")));
  CHECK(after(job, edit(b, sizeof b, job, "4242", "4243")));
  CHECK(after(job, ours) && after(ours, job));
  CHECK(!after(job, esc));
  CHECK(!after(ours, esc));
}

static void test_hang_lines(void) {
  struct rpt_line l;
  CHECK(both(ours_hang, &l)); /* the scanner reads each itself */
  CHECK(l.kind == RPT_HANG && l.hdr.rank == 0 && l.hdr.dump_us == 1796059425822204ull);
  CHECK(l.hang.op.present && !l.hang.op.p2p && l.hang.op.sn == 7);
  CHECK_STR(l.hang.op.op, "AllReduce");
  CHECK(l.hang.bytes == 1048576 && l.hang.in_flight_s == 12.5 && l.hang.first_seen_us == 1748030377748202ull);
  CHECK(l.hang.kernel_started && l.hang.channels_started == 8 && l.hang.channels_stopped == 0);
  CHECK(l.hang.ops_in_flight == 1 && l.hang.repeat == 0 && l.hang.peer == -1);
  CHECK(l.hang.last.present && !l.hang.last.p2p && l.hang.last.sn == 6);
  CHECK_STR(l.hang.last.op, "AllGather");
  CHECK_EQ_U(l.hang.last.end_ns, 1796009766205403104ull);
  CHECK(both(ours_hang_p2p, &l));
  CHECK(l.kind == RPT_HANG && l.hang.op.p2p && l.hang.op.sn == 3 && l.hang.peer == 1 && l.hang.bytes == 4096);
  CHECK_STR(l.hang.op.op, "Recv");
  CHECK(!l.hang.kernel_started && l.hang.ops_in_flight == 3 && l.hang.repeat == 2 && !l.hang.last.present);
  CHECK(both(ours_resolved, &l));
  CHECK(l.kind == RPT_HANG_RESOLVED && l.hang.op.sn == 7 && l.hang.in_flight_s == 40.1);
  CHECK(both(ours_idle, &l));
  CHECK(l.kind == RPT_IDLE && l.hang.idle_s == 301.5 && l.hang.last.present && l.hang.last.p2p);
  CHECK(l.hang.last.sn == 11 && !strcmp(l.hang.last.op, "Send"));
  /* what rejects a hang line, and what reads as absent (context) */
  static const struct {
    const char *body;
    enum rpt_kind want;
  } cases[] = {
    {",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":1,\"kernel_started\":false}}", RPT_HANG},
    {",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":1.5}}", RPT_REJECTED},
    {",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":1.5,\"kernel_started\":null}}", RPT_REJECTED},
    {",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"kernel_started\":true}}", RPT_REJECTED},
    {",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":-0.5,\"kernel_started\":true}}", RPT_REJECTED},
    {",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":1e300,\"kernel_started\":true}}", RPT_REJECTED},
    {",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":281474976710657,\"in_flight_s\":1,\"kernel_started\":true}}", RPT_REJECTED},
    {",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7.5,\"in_flight_s\":1,\"kernel_started\":true}}", RPT_REJECTED},
    {",\"hang\":{\"coll\":\"AllReduce\",\"p2p\":\"Send\",\"coll_sn\":7,\"p2p_sn\":1,\"in_flight_s\":1,\"kernel_started\":true}}", RPT_REJECTED},
    {",\"hang\":{\"p2p\":\"Send\",\"p2p_sn\":1,\"p2p_peer\":2,\"in_flight_s\":1,\"kernel_started\":true}}", RPT_REJECTED},
    {",\"hang\":{\"p2p\":\"Send\",\"coll_sn\":1,\"in_flight_s\":1,\"kernel_started\":true}}", RPT_REJECTED},
    {",\"hang\":{\"coll\":7,\"coll_sn\":1,\"in_flight_s\":1,\"kernel_started\":true}}", RPT_REJECTED},
    {",\"hang\":\"stuck\"}", RPT_REJECTED},
    {",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":1,\"kernel_started\":true,\"first_seen_us\":-1,\"repeat\":\"0\",\"ops_in_flight\":2147483648,\"coll_msg_size_bytes\":1125899906842625,\"last_completed\":{\"coll\":\"AllGather\",\"coll_sn\":-6}}}", RPT_HANG},
    {",\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":1,\"kernel_started\":true},\"comm_idle\":{\"idle_s\":1}}", RPT_REJECTED},
    {",\"hang_resolved\":{\"coll\":\"AllReduce\",\"coll_sn\":7}}", RPT_HANG_RESOLVED},
    {",\"hang_resolved\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":\"long\"}}", RPT_REJECTED},
    {",\"hang_resolved\":{\"coll\":\"AllReduce\"}}", RPT_REJECTED},
    {",\"comm_idle\":{\"idle_s\":0}}", RPT_IDLE},
    {",\"comm_idle\":{\"idle_s\":12.5,\"last_completed\":{\"coll\":\"AllGather\",\"coll_sn\":6,\"end_ts_ns\":-1}}}", RPT_IDLE},
    {",\"comm_idle\":{\"last_completed\":null}}", RPT_REJECTED},
    {",\"comm_idle\":[]}", RPT_REJECTED},
  };
  char b[2048];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(b, sizeof b, "%s%s", OURS_START, cases[i].body);
    both(b, &l);
    if (l.kind != cases[i].want) fprintf(stderr, "  kind %d, expected %d (%s): %s\n", l.kind, cases[i].want, l.why, b);
    CHECK(l.kind == cases[i].want);
  }
  /* the context that did not fit read as absent, the line kept */
  snprintf(b, sizeof b, "%s%s", OURS_START, cases[13].body);
  CHECK(both(b, &l) && l.kind == RPT_HANG);
  CHECK(l.hang.first_seen_us == 0 && l.hang.repeat == -1 && l.hang.ops_in_flight == -1 && l.hang.bytes == -1);
  CHECK(!l.hang.last.present && !l.hang.last.op[0]);
  snprintf(b, sizeof b, "%s%s", OURS_START, cases[19].body);
  CHECK(both(b, &l) && l.kind == RPT_IDLE && l.hang.last.present && l.hang.last.end_ns == 0);
  /* after a record with the same start: the prefix cache, then the scan of the hang object */
  CHECK(after(ours, ours_hang));
  CHECK(after(ours, ours_idle));
  CHECK(after(ours_hang, ours_resolved));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR (tests/data)\n", argv[0]);
    return 2;
  }
  test_key_table();
  test_vendor_shape();
  test_our_fields();
  test_context_fields();
  test_edges();
  test_mutations();
  test_bandwidth_digits();
  test_prefix_cache();
  test_hang_lines();
  test_job_id();
  test_fixtures(argv[1]);
  return check_report("report_scan");
}

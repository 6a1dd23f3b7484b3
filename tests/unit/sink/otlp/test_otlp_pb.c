/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp_pb.c - the OTLP request encoders (sink/otlp/otlp_pb.h): protobuf and
 * proto3 JSON bodies of ExportMetricsServiceRequest, from requests built here
 * by hand.
 *
 * Three independent judges, none of them the encoder's code: bytes worked out
 * by hand from the wire-format rules for tiny requests; protoc with the
 * official schema (tests/data/otlp-proto, argv[1]) for the rest: it must
 * decode every body, show the values, and encode the decoded text back into
 * exactly our bytes (the official serializer's canonical form); Python's json
 * module (argv[2], strict: no NaN, no duplicate keys, no raw control
 * characters, UTF-8) for the JSON bodies. Without protoc or python3 the checks
 * that need them do not run and the test exits 77 (ctest: skipped) after the
 * others; CI installs both (Debian: protobuf-compiler).
 *
 * Each body is a file in a temporary directory that the test removes.
 */
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sink/otlp/otlp_pb.h"

extern char **environ;

static const char *g_proto_dir; /* tests/data/otlp-proto */
static const char *g_python = "python3";
static char g_dir[128];         /* this run's temporary directory */
static bool g_skipped;          /* some checks did not run (each said why) */

#define MSG "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest"
#define MSG_PROTO "opentelemetry/proto/collector/metrics/v1/metrics_service.proto"

/* ------------------------------------------------------------------ files and tools */

static const char *path_of(const char *name) {
  static char p[4][256]; /* a few paths live at once */
  static int next;
  char *s = p[next++ % 4];
  snprintf(s, sizeof p[0], "%s/%s", g_dir, name);
  return s;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(data, 1, n, f) == n);
  fclose(f);
}

/* The whole file, NUL-terminated (malloc'd; *n its length), or NULL. */
static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  char *d = malloc(cap);
  size_t got;
  while (d && (got = fread(d + len, 1, cap - len - 1, f)) > 0) {
    len += got;
    if (cap - len - 1 == 0) {
      char *more = realloc(d, cap *= 2);
      if (!more) free(d);
      d = more;
    }
  }
  fclose(f);
  if (d) d[len] = '\0';
  if (n) *n = len;
  return d;
}

/* Runs argv (searched in PATH) with stdin from `in` and stdout to `out` (either NULL:
 * inherited). Its exit status, or -1 when it could not be started (not installed). */
static int run_tool(char *const argv[], const char *in, const char *out) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in) posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
  if (out) posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int st;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool have_protoc(void) {
  static int have = -1;
  if (have < 0) {
    char *argv[] = {"protoc", "--version", NULL};
    have = run_tool(argv, NULL, "/dev/null") == 0;
    if (!have) printf("SKIP: protoc not found (Debian: apt-get install protobuf-compiler): "
                      "the schema checks do not run\n");
    g_skipped |= !have;
  }
  return have;
}

static bool have_python(void) {
  static int have = -1;
  if (have < 0) {
    char *argv[] = {(char *)g_python, "-c", "import json", NULL};
    have = run_tool(argv, NULL, NULL) == 0;
    if (!have) printf("SKIP: %s not found: the JSON bodies are not parsed\n", g_python);
    g_skipped |= !have;
  }
  return have;
}

/* Leading spaces of each line removed, so that checks do not depend on protoc's indentation. */
static void squeeze(char *t) {
  char *o = t;
  for (bool bol = true; *t; t++) {
    if (bol && *t == ' ') continue;
    bol = *t == '\n';
    *o++ = *t;
  }
  *o = '\0';
}

/* protoc --decode of a body: the text format (malloc'd), squeezed, or NULL if protoc
 * rejected the body. */
static char *protoc_decode(const struct ins_buf *b) {
  write_file(path_of("body.bin"), b->data, b->len);
  char *argv[] = {"protoc", "-I", (char *)g_proto_dir, "--decode=" MSG, MSG_PROTO, NULL};
  int rc = run_tool(argv, path_of("body.bin"), path_of("body.txt"));
  char *text = rc == 0 ? read_file(path_of("body.txt"), NULL) : NULL;
  if (text) squeeze(text);
  unlink(path_of("body.bin"));
  unlink(path_of("body.txt"));
  return text;
}

/* protoc --encode of decoded text is what the official serializer writes: it must be our
 * bytes exactly (field order, defaults left out, minimal varints). */
static bool protoc_reencodes_to(const char *text, const struct ins_buf *b) {
  write_file(path_of("text.txt"), text, strlen(text));
  char *argv[] = {"protoc", "-I", (char *)g_proto_dir, "--encode=" MSG, MSG_PROTO, NULL};
  int rc = run_tool(argv, path_of("text.txt"), path_of("again.bin"));
  size_t n = 0;
  char *again = rc == 0 ? read_file(path_of("again.bin"), &n) : NULL;
  bool same = again && n == b->len && memcmp(again, b->data, n) == 0;
  free(again);
  unlink(path_of("text.txt"));
  unlink(path_of("again.bin"));
  return same;
}

/* Python's json reads the body strictly and prints one line per leaf, "path=value" with
 * the value as json.dumps writes it (ASCII, strings quoted), e.g.
 * resourceMetrics.0.scopeMetrics.0.metrics.1.sum.dataPoints.0.asInt="-7". NULL if the
 * body is not JSON. */
static const char k_flatten[] =
    "import json, sys\n"
    "def nonfinite(x): raise ValueError('not a JSON number: ' + x)\n"
    "def once(pairs):\n"
    "    keys = [k for k, _ in pairs]\n"
    "    if len(keys) != len(set(keys)): raise ValueError('duplicate key')\n"
    "    return dict(pairs)\n"
    "with open(sys.argv[1], encoding='utf-8', errors='strict') as f:\n"
    "    doc = json.load(f, parse_constant=nonfinite, object_pairs_hook=once)\n"
    "def walk(path, v):\n"
    "    if isinstance(v, dict):\n"
    "        if not v: print(path + '={}')\n"
    "        for k in v: walk(path + '.' + k if path else k, v[k])\n"
    "    elif isinstance(v, list):\n"
    "        if not v: print(path + '=[]')\n"
    "        for i, x in enumerate(v): walk(path + '.' + str(i), x)\n"
    "    else: print(path + '=' + json.dumps(v))\n"
    "walk('', doc)\n";

static char *json_flatten(const struct ins_buf *b) {
  write_file(path_of("body.json"), b->data, b->len);
  char *argv[] = {(char *)g_python, "-c", (char *)k_flatten, (char *)path_of("body.json"), NULL};
  int rc = run_tool(argv, NULL, path_of("flat.txt"));
  char *flat = rc == 0 ? read_file(path_of("flat.txt"), NULL) : NULL;
  unlink(path_of("body.json"));
  unlink(path_of("flat.txt"));
  return flat;
}

/* A whole line of the flattened JSON. */
static bool has_line(const char *flat, const char *line) {
  size_t n = strlen(line);
  for (const char *p = flat; p && (p = strstr(p, line)); p++)
    if ((p == flat || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0')) return true;
  return false;
}

#define CHECK_HAS(text, s)                                                                    \
  do {                                                                                        \
    if ((text) && strstr((text), (s))) g_pass++;                                              \
    else { g_fail++; fprintf(stderr, "%s:%d: missing: %s\n", __FILE__, __LINE__, (s)); }     \
  } while (0)

#define CHECK_LINE(flat, s)                                                                   \
  do {                                                                                        \
    if (has_line((flat), (s))) g_pass++;                                                      \
    else { g_fail++; fprintf(stderr, "%s:%d: no line: %s\n", __FILE__, __LINE__, (s)); }     \
  } while (0)

static void check_bytes(const struct ins_buf *b, const unsigned char *want, size_t n, int line) {
  if (b->len == n && memcmp(b->data, want, n) == 0) {
    g_pass++;
    return;
  }
  g_fail++;
  fprintf(stderr, "%s:%d: bytes differ (%zu, want %zu)\n  got: ", __FILE__, line, b->len, n);
  for (size_t i = 0; i < b->len; i++) fprintf(stderr, "%02x ", (unsigned char)b->data[i]);
  fprintf(stderr, "\n want: ");
  for (size_t i = 0; i < n; i++) fprintf(stderr, "%02x ", want[i]);
  fprintf(stderr, "\n");
}
#define CHECK_BYTES(b, want) check_bytes((b), (want), sizeof(want), __LINE__)

/* ------------------------------------------------------------------ protobuf: by hand */

static void test_pb_tiny_sum_bytes(void) {
  struct ins_otlp_kv res[] = {{"k", INS_OTLP_STR, "v", 0}};
  struct ins_otlp_kv pattr[] = {{"n", INS_OTLP_INT, NULL, -2}};
  struct ins_otlp_point pt[] = {{pattr, 1, 1, 2, -1, NULL}};
  struct ins_otlp_metric m[] = {{"m", NULL, NULL, INS_OTLP_SUM, true, pt, 1}};
  struct ins_otlp_request r = {res, 1, "s", "1", m, 1};
  /* tag = field << 3 | wire type (0 varint, 1 fixed 64-bit, 2 length-delimited);
   * lengths and varints 7 bits a byte, low first, 0x80 = more follows;
   * fixed64 / sfixed64 8 bytes little-endian; int64 -2 as a varint is 2^64 - 2: 10 bytes.
   *
   * KeyValue "k"="v" (8):  0a 01 'k' | value AnyValue 12 03 { string_value 0a 01 'v' }
   * Resource (10):         attributes 0a 08 {KeyValue}
   * InstrumentationScope (6): name 0a 01 's' | version 12 01 '1'
   * NumberDataPoint (45), fields in number order:
   *   start_time_unix_nano 2: 11 01 00 00 00 00 00 00 00
   *   time_unix_nano 3:       19 02 00 00 00 00 00 00 00
   *   as_int 6 (sfixed64 -1): 31 ff ff ff ff ff ff ff ff
   *   attributes 7: 3a 10 { key 0a 01 'n' | value 12 0b { int_value 3: 18 fe ff ff ff ff ff ff ff ff 01 } }
   * Sum (51):    data_points 1: 0a 2d {point} | aggregation_temporality 2: 10 02 | is_monotonic 3: 18 01
   * Metric (56): name 0a 01 'm' | sum 7: 3a 33 {Sum}       (description, unit "": left out)
   * ScopeMetrics (66):    scope 0a 06 {scope} | metrics 12 38 {Metric}
   * ResourceMetrics (80): resource 0a 0a {Resource} | scope_metrics 12 42 {ScopeMetrics}
   * ExportMetricsServiceRequest (82): resource_metrics 0a 50 {ResourceMetrics} */
  static const unsigned char want[] = {
      0x0a, 0x50,                                                 /* resource_metrics */
      0x0a, 0x0a, 0x0a, 0x08,                                     /* resource, attributes */
      0x0a, 0x01, 'k', 0x12, 0x03, 0x0a, 0x01, 'v',               /* k = "v" */
      0x12, 0x42,                                                 /* scope_metrics */
      0x0a, 0x06, 0x0a, 0x01, 's', 0x12, 0x01, '1',               /* scope */
      0x12, 0x38,                                                 /* metrics */
      0x0a, 0x01, 'm',                                            /* name */
      0x3a, 0x33,                                                 /* sum */
      0x0a, 0x2d,                                                 /* data_points */
      0x11, 0x01, 0, 0, 0, 0, 0, 0, 0,                            /* start_time_unix_nano 1 */
      0x19, 0x02, 0, 0, 0, 0, 0, 0, 0,                            /* time_unix_nano 2 */
      0x31, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,       /* as_int -1 */
      0x3a, 0x10, 0x0a, 0x01, 'n', 0x12, 0x0b,                    /* attributes: n = */
      0x18, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* int_value -2 */
      0x10, 0x02,                                                 /* CUMULATIVE */
      0x18, 0x01,                                                 /* is_monotonic */
  };
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_pb(&b, &r) == 0);
  CHECK_BYTES(&b, want);
  ins_buf_free(&b);
}

static void test_pb_tiny_histogram_bytes(void) {
  static const uint64_t counts[] = {1, 300};
  struct ins_otlp_expo h = {-1, 301, 0, 1.5, 0.5, 4.0, -2, 2, counts};
  struct ins_otlp_point pt[] = {{NULL, 0, 0, 0x0102, 0, &h}};
  struct ins_otlp_metric m[] = {{"h", NULL, NULL, INS_OTLP_EXPO_HIST, false, pt, 1}};
  struct ins_otlp_request r = {NULL, 0, NULL, NULL, m, 1};
  /* sint32 is ZigZag: scale -1 -> 1, offset -2 -> 3; bucket_counts packed: one length,
   * then varints (300 = 0b10_0101100 -> ac 02); doubles are IEEE 754 bits, little-endian:
   * 1.5 = 3ff8000000000000, 0.5 = 3fe0..., 4.0 = 4010...
   * ExponentialHistogramDataPoint (56), no attributes, start 0 and zero_count 0 left out:
   *   time_unix_nano 3: 19 02 01 00.. | count 4: 21 2d 01 00.. (301) | sum 5: 29 <1.5>
   *   scale 6: 30 01 | positive 8: 42 07 { offset 1: 08 03 | bucket_counts 2: 12 03 01 ac 02 }
   *   min 12: 61 <0.5> | max 13: 69 <4.0>
   * ExponentialHistogram (60): data_points 0a 38 {point} | aggregation_temporality 10 02
   * Metric (65): name 0a 01 'h' | exponential_histogram 10: 52 3c {..}
   * ScopeMetrics (69): scope 0a 00 (set, empty) | metrics 12 41 {Metric}
   * ResourceMetrics (73): resource 0a 00 | scope_metrics 12 45; request (75): 0a 49 */
  static const unsigned char want[] = {
      0x0a, 0x49, 0x0a, 0x00, 0x12, 0x45, 0x0a, 0x00, 0x12, 0x41,
      0x0a, 0x01, 'h', 0x52, 0x3c, 0x0a, 0x38,
      0x19, 0x02, 0x01, 0, 0, 0, 0, 0, 0,                         /* time_unix_nano */
      0x21, 0x2d, 0x01, 0, 0, 0, 0, 0, 0,                         /* count 301 */
      0x29, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f,                         /* sum 1.5 */
      0x30, 0x01,                                                 /* scale -1 */
      0x42, 0x07, 0x08, 0x03, 0x12, 0x03, 0x01, 0xac, 0x02,       /* positive */
      0x61, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f,                         /* min 0.5 */
      0x69, 0, 0, 0, 0, 0, 0, 0x10, 0x40,                         /* max 4.0 */
      0x10, 0x02,                                                 /* CUMULATIVE */
  };
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_pb(&b, &r) == 0);
  CHECK_BYTES(&b, want);
  ins_buf_free(&b);
}

static void test_pb_empty_request_bytes(void) {
  struct ins_otlp_request r = {NULL, 0, NULL, NULL, NULL, 0};
  /* resource_metrics 0a 06 { resource 0a 00 | scope_metrics 12 02 { scope 0a 00 } } */
  static const unsigned char want[] = {0x0a, 0x06, 0x0a, 0x00, 0x12, 0x02, 0x0a, 0x00};
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_pb(&b, &r) == 0);
  CHECK_BYTES(&b, want);
  ins_buf_free(&b);
}

/* A body of 128 bytes or more has a length of two bytes or more: written after it,
 * ahead of it (each enclosing message grows too). */
static void test_pb_long_length_prefixes(void) {
  char name[131];
  memset(name, 'x', 130);
  name[130] = '\0';
  struct ins_otlp_metric m[] = {{name, NULL, NULL, INS_OTLP_SUM, false, NULL, 0}};
  struct ins_otlp_request r = {NULL, 0, NULL, NULL, m, 1};
  /* Metric (137): name 0a 82 01 <130 x> | sum 3a 02 { 10 02 }   (130 = 0x82 0x01)
   * ScopeMetrics (142): 0a 00 | 12 89 01 {Metric}; ResourceMetrics (147): 0a 00 | 12 8e 01;
   * request (150): 0a 93 01 */
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_pb(&b, &r) == 0);
  static const unsigned char head[] = {0x0a, 0x93, 0x01, 0x0a, 0x00, 0x12, 0x8e, 0x01,
                                       0x0a, 0x00, 0x12, 0x89, 0x01, 0x0a, 0x82, 0x01};
  static const unsigned char tail[] = {0x3a, 0x02, 0x10, 0x02};
  CHECK_EQ_U(b.len, 150);
  CHECK(b.len == 150 && memcmp(b.data, head, sizeof head) == 0);
  CHECK(b.len == 150 && memcmp(b.data + sizeof head, name, 130) == 0);
  CHECK(b.len == 150 && memcmp(b.data + 146, tail, sizeof tail) == 0);
  ins_buf_free(&b);

  /* 20000 bytes: a three-byte length (20000 = a0 9c 01), moved twice as far */
  char *big = malloc(20001);
  CHECK(big != NULL);
  if (!big) return;
  memset(big, 'y', 20000);
  big[20000] = '\0';
  m[0].name = big;
  CHECK(ins_otlp_encode_pb(&b, &r) == 0);
  static const unsigned char big_name[] = {0x0a, 0xa0, 0x9c, 0x01, 'y'};
  /* Metric 20008 = name 1+3+20000 | sum 4; ScopeMetrics 20014 = scope 2 | metrics 1+3+20008;
   * ResourceMetrics 20020 = resource 2 | 1+3+20014; request 1+3+20020 */
  CHECK_EQ_U(b.len, 20024);
  CHECK(b.len == 20024 && memcmp(b.data + 16, big_name, sizeof big_name) == 0);
  if (have_protoc()) {
    char *text = protoc_decode(&b);
    CHECK(text != NULL);
    CHECK(text && protoc_reencodes_to(text, &b));
    free(text);
  }
  ins_buf_free(&b);
  free(big);
}

/* Appending: the body goes after what the buffer held, which stays as it was. */
static void test_pb_appends(void) {
  struct ins_otlp_request r = {NULL, 0, NULL, NULL, NULL, 0};
  struct ins_buf b = {0};
  CHECK(ins_buf_reserve(&b, 3) == 0);
  ins_buf_lit(&b, "abc");
  CHECK(ins_otlp_encode_pb(&b, &r) == 0);
  CHECK_EQ_U(b.len, 3 + 8);
  CHECK(memcmp(b.data, "abc\x0a\x06\x0a\x00\x12\x02\x0a\x00", 11) == 0);
  ins_buf_free(&b);
}

/* ------------------------------------------------------------------ a realistic request */

#define HOSTILE "q\"uote\\ new\nline\ttab caf\xC3\xA9 \xF0\x9F\x98\x80 \x01"

static const struct ins_otlp_kv k_resource[] = {
    {"service.name", INS_OTLP_STR, "train", 0},
    {"host.name", INS_OTLP_STR, "node-7", 0},
    {"process.pid", INS_OTLP_INT, NULL, 4242},
    {"hostile", INS_OTLP_STR, HOSTILE, 0},
};
static const struct ins_otlp_kv k_ar[] = {
    {"comm", INS_OTLP_STR, "0x7f3a", 0}, {"op", INS_OTLP_STR, "AllReduce", 0}, {"rank", INS_OTLP_INT, NULL, 3},
};
static const struct ins_otlp_kv k_ag[] = {
    {"comm", INS_OTLP_STR, "0x7f3a", 0}, {"op", INS_OTLP_STR, "AllGather", 0}, {"rank", INS_OTLP_INT, NULL, 0},
};
static const struct ins_otlp_kv k_neg[] = {
    {"big", INS_OTLP_INT, NULL, INT64_MIN}, {"empty", INS_OTLP_STR, "", 0},
};

static const struct ins_otlp_point k_ops[] = {
    {k_ar, 3, 1700000000000000000ull, 1700000060000000000ull, 1234, NULL},
    {k_ag, 3, 1700000000000000000ull, 1700000060000000000ull, 0, NULL},
    {k_neg, 2, 1700000000000000000ull, 1700000060000000000ull, INT64_MAX, NULL},
};
static const struct ins_otlp_point k_inflight[] = {
    {k_ar, 3, 1700000000000000000ull, 1700000060000000000ull, -7, NULL},
    {NULL, 0, 1700000000000000000ull, 1700000060000000000ull, 9007199254740993ll, NULL}, /* 2^53 + 1 */
};

/* (base^(offset+i), base^(offset+i+1)]: scale 3 and offset -3 cover values just under 1 */
static const uint64_t k_c1[] = {4, 0, 2, 18446744073709551615ull};
static const struct ins_otlp_expo k_h1 = {3, 18446744073709551615ull, 1, 0.1, 0.75, 1.5, -3, 4, k_c1};
static const uint64_t k_c2[] = {1, 5, 1};
static const struct ins_otlp_expo k_h2 = {-2, 7, 0, 123456.789, 40000.0, 1e300, 5, 3, k_c2};
static const struct ins_otlp_expo k_h3 = {0, 0, 0, 0.0, 0.0, 0.0, 0, 0, NULL}; /* no values */
static const struct ins_otlp_point k_times[] = {
    {k_ar, 3, 1700000000000000000ull, 1700000060000000000ull, 0, &k_h1},
    {k_ag, 3, 1700000000000000000ull, 1700000060000000000ull, 0, &k_h2},
    {NULL, 0, 1700000000000000000ull, 1700000060000000000ull, 0, &k_h3},
};

static const struct ins_otlp_metric k_metrics[] = {
    {"nccl.ops", "Collectives completed", "{op}", INS_OTLP_SUM, true, k_ops, 3},
    {"nccl.in_flight", "", "{op}", INS_OTLP_SUM, false, k_inflight, 2},
    {"nccl.op.duration", "Time \"on the GPU\"\n", "us", INS_OTLP_EXPO_HIST, false, k_times, 3},
};

static const struct ins_otlp_request k_req = {k_resource, 4, "inspector", "0.1.0", k_metrics, 3};

static void test_pb_decodes_with_schema(void) {
  if (!have_protoc()) return;
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_pb(&b, &k_req) == 0);
  char *t = protoc_decode(&b);
  CHECK(t != NULL);
  CHECK(t && protoc_reencodes_to(t, &b));
  /* resource and scope */
  CHECK_HAS(t, "key: \"service.name\"\nvalue {\nstring_value: \"train\"");
  CHECK_HAS(t, "key: \"process.pid\"\nvalue {\nint_value: 4242");
  CHECK_HAS(t, "scope {\nname: \"inspector\"\nversion: \"0.1.0\"");
  /* the Sums */
  CHECK_HAS(t, "name: \"nccl.ops\"\ndescription: \"Collectives completed\"\nunit: \"{op}\"");
  CHECK_HAS(t, "start_time_unix_nano: 1700000000000000000\ntime_unix_nano: 1700000060000000000\n"
               "as_int: 1234");
  CHECK_HAS(t, "as_int: 0\n"); /* a oneof member at 0 is still set */
  CHECK_HAS(t, "as_int: 9223372036854775807");
  CHECK_HAS(t, "as_int: -7");
  CHECK_HAS(t, "as_int: 9007199254740993");
  CHECK_HAS(t, "int_value: -9223372036854775808");
  CHECK_HAS(t, "key: \"empty\"\nvalue {\nstring_value: \"\"");
  CHECK_HAS(t, "key: \"op\"\nvalue {\nstring_value: \"AllGather\"");
  CHECK_HAS(t, "aggregation_temporality: AGGREGATION_TEMPORALITY_CUMULATIVE\nis_monotonic: true");
  CHECK_HAS(t, "name: \"nccl.in_flight\"\nunit: \"{op}\""); /* "" description left out */
  /* the ExponentialHistogram: offsets below and above 0, a bucket at 2^64-1 */
  CHECK_HAS(t, "exponential_histogram {\ndata_points {");
  CHECK_HAS(t, "count: 18446744073709551615\nsum: 0.1\nscale: 3\n"
               "zero_count: 1\npositive {\noffset: -3\n"
               "bucket_counts: 4\nbucket_counts: 0\n"
               "bucket_counts: 2\nbucket_counts: 18446744073709551615\n"
               "}\nmin: 0.75\nmax: 1.5");
  CHECK_HAS(t, "count: 7\nsum: 123456.789\nscale: -2\npositive {\n"
               "offset: 5\nbucket_counts: 1\nbucket_counts: 5\n"
               "bucket_counts: 1\n}\nmin: 40000\nmax: 1e+300");
  /* no values: sum 0 is set (optional), min and max are not (of nothing), positive is empty */
  CHECK_HAS(t, "time_unix_nano: 1700000060000000000\nsum: 0\npositive {\n"
               "}\n}\naggregation_temporality: AGGREGATION_TEMPORALITY_CUMULATIVE");
  CHECK(t && !strstr(t, ": nan") && !strstr(t, "inf") && !strstr(t, "zero_threshold"));
  free(t);
  ins_buf_free(&b);
}

/* Strings reach protobuf as given when valid UTF-8 (protoc prints non-ASCII bytes in
 * octal), and an invalid byte as U+FFFD: a receiver rejects a request whose string is
 * not UTF-8. */
static void test_pb_strings(void) {
  if (!have_protoc()) return;
  char long_utf8[2 * 100 + 2]; /* 100 x U+00E9 and an invalid byte: 203 bytes once cleaned */
  for (int i = 0; i < 100; i++) memcpy(long_utf8 + 2 * i, "\xC3\xA9", 2);
  memcpy(long_utf8 + 200, "\xFF", 2);
  struct ins_otlp_kv kv[] = {{"bad\xFF", INS_OTLP_STR, "cut\xE2\x82", 0},
                             {"hostile", INS_OTLP_STR, HOSTILE, 0},
                             {"long", INS_OTLP_STR, long_utf8, 0}};
  struct ins_otlp_request r = {kv, 3, "s\xC0\xAF", NULL, NULL, 0};
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_pb(&b, &r) == 0);
  char *t = protoc_decode(&b);
  CHECK(t != NULL);
  CHECK_HAS(t, "key: \"bad\\357\\277\\275\"");
  CHECK_HAS(t, "string_value: \"cut\\357\\277\\275\"");
  CHECK_HAS(t, "name: \"s\\357\\277\\275\\357\\277\\275\"");
  char want[16 + 100 * 8 + 16] = "string_value: \""; /* protoc writes the bytes in octal */
  for (int i = 0; i < 100; i++) strcat(want, "\\303\\251");
  strcat(want, "\\357\\277\\275\"\n");
  CHECK_HAS(t, want);
  CHECK(t && protoc_reencodes_to(t, &b));
  CHECK_HAS(t, "string_value: \"q\\\"uote\\\\ new\\nline\\ttab caf\\303\\251 \\360\\237\\230\\200 \\001\"");
  free(t);
  ins_buf_free(&b);
}

/* Counts below zero are none; NULL strings are "", a point without its histogram has no
 * values, a histogram without its counts no buckets: a valid request, nothing read
 * out of bounds. */
static void test_pb_odd_inputs(void) {
  struct ins_otlp_kv kv[] = {{NULL, INS_OTLP_STR, NULL, 0}};
  struct ins_otlp_expo h = {1, 5, 5, 2.0, 1.0, 1.0, 0, 3, NULL};
  struct ins_otlp_point pts[] = {{kv, -1, 0, 0, 0, NULL}, {kv, 1, 0, 0, 0, &h}};
  struct ins_otlp_metric m[] = {{NULL, NULL, NULL, INS_OTLP_SUM, true, pts, -5},
                                {"h", NULL, NULL, INS_OTLP_EXPO_HIST, false, pts, 2},
                                {"unknown", NULL, NULL, (enum ins_otlp_kind)7, false, pts, 2}};
  struct ins_otlp_request r = {kv, -3, NULL, NULL, m, 3};
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_pb(&b, &r) == 0);
  if (have_protoc()) {
    char *t = protoc_decode(&b);
    CHECK(t != NULL);
    CHECK(t && protoc_reencodes_to(t, &b));
    CHECK_HAS(t, "name: \"unknown\"\n}");
    CHECK_HAS(t, "value {\nstring_value: \"\"\n}"); /* NULL value */
    free(t);
  }
  struct ins_buf j = {0};
  CHECK(ins_otlp_encode_json(&j, &r) == 0);
  if (have_python()) {
    char *f = json_flatten(&j);
    CHECK(f != NULL);
    CHECK_LINE(f, "resourceMetrics.0.resource.attributes=[]");
    CHECK_LINE(f, "resourceMetrics.0.scopeMetrics.0.metrics.0.sum.dataPoints=[]");
    CHECK_LINE(f, "resourceMetrics.0.scopeMetrics.0.metrics.1.exponentialHistogram.dataPoints.1."
                  "positive.bucketCounts=[]");
    CHECK_LINE(f, "resourceMetrics.0.scopeMetrics.0.metrics.2.name=\"unknown\"");
    free(f);
  }
  ins_buf_free(&j);
  ins_buf_free(&b);
}

/* ------------------------------------------------------------------ JSON */

#define SM "resourceMetrics.0.scopeMetrics.0."

static void test_json_values_and_keys(void) {
  if (!have_python()) return;
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_json(&b, &k_req) == 0);
  char *f = json_flatten(&b);
  CHECK(f != NULL);
  CHECK_LINE(f, "resourceMetrics.0.resource.attributes.0.key=\"service.name\"");
  CHECK_LINE(f, "resourceMetrics.0.resource.attributes.0.value.stringValue=\"train\"");
  CHECK_LINE(f, "resourceMetrics.0.resource.attributes.2.value.intValue=\"4242\""); /* int64: a string */
  CHECK_LINE(f, SM "scope.name=\"inspector\"");
  CHECK_LINE(f, SM "scope.version=\"0.1.0\"");
  CHECK_LINE(f, SM "metrics.0.name=\"nccl.ops\"");
  CHECK_LINE(f, SM "metrics.0.unit=\"{op}\"");
  CHECK_LINE(f, SM "metrics.0.sum.aggregationTemporality=2"); /* an enum: a number */
  CHECK_LINE(f, SM "metrics.0.sum.isMonotonic=true");
  CHECK_LINE(f, SM "metrics.1.sum.isMonotonic=false");
  CHECK_LINE(f, SM "metrics.0.sum.dataPoints.0.startTimeUnixNano=\"1700000000000000000\"");
  CHECK_LINE(f, SM "metrics.0.sum.dataPoints.0.timeUnixNano=\"1700000060000000000\"");
  CHECK_LINE(f, SM "metrics.0.sum.dataPoints.0.asInt=\"1234\"");
  CHECK_LINE(f, SM "metrics.0.sum.dataPoints.0.attributes.1.value.stringValue=\"AllReduce\"");
  CHECK_LINE(f, SM "metrics.0.sum.dataPoints.0.attributes.2.value.intValue=\"3\"");
  CHECK_LINE(f, SM "metrics.0.sum.dataPoints.2.asInt=\"9223372036854775807\"");
  CHECK_LINE(f, SM "metrics.0.sum.dataPoints.2.attributes.0.value.intValue=\"-9223372036854775808\"");
  CHECK_LINE(f, SM "metrics.0.sum.dataPoints.2.attributes.1.value.stringValue=\"\"");
  CHECK_LINE(f, SM "metrics.1.sum.dataPoints.0.asInt=\"-7\"");
  CHECK_LINE(f, SM "metrics.1.sum.dataPoints.1.asInt=\"9007199254740993\"");
  CHECK_LINE(f, SM "metrics.1.sum.dataPoints.1.attributes=[]");
  /* the histogram */
  const char *h = SM "metrics.2.exponentialHistogram.";
  char line[256];
#define H(fmt) (snprintf(line, sizeof line, "%s" fmt, h), line)
  CHECK_LINE(f, H("aggregationTemporality=2"));
  CHECK_LINE(f, H("dataPoints.0.count=\"18446744073709551615\""));
  CHECK_LINE(f, H("dataPoints.0.sum=0.1"));
  CHECK_LINE(f, H("dataPoints.0.scale=3"));
  CHECK_LINE(f, H("dataPoints.0.zeroCount=\"1\""));
  CHECK_LINE(f, H("dataPoints.0.positive.offset=-3"));
  CHECK_LINE(f, H("dataPoints.0.positive.bucketCounts.0=\"4\""));
  CHECK_LINE(f, H("dataPoints.0.positive.bucketCounts.3=\"18446744073709551615\""));
  CHECK_LINE(f, H("dataPoints.0.min=0.75"));
  CHECK_LINE(f, H("dataPoints.0.max=1.5"));
  CHECK_LINE(f, H("dataPoints.1.scale=-2"));
  CHECK_LINE(f, H("dataPoints.1.sum=123456.789"));
  CHECK_LINE(f, H("dataPoints.1.positive.offset=5"));
  CHECK_LINE(f, H("dataPoints.1.positive.bucketCounts.1=\"5\""));
  CHECK_LINE(f, H("dataPoints.1.min=40000")); /* JSON has one number type */
  CHECK_LINE(f, H("dataPoints.1.max=1e+300"));
  /* no values: no min or max (of nothing), sum 0 kept, no buckets */
  CHECK_LINE(f, H("dataPoints.2.count=\"0\""));
  CHECK_LINE(f, H("dataPoints.2.sum=0"));
  CHECK_LINE(f, H("dataPoints.2.positive.bucketCounts=[]"));
  CHECK(f && !strstr(f, "dataPoints.2.min") && !strstr(f, "dataPoints.2.max"));
#undef H
  /* strings: escaped by the encoder, read back by Python as they were */
  CHECK_LINE(f, "resourceMetrics.0.resource.attributes.3.value.stringValue="
                "\"q\\\"uote\\\\ new\\nline\\ttab caf\\u00e9 \\ud83d\\ude00 \\u0001\"");
  CHECK_LINE(f, SM "metrics.2.description=\"Time \\\"on the GPU\\\"\\n\"");
  CHECK_LINE(f, SM "metrics.1.description=\"\"");
  free(f);
  ins_buf_free(&b);
}

static void test_json_empty_metrics(void) {
  struct ins_otlp_request r = {NULL, 0, "inspector", "0.1.0", NULL, 0};
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_json(&b, &r) == 0);
  CHECK(ins_buf_reserve(&b, 1) == 0);
  b.data[b.len] = '\0';
  CHECK_STR(b.data, "{\"resourceMetrics\":[{\"resource\":{\"attributes\":[]},\"scopeMetrics\":"
                    "[{\"scope\":{\"name\":\"inspector\",\"version\":\"0.1.0\"},\"metrics\":[]}]}]}");
  ins_buf_free(&b);
}

/* Infinity and NaN are not JSON numbers: an optional double that is not finite is left
 * out, in both encodings alike. */
static void test_nonfinite_left_out(void) {
  static const uint64_t counts[] = {2};
  struct ins_otlp_expo h = {0, 2, 0, INFINITY, NAN, -INFINITY, 0, 1, counts};
  struct ins_otlp_point pt[] = {{NULL, 0, 1, 2, 0, &h}};
  struct ins_otlp_metric m[] = {{"h", NULL, NULL, INS_OTLP_EXPO_HIST, false, pt, 1}};
  struct ins_otlp_request r = {NULL, 0, NULL, NULL, m, 1};
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_json(&b, &r) == 0);
  CHECK(ins_buf_reserve(&b, 1) == 0);
  b.data[b.len] = '\0';
  CHECK(!strstr(b.data, "\"sum\"") && !strstr(b.data, "\"min\"") && !strstr(b.data, "\"max\""));
  CHECK(!strstr(b.data, "nf") && !strstr(b.data, "NaN") && !strstr(b.data, "nan"));
  ins_buf_free(&b);
  CHECK(ins_otlp_encode_pb(&b, &r) == 0);
  /* the point (32): start 11 <1> | time 19 <2> | count 21 <2> | positive 42 03 { bucket_counts
   * 12 01 02 }: no sum (29), min (61) or max (69) */
  static const unsigned char point[] = {
      0x0a, 0x20, 0x11, 1, 0, 0, 0, 0, 0, 0, 0, 0x19, 2, 0, 0, 0, 0, 0, 0, 0,
      0x21, 2, 0, 0, 0, 0, 0, 0, 0, 0x42, 0x03, 0x12, 0x01, 0x02, 0x10, 0x02,
  };
  CHECK(b.len > sizeof point && memmem(b.data, b.len, point, sizeof point) != NULL);
  ins_buf_free(&b);
}

/* An application that set a locale with a decimal comma still gets JSON numbers. */
static void test_json_decimal_comma_locale(void) {
  static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8",
                                      "ru_RU.UTF-8"};
  const char *set = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !set; i++) set = setlocale(LC_NUMERIC, names[i]);
  if (!set) {
    printf("note: no decimal-comma locale installed: the locale check did not run\n");
    return;
  }
  static const uint64_t counts[] = {1};
  struct ins_otlp_expo h = {0, 1, 0, 2.5, 0.125, 1e-7, 0, 1, counts};
  struct ins_otlp_point pt[] = {{NULL, 0, 1, 2, 0, &h}};
  struct ins_otlp_metric m[] = {{"h", NULL, NULL, INS_OTLP_EXPO_HIST, false, pt, 1}};
  struct ins_otlp_request r = {NULL, 0, NULL, NULL, m, 1};
  struct ins_buf b = {0};
  CHECK(ins_otlp_encode_json(&b, &r) == 0);
  setlocale(LC_NUMERIC, "C");
  CHECK(ins_buf_reserve(&b, 1) == 0);
  b.data[b.len] = '\0';
  CHECK_HAS(b.data, "\"sum\":2.5,");
  CHECK_HAS(b.data, "\"min\":0.125,");
  CHECK_HAS(b.data, "\"max\":1e-07}");
  ins_buf_free(&b);
}

/* ------------------------------------------------------------------ out of memory */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define INS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define INS_SANITIZED 1
#endif
#endif

/* With the address space capped, growing the buffer fails: both encoders return -1 (no
 * abort), and the buffer holds a prefix the caller can still free. In a child, since the
 * cap stays; not under sanitizers, whose shadow memory needs the address space. */
static void test_out_of_memory_returns_minus_one(void) {
#ifdef INS_SANITIZED
  printf("note: sanitizer build: the out-of-memory check did not run\n");
#else
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    size_t n = 64u << 20; /* a 64 MiB string: the body needs more than the cap allows */
    char *s = malloc(n + 1);
    if (!s) _exit(3);
    memset(s, 'z', n);
    s[n] = '\0';
    struct ins_otlp_kv kv[] = {{"k", INS_OTLP_STR, s, 0}};
    struct ins_otlp_request r = {kv, 1, NULL, NULL, NULL, 0};
    struct ins_buf b = {0}, j = {0};
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl)) _exit(4);
    /* the current size plus 32 MiB: small buffers fit, the body does not */
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1) _exit(5);
    fclose(f);
    rl.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (32u << 20);
    if (setrlimit(RLIMIT_AS, &rl)) _exit(6);
    int pb = ins_otlp_encode_pb(&b, &r), js = ins_otlp_encode_json(&j, &r);
    ins_buf_free(&b);
    ins_buf_free(&j);
    _exit(pb == -1 && js == -1 ? 0 : 7);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ_U(WEXITSTATUS(st), 0);
#endif
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s OTLP_PROTO_DIR [PYTHON]\n", argv[0]);
    return 2;
  }
  g_proto_dir = argv[1];
  if (argc > 2) g_python = argv[2];
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/ins-otlp-pb-XXXXXX", tmp && strlen(tmp) < 64 ? tmp : "/tmp");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_pb_tiny_sum_bytes();
  test_pb_tiny_histogram_bytes();
  test_pb_empty_request_bytes();
  test_pb_long_length_prefixes();
  test_pb_appends();
  test_pb_decodes_with_schema();
  test_pb_strings();
  test_pb_odd_inputs();
  test_json_values_and_keys();
  test_json_empty_metrics();
  test_nonfinite_left_out();
  test_json_decimal_comma_locale();
  test_out_of_memory_returns_minus_one();
  rmdir(g_dir);
  int rc = check_report("otlp_pb");
  if (rc == 0 && g_skipped) {
    printf("SKIP: the checks above did not all run\n");
    return 77;
  }
  return rc;
}

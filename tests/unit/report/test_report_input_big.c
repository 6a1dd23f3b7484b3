/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_report_input_big.c - inspector-report's plain-file reader past 4 GiB, without 4 GiB:
 * a unit of work (a chunk of a mapped file: tools/report/input.c, rpt_input_feed_mapped)
 * read at offsets beyond 2^32 of a 5 GiB reservation whose pages are inaccessible
 * (PROT_NONE) except the few the case writes. A read where the reader has no business
 * faults: the rule is judged by what it touched, not by how long it took.
 *   chunk_in_a_line  a chunk that lies inside one long line (a line starts in none of its
 *                    bytes) reads nothing past its end: no line. It used to look for the
 *                    end of that line to the end of the file, so each of a 4 GiB line's 256
 *                    chunks read on to its end (and here, into the inaccessible pages)
 *   lines_past_4gib  lines that start past 2^32, in a chunk whose last line runs past its
 *                    end: each counted once, in the chunk it starts in; a bad line's number
 *                    within its chunk; the next chunk starts after that line
 *   line_max         a line of RPT_LINE_MAX bytes or more is rejected unread (one hostile
 *                    line costs no parse and no tree); one byte shorter, a record, is read
 * A stream's reader (read_gz) is tested with more than 2 GiB through a pipe:
 * tests/test_report_inputs.py, inputs.huge-line-stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "acc.h"
#include "cases.h"
#include "check.h"
#include "input.h"
#include "parse.h"

static struct rpt_options g_opt = {.max_busbw_gbs = 900, .op_memory = 64 << 20, .threads = 1};

#define GIB (1ull << 30)
#define SIZE (5 * GIB) /* the "file": a reservation, inaccessible but where written */
static char *g_base;
static size_t g_page;

/* Make [off, off + len) readable and writable (page-rounded outwards). */
static char *open_window(uint64_t off, uint64_t len) {
  uint64_t lo = off / g_page * g_page, hi = (off + len + g_page - 1) / g_page * g_page;
  CHECK(mprotect(g_base + lo, hi - lo, PROT_READ | PROT_WRITE) == 0);
  return g_base + off;
}

static int record(char *out, size_t cap, int sn, const char *pad) {
  return snprintf(out, cap,
                  "{\"header\":{\"id\":\"0xb16\",\"comm_name\":\"big\",\"rank\":0,\"n_ranks\":1,\"nnodes\":1},"
                  "\"metadata\":{\"hostname\":\"h\",\"pid\":1%s},"
                  "\"coll_perf\":{\"coll\":\"AllReduce\",\"coll_sn\":%d,\"coll_msg_size_bytes\":1048576,"
                  "\"coll_exec_time_ns\":1000,\"coll_timing_source\":\"kernel_gpu\",\"coll_busbw_gbs\":10.5}}",
                  pad, sn);
}

/* a's counts after the merge (which frees it) */
static void merged(struct rpt_acc *a, uint64_t records, long rejected) {
  struct rpt_job j;
  memset(&j, 0, sizeof j);
  j.opt = g_opt;
  rpt_acc_merge(&a, 1, &j);
  CHECK_EQ_U(j.records, records);
  CHECK_EQ_U(j.rejected, rejected);
  rpt_job_free(&j);
}

static void case_chunk_in_a_line(void) {
  struct rpt_acc *a = rpt_acc_new(&g_opt, 1);
  uint64_t lo = 4 * GIB + (8u << 20), hi = lo + (1u << 20);
  /* the bytes before the chunk and the chunk itself: one line's middle, no newline */
  memset(open_window(lo - g_page, hi - (lo - g_page)), 'x', hi - (lo - g_page));
  CHECK_EQ_U(rpt_input_feed_mapped(a, 0, g_base, SIZE, lo, hi), 0);
  CHECK_EQ_U(rpt_acc_records(a), 0);
  int n;
  rpt_acc_bad_lines(a, &n);
  CHECK_EQ_U(n, 0);
  merged(a, 0, 0);
}

static void case_lines_past_4gib(void) {
  struct rpt_acc *a = rpt_acc_new(&g_opt, 1);
  uint64_t lo = 4 * GIB + (16u << 20), hi = lo + 4096;
  char *w = open_window(lo - 1, 3 * 4096);
  char *p = w;
  *p++ = '\n'; /* the line before the chunk ends just before it */
  p += record(p, 2048, 0, ""), *p++ = '\n';
  p += record(p, 2048, 1, ""), *p++ = '\n';
  p += sprintf(p, "not json past 4 GiB\n");
  p += record(p, 2048, 2, ""), *p++ = '\n';
  /* the chunk's last line: it starts 10 bytes before hi and ends after it */
  uint64_t at = (uint64_t)(p - g_base);
  CHECK(at < hi - 10);
  memset(p, ' ', hi - 10 - at); /* a blank line up to it: counted as a line, skipped */
  p = g_base + hi - 10;
  p[-1] = '\n';
  p += record(p, 2048, 3, ""), *p++ = '\n';
  uint64_t next = (uint64_t)(p - g_base); /* the next chunk's first line */
  p += record(p, 2048, 4, ""), *p++ = '\n';
  CHECK_EQ_U(rpt_input_feed_mapped(a, 0, g_base, SIZE, lo, hi), 6);
  CHECK_EQ_U(rpt_acc_records(a), 4);
  int n;
  const struct rpt_bad_line *b = rpt_acc_bad_lines(a, &n);
  CHECK_EQ_U(n, 1);
  if (n == 1) {
    CHECK_EQ_U(b[0].lineno, 3);
    CHECK(!strncmp(b[0].why, "rejected: not JSON", 18));
  }
  /* the next chunk: its first line is record 4, after the line that crossed into it */
  CHECK(next > hi);
  CHECK_EQ_U(rpt_input_feed_mapped(a, 1, g_base, (uint64_t)(p - g_base), hi, hi + 4096), 1);
  CHECK_EQ_U(rpt_acc_records(a), 5);
  merged(a, 5, 1);
}

/* A record of exactly `len` bytes, padded by a string member of spaces; its length. */
static int padded(char *out, size_t cap, int sn, size_t len) {
  char *pad = malloc(len);
  if (!pad) return -1;
  int bare = record(out, cap, sn, ",\"pad\":\"\"");
  size_t k = len > (size_t)bare ? len - (size_t)bare : 0;
  memcpy(pad, ",\"pad\":\"", 8);
  memset(pad + 8, ' ', k);
  memcpy(pad + 8 + k, "\"", 2);
  int n = record(out, cap, sn, pad);
  free(pad);
  return n;
}

static void case_line_max(void) {
  struct rpt_acc *a = rpt_acc_new(&g_opt, 1);
  size_t cap = RPT_LINE_MAX + 64;
  char *buf = malloc(cap);
  CHECK(buf != NULL);
  if (!buf) return;
  CHECK_EQ_U(padded(buf, cap, 7, RPT_LINE_MAX - 1), RPT_LINE_MAX - 1); /* read */
  rpt_acc_line(a, buf, RPT_LINE_MAX - 1, 0, 1);
  CHECK_EQ_U(padded(buf, cap, 8, RPT_LINE_MAX), RPT_LINE_MAX); /* one byte longer: rejected */
  rpt_acc_line(a, buf, RPT_LINE_MAX, 0, 2);
  buf[RPT_LINE_MAX] = '\n'; /* its newline is not counted */
  rpt_acc_line(a, buf, RPT_LINE_MAX + 1, 0, 3);
  CHECK_EQ_U(rpt_acc_records(a), 1);
  int n;
  const struct rpt_bad_line *b = rpt_acc_bad_lines(a, &n);
  CHECK_EQ_U(n, 2);
  char want[128];
  snprintf(want, sizeof want, "rejected: a line of %d bytes: longer than any Inspector line", RPT_LINE_MAX);
  for (int i = 0; i < n && i < 2; i++) {
    CHECK_EQ_U(b[i].lineno, 2 + i);
    CHECK(!strncmp(b[i].why, want, strlen(want)));
  }
  merged(a, 1, 2);
  free(buf);
}

static const struct {
  const char *name;
  void (*fn)(void);
} g_cases[] = {
    {"chunk_in_a_line", case_chunk_in_a_line},
    {"lines_past_4gib", case_lines_past_4gib},
    {"line_max", case_line_max},
};

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--list")) {
    for (size_t c = 0; c < sizeof g_cases / sizeof *g_cases; c++) list_case(g_cases[c].name, NULL);
    return 0;
  }
  const char *only = argc > 2 && !strcmp(argv[1], "--case") ? argv[2] : NULL;
  g_page = (size_t)sysconf(_SC_PAGESIZE);
  g_base = mmap(NULL, SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (g_base == MAP_FAILED) {
    perror("mmap 5 GiB of address space");
    return 1;
  }
  int ran = 0;
  for (size_t c = 0; c < sizeof g_cases / sizeof *g_cases; c++) {
    if (only && strcmp(only, g_cases[c].name)) continue;
    g_cases[c].fn();
    printf("%s: done\n", g_cases[c].name);
    ran++;
  }
  munmap(g_base, SIZE);
  if (!ran) {
    fprintf(stderr, "no case named %s\n", only);
    return 2;
  }
  return check_report("report_big_inputs");
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_report.c - libFuzzer target for inspector-report's log line parser.
 *
 * Owns: driving tools/report/parse.c (rpt_parse_line) on arbitrary bytes,
 * one call per line of the input and one on the whole input as a single
 * line (embedded newlines, NUL bytes and all), and checking that what it
 * accepts obeys the rules report.c relies on: ranks inside the communicator,
 * no negative or absurd time or size, a finite non-negative bandwidth, and a
 * printable reason for every rejection. And that the fast scanner (scan.c)
 * changes nothing: every call is made again through jansson alone
 * (rpt_parse_line_reference), and the two results must be equal field for
 * field, doubles bit for bit (test_report_scan.c checks the same rule on the
 * fixtures, with the same rule: tests/unit/report_same_line.h).
 *
 * Build and run: `make fuzz` (tests/fuzz/run.sh); seeds: corpus/report/.
 */
#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "parse.h"
#include "../unit/report_same_line.h"

static void check(const struct rpt_line *l) {
  switch (l->kind) {
  case RPT_RECORD:
    assert(l->rec.exec_ns <= (uint64_t)RPT_MAX_EXEC_NS);
    assert(l->rec.bytes <= (uint64_t)RPT_MAX_BYTES);
    assert(l->rec.sn <= (uint64_t)RPT_MAX_SN);
    assert(l->rec.start_ns <= (uint64_t)RPT_MAX_TS_NS);
    assert(isfinite(l->rec.busbw) && l->rec.busbw >= 0);
    assert(l->rec.peer >= -1 && l->rec.peer < l->hdr.nranks);
    assert(l->rec.op[0] && memchr(l->rec.op, 0, sizeof l->rec.op));
    assert(l->rec.nchannels >= -1 && l->rec.stale_channels >= 0);
    assert(l->rec.stale == (l->rec.stale_channels > 0));
    assert(l->rec.timing < RPT_NTIMING);
    assert(l->rec.algbw == -1 || (isfinite(l->rec.algbw) && l->rec.algbw >= 0));
    assert(memchr(l->rec.algo, 0, sizeof l->rec.algo) && memchr(l->rec.proto, 0, sizeof l->rec.proto));
    /* fall through: records have a header too */
  case RPT_HANG:
  case RPT_HANG_RESOLVED:
  case RPT_IDLE:
    if (l->kind == RPT_HANG || l->kind == RPT_HANG_RESOLVED) {
      assert(l->hang.op.present && l->hang.op.op[0] && memchr(l->hang.op.op, 0, sizeof l->hang.op.op));
      assert(l->hang.op.sn <= (uint64_t)RPT_MAX_SN);
      assert(l->hang.peer >= -1 && l->hang.peer < l->hdr.nranks && (l->hang.op.p2p || l->hang.peer == -1));
      assert(l->hang.bytes >= -1 && l->hang.bytes <= RPT_MAX_BYTES);
      assert(l->kind == RPT_HANG_RESOLVED ? l->hang.in_flight_s >= -1 : l->hang.in_flight_s >= 0);
      assert(l->hang.in_flight_s <= RPT_MAX_HANG_S);
    }
    if (l->kind == RPT_IDLE) assert(l->hang.idle_s >= 0 && l->hang.idle_s <= RPT_MAX_HANG_S);
    if (l->hang.last.present) assert(l->hang.last.op[0] && l->hang.last.sn <= (uint64_t)RPT_MAX_SN);
    /* fall through */
  case RPT_BOUND: /* an op left out, bracketed: its header only (parse.h) */
  case RPT_STATS:
    assert(l->hdr.nranks >= 1 && l->hdr.nranks <= RPT_MAX_RANKS);
    assert(l->hdr.rank >= 0 && l->hdr.rank < l->hdr.nranks);
    assert(l->hdr.nnodes >= 1 && l->hdr.nnodes <= l->hdr.nranks);
    assert(memchr(l->hdr.name, 0, sizeof l->hdr.name));
    assert(memchr(l->hdr.host, 0, sizeof l->hdr.host) && l->hdr.pid >= -1);
    if (l->kind == RPT_STATS && l->stats.sampling.present)
      assert(l->stats.sampling.covered >= 0 && l->stats.sampling.covered <= 1);
    break;
  case RPT_NOT_RECORD:
  case RPT_REJECTED:
    assert(l->why[0] && memchr(l->why, 0, sizeof l->why));
    for (const char *p = l->why; *p; p++) assert((unsigned char)*p >= 0x20 && *p != 0x7f);
    break;
  case RPT_BLANK:
    break;
  }
}

static void parse_both(const char *s, size_t n) {
  struct rpt_line fast, ref;
  rpt_parse_line(s, n, &fast);
  rpt_parse_line_reference(s, n, &ref);
  check(&fast);
  assert(same_line(&fast, &ref));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  parse_both(s, size);
  for (size_t pos = 0; pos < size;) {
    const char *nl = memchr(s + pos, '\n', size - pos);
    size_t end = nl ? (size_t)(nl - s) + 1 : size;
    parse_both(s + pos, end - pos);
    pos = end;
  }
  return 0;
}

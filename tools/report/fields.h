/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fields.h - the raw fields of one log line, between reading and checking (inspector-report).
 *
 * Owns: which keys inspector-report reads, object by object, and the flat table a line's
 * values land in (presence, JSON type, value or string span). Two extractors fill the table:
 * rpt_scan (scan.c), one pass over the text for the lines our plugin and the vendor plugins
 * write, which gives up on anything unusual; and parse.c's walk of jansson's tree, the
 * reference, which reads every line the scanner gave up on. One check (parse.c) turns the
 * table into a struct rpt_line, so what a line means cannot depend on who read it: the only
 * thing the two must agree on is this table, and tests/unit/report/test_report_scan.c and
 * tests/fuzz/fuzz_report.c hold them to it.
 *
 * Not here: any rule about values (parse.c), the scanner's limits (scan.c).
 */
#ifndef RPT_FIELDS_H
#define RPT_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The objects whose keys are read; RPT_O_NONE: a value that is skipped whole. */
enum rpt_obj { RPT_O_TOP, RPT_O_HEADER, RPT_O_META, RPT_O_COLL, RPT_O_P2P, RPT_O_STATS,
               RPT_O_SAMPLING, RPT_O_HANG, RPT_O_IDLE, RPT_O_LAST, RPT_NOBJ, RPT_O_NONE = RPT_NOBJ };

/* The fields of coll_perf and of p2p_perf, in the same order: "coll_sn" and "p2p_sn" are
 * both RPT_P_SN. coll_perf has no peer, p2p_perf no algo and proto. */
enum rpt_perf { RPT_P_OP, RPT_P_SN, RPT_P_BYTES, RPT_P_EXEC_US, RPT_P_TIMING, RPT_P_ALGBW,
                RPT_P_BUSBW, RPT_P_EXEC_NS, RPT_P_START, RPT_P_NCH, RPT_P_STALE, RPT_P_ALGO,
                RPT_P_PROTO, RPT_P_PEER, RPT_NPERF };

/*
 * Every field, grouped by object (each object's fields are one range, rpt_objs[]) and in
 * each object in the order our plugin writes them, which the scanner's key lookup tries
 * first. A perf field is RPT_F_PERF + (p2p ? RPT_NPERF : 0) + RPT_P_x.
 *
 * The hang lines (docs/CONTRACTS.md section 2): "hang" and "hang_resolved" are both read as
 * the hang object (a line has one of them: a line with two is rejected), "comm_idle" as the
 * idle object; the "last_completed" of either is the last object.
 */
enum rpt_field {
  RPT_F_HEADER, RPT_F_META, RPT_F_COLL, RPT_F_P2P, RPT_F_STATS,      /* top level */
  RPT_F_HANG, RPT_F_RESOLVED, RPT_F_IDLE,
  RPT_F_BOUND_COLL, RPT_F_BOUND_P2P, /* coll_bound, p2p_bound: counted, their values not read */
  RPT_F_ID, RPT_F_COMM_NAME, RPT_F_RANK, RPT_F_NRANKS, RPT_F_NNODES, /* header */
  RPT_F_DUMP_US, RPT_F_HOST, RPT_F_PID,                              /* metadata */
  RPT_F_PERF,                                                        /* coll_perf, p2p_perf */
  RPT_F_COLL_WRITTEN = RPT_F_PERF + 2 * RPT_NPERF, RPT_F_COLL_DROPPED, /* dump_stats */
  RPT_F_P2P_WRITTEN, RPT_F_P2P_DROPPED, RPT_F_SAMPLING,
  RPT_F_MODE, RPT_F_WINDOW, RPT_F_PERIOD, RPT_F_EVERY, RPT_F_BURST,  /* dump_stats.sampling */
  RPT_F_COVERED,
  /* hang, hang_resolved */
  RPT_F_H_COLL, RPT_F_H_COLL_SN, RPT_F_H_COLL_BYTES, RPT_F_H_P2P, RPT_F_H_P2P_SN, RPT_F_H_PEER,
  RPT_F_H_P2P_BYTES, RPT_F_H_IN_FLIGHT, RPT_F_H_FIRST_SEEN, RPT_F_H_KERNEL, RPT_F_H_CH_STARTED,
  RPT_F_H_CH_STOPPED, RPT_F_H_OPS, RPT_F_H_REPEAT, RPT_F_H_LAST,
  RPT_F_I_IDLE, RPT_F_I_LAST,                                        /* comm_idle */
  RPT_F_L_COLL, RPT_F_L_COLL_SN, RPT_F_L_P2P, RPT_F_L_P2P_SN, RPT_F_L_END, /* last_completed */
  RPT_NFIELD
};

struct rpt_key {
  const char *key;  /* NULL: no such key in this object (coll_perf's peer, p2p_perf's algo) */
  uint8_t len;      /* strlen(key) */
  uint8_t obj;      /* the object it is a key of */
  uint8_t child;    /* the object its value is read as when that is an object, or RPT_O_NONE */
};

struct rpt_objdef {
  const char *path;        /* "coll_perf.": the prefix of its keys in messages */
  uint8_t first, end;      /* its fields: [first, end) */
};

extern const struct rpt_key rpt_keys[RPT_NFIELD];
extern const struct rpt_objdef rpt_objs[RPT_NOBJ];

enum rpt_type { RPT_T_ABSENT, RPT_T_OBJECT, RPT_T_ARRAY, RPT_T_STRING, RPT_T_INT, RPT_T_REAL,
                RPT_T_TRUE, RPT_T_FALSE, RPT_T_NULL };

struct rpt_val {
  union {
    long long i;   /* RPT_T_INT */
    double d;      /* RPT_T_REAL */
    const char *s; /* RPT_T_STRING: len bytes, valid UTF-8 with no NUL, not NUL-terminated */
  };
  size_t len;
};

/*
 * One line's fields: type[f] says whether f is present and as what, v[f] holds its value
 * when present (and is left as it was otherwise: only type[] needs clearing per line).
 * Strings point into the line (scanner) or into jansson's tree (reference), so the table
 * lives no longer than either.
 */
struct rpt_fields {
  uint8_t type[RPT_NFIELD];
  struct rpt_val v[RPT_NFIELD];
};

/*
 * Fills *f from line[0..len) (the text json_loadb would get) and returns true, or returns
 * false when it is unsure: when the text is not a JSON object, or holds anything outside
 * the subset the scanner reads exactly as jansson does (scan.c lists it). Then *f is
 * garbage and the caller reads the line with jansson.
 */
bool rpt_scan(const char *line, size_t len, struct rpt_fields *f);

/* The scanner's per-thread prefix cache (scan.c): on by default; off (and emptied) for tests
 * that compare a line's scan with and without it. */
void rpt_scan_prefix_cache(bool on);

#endif /* RPT_FIELDS_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.h - one line of an Inspector log, checked and typed (inspector-report).
 *
 * Owns: what inspector-report accepts as a record. rpt_parse_line() turns one
 * line into a record (coll_perf / p2p_perf), a dump_stats line, "not a record"
 * (a JSON object of some other shape, e.g. a replay trace line) or a rejection
 * with its reason (not JSON, or a value no plugin can write: a negative time
 * or size, a rank outside its communicator, ...). It keeps no state and does
 * no I/O, so that a fuzz target (tests/fuzz/fuzz_report.c) can call it on
 * arbitrary bytes; the report (report.c) decides what to do with each kind.
 *
 * Not here: aggregation and printing (report.c). The schema itself is
 * docs/CONTRACTS.md section 2; fields the report does not read are not checked.
 */
#ifndef RPT_PARSE_H
#define RPT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Bounds past which a value is garbage rather than a measurement. They are
 * generous on purpose: a real job never comes near them, while the values
 * they catch (a wrapped negative, an uninitialised timestamp) are far beyond.
 */
#define RPT_MAX_EXEC_NS 86400000000000LL        /* one day: no single NCCL op runs that long */
#define RPT_MAX_BYTES (1LL << 50)               /* 1 PiB: more than any job's GPU memory */
#define RPT_MAX_SN (1LL << 48)                  /* 2.8e14 ops: 9 years at a million ops/s */
#define RPT_MAX_TS_NS 7258118400000000000LL     /* 2200-01-01 in ns since the epoch */
#define RPT_MAX_RANKS (1 << 24)                 /* 16 M ranks */
#define RPT_MAX_HANG_S 3.2e9                    /* seconds in flight or idle: a century */
/* A line of this many bytes or more (its newline aside) is rejected unread: no plugin writes
 * one (a verbose record on 64 channels is under 16 KB), and one hostile line must cost
 * neither memory (a stream's buffer, jansson's tree of it) nor a parse. */
#define RPT_LINE_MAX (1 << 20)

enum rpt_kind {
  RPT_BLANK,      /* an empty (or all-blank) line: skipped, not counted */
  RPT_RECORD,     /* a coll_perf or p2p_perf record: rec and hdr are set */
  RPT_STATS,      /* a dump_stats line: stats and hdr are set */
  RPT_HANG,       /* a hang line (an op in flight past the threshold): hang and hdr are set */
  RPT_HANG_RESOLVED, /* a hang_resolved line (that op completed after all): hang and hdr */
  RPT_IDLE,       /* a comm_idle line (no op in flight, none completed for a while): hang, hdr */
  RPT_BOUND,      /* a coll_bound or p2p_bound line (an op left out, bracketed): hdr only */
  RPT_NOT_RECORD, /* a JSON object that is no Inspector line at all: why is set */
  RPT_REJECTED    /* not JSON, or an Inspector line with an impossible value: why is set */
};

struct rpt_header {
  uint64_t comm; /* header.id */
  int rank, nranks, nnodes;
  char name[128]; /* header.comm_name, "unknown" when absent */
  /* metadata: where and when the line was written (absent fields: "", -1, 0) */
  char host[64];    /* metadata.hostname, "" when absent (cut at 63 bytes, between characters) */
  long long pid;    /* metadata.pid, -1 when absent */
  uint64_t dump_us; /* metadata.dump_timestamp_us, 0 when absent */
};

/* *_timing_source: where the time came from. Only kernel_gpu times are GPU kernel times. */
enum rpt_timing { RPT_TIMING_ABSENT, RPT_TIMING_KERNEL_GPU, RPT_TIMING_KERNEL_CPU,
                  RPT_TIMING_COLLECTIVE_CPU, RPT_TIMING_OTHER, RPT_NTIMING };

struct rpt_record {
  uint64_t comm, sn, bytes, exec_ns, start_ns; /* start_ns 0: not in the record */
  int rank, p2p, peer;                         /* peer -1: a collective, or not given */
  int nchannels;                               /* *_nchannels, -1 when absent */
  int stale_channels;                          /* *_stale_channels, 0 when absent */
  bool stale;                                  /* stale_channels > 0 */
  enum rpt_timing timing;                      /* *_timing_source */
  double busbw;
  double algbw;                                /* *_algobw_gbs, -1 when absent */
  char op[24];
  char algo[16], proto[16];                    /* coll_algo, coll_proto: "" when absent or P2P */
};

struct rpt_sampling {
  bool present;
  bool time_mode;            /* "time": window_ms of every period_ms; else runs of groups */
  uint64_t a, b;             /* time: window_ms, period_ms; groups: burst, every */
  double covered;            /* share of ops timed, 0..1 */
};

struct rpt_stats {
  uint64_t written[2], dropped[2]; /* [0] collectives, [1] P2P: the *_total counters */
  struct rpt_sampling sampling;
};

/* An op a hang line names: the stuck one, or the last completed. */
struct rpt_opref {
  bool present;     /* last_completed: false when null, absent or ill-formed */
  int p2p;
  char op[24];      /* coll or p2p: the function's name */
  uint64_t sn;      /* coll_sn or p2p_sn */
  uint64_t end_ns;  /* last_completed.end_ts_ns, 0 when absent */
};

/*
 * A hang, hang_resolved or comm_idle line (docs/CONTRACTS.md section 2). Required: the stuck
 * op's name and sequence number, in_flight_s and kernel_started of a hang; the name and
 * sequence number of a hang_resolved; idle_s of a comm_idle. The rest is context: an
 * ill-formed value reads as absent and never rejects the line.
 */
struct rpt_hang_line {
  struct rpt_opref op;       /* hang, hang_resolved: the stuck op (present) */
  int peer;                  /* p2p_peer, -1 when absent (a P2P op's, checked as a record's) */
  int64_t bytes;             /* *_msg_size_bytes, -1 when absent */
  double in_flight_s;        /* hang: required; hang_resolved: -1 when absent */
  uint64_t first_seen_us;    /* 0 when absent */
  bool kernel_started;       /* hang */
  int channels_started, channels_stopped, ops_in_flight, repeat; /* -1 when absent */
  double idle_s;             /* comm_idle */
  struct rpt_opref last;     /* hang, comm_idle: last_completed */
};

struct rpt_line {
  enum rpt_kind kind;
  struct rpt_header hdr;   /* RPT_RECORD, RPT_STATS, RPT_HANG, RPT_HANG_RESOLVED, RPT_IDLE */
  struct rpt_record rec;   /* RPT_RECORD */
  struct rpt_stats stats;  /* RPT_STATS */
  struct rpt_hang_line hang; /* RPT_HANG, RPT_HANG_RESOLVED, RPT_IDLE */
  char why[192];           /* RPT_NOT_RECORD, RPT_REJECTED */
};

/* Parses line[0..len) (any bytes; a trailing newline is ignored) into *out; returns out->kind. */
enum rpt_kind rpt_parse_line(const char *line, size_t len, struct rpt_line *out);
/* A line of len bytes, RPT_LINE_MAX or more, that the reader did not keep (a stream's):
 * rejected as rpt_parse_line rejects it. Returns RPT_REJECTED. */
enum rpt_kind rpt_parse_too_long(uint64_t len, struct rpt_line *out);

/*
 * The same through jansson alone, never the fast scanner (parse.c says how the two share one
 * check): the reference that tests and the fuzz target hold rpt_parse_line to, field for field.
 */
enum rpt_kind rpt_parse_line_reference(const char *line, size_t len, struct rpt_line *out);

#endif /* RPT_PARSE_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h - the plugin's configuration, read once per process from the
 * environment. A malformed value is reported (variable, value, and the
 * default used instead) and replaced by the default: never a failure.
 */
#ifndef INS_CONFIG_H
#define INS_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * Default ring size (records per communicator and kind). 4096 absorbs a burst of
 * completions while the dump thread wakes up: with 1024, a benchmark producing
 * 500,000 records/s lost 0.01-0.05% of them whenever it was held up for a few
 * milliseconds and then caught up (docs/BENCHMARKS.md); with 4096, none. It costs
 * 448 KiB per ring pair more than 1024.
 */
#define INS_DEFAULT_RING 4096

/* Prometheus mode: the node exporter reads files every 30 s or so; writing more often is waste. */
#define INS_PROM_MIN_INTERVAL_US 30000000LL
/* OTLP with no dump interval given: records reach the OTLP sink's totals at least this often
 * (its exports then carry them; sink/otlp/otlp.c). */
#define INS_OTLP_DRAIN_INTERVAL_US 1000000LL

/* NCCL_INSPECTOR_HANG_SECONDS (sink/hang.h): the default, the least a value other than 0
 * (which turns hang detection off) is raised to, and the most. */
#define INS_HANG_DEFAULT_NS (300ull * 1000000000ull)
#define INS_HANG_MIN_NS 100000000ull                   /* 0.1 s */
#define INS_HANG_MAX_NS (7ull * 86400ull * 1000000000ull) /* a week */

/* Which application groups get kernel timing (NCCL_INSPECTOR_SAMPLE_*, core/sampler.h says
 * how): every one, those in time windows, or one group (run) in N. A setting, so it lives
 * here: config.c chooses it, the sampler and the outputs read it. */
enum ins_sample_mode { INS_SAMPLE_ALL = 0, INS_SAMPLE_TIME = 1, INS_SAMPLE_GROUPS = 2 };

/* The bounds of the ops the judge leaves out (core/judge.h, "Bounds"): not made; written
 * apart from the records (their own JSON key, metrics, counters); or also folded into the
 * metrics' exact-time statistics (Prometheus, OTLP), which the user then asked for. */
enum ins_bounds { INS_BOUNDS_OFF = 0, INS_BOUNDS_APART = 1, INS_BOUNDS_MIX = 2 };

struct ins_config {
  bool enable;              /* NCCL_INSPECTOR_ENABLE (0) */
  bool enable_p2p;          /* NCCL_INSPECTOR_ENABLE_P2P (1) */
  bool dump_thread_enable;  /* NCCL_INSPECTOR_DUMP_THREAD_ENABLE (1) */
  long long interval_us;    /* NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS (-1) */
  bool verbose;             /* NCCL_INSPECTOR_DUMP_VERBOSE (0) */
  bool dump_unverified;     /* NCCL_INSPECTOR_DUMP_UNVERIFIED (0): also write the ops whose
                               timestamps could not be verified, marked so (core/judge.h) */
  int bounds;               /* NCCL_INSPECTOR_BOUNDS (apart): an enum ins_bounds */
  uint64_t min_size_bytes;  /* NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES (8192) */
  bool require_kernel_timing; /* NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING (1) */
  uint32_t coll_ring_size;  /* NCCL_INSPECTOR_DUMP_COLL_RING_SIZE (4096), power of two */
  uint32_t p2p_ring_size;   /* NCCL_INSPECTOR_DUMP_P2P_RING_SIZE (4096), power of two */
  uint32_t ring_memory_max_mb; /* NCCL_INSPECTOR_RING_MEMORY_MAX_MB (1024): what the rings of
                                  every communicator of the process hold at once (core/seg.h) */
  bool prom_dump;           /* NCCL_INSPECTOR_PROM_DUMP (0) */
  bool prom_dump_stats;     /* NCCL_INSPECTOR_PROM_DUMP_STATS (0) */
  bool prom_dump_ranks;     /* NCCL_INSPECTOR_PROM_DUMP_RANKS (0): per-rank and per-peer counters */
  bool otlp_export;         /* NCCL_INSPECTOR_OTLP_EXPORT, or the vendors' NCCL_INSPECTOR_OTEL_EXPORT (0) */
  bool json_dump;           /* NCCL_INSPECTOR_JSON_DUMP (1; 0 when PROM_DUMP=1): the JSON log */
  uint64_t hang_ns;         /* NCCL_INSPECTOR_HANG_SECONDS (300), in ns; 0: hang detection off */
  /* Sampled kernel timing (core/sampler.h); sample_mode: an enum ins_sample_mode,
   * INS_SAMPLE_ALL (0): every op. */
  int sample_mode;
  long long sample_window_ms;  /* NCCL_INSPECTOR_SAMPLE_WINDOW_MS */
  long long sample_period_ms;  /* NCCL_INSPECTOR_SAMPLE_PERIOD_MS */
  long long sample_every;      /* NCCL_INSPECTOR_SAMPLE_GROUPS: one group in N ... */
  long long sample_burst;      /* NCCL_INSPECTOR_SAMPLE_GROUPS_BURST: ... in runs of B (1) */
  char dump_dir[PATH_MAX];  /* NCCL_INSPECTOR_DUMP_DIR, else nccl-inspector-<jobid> */
  char trace_dir[PATH_MAX]; /* NCCL_INSPECTOR_TRACE_DIR: also write every callback (empty: off) */
  char hostname[256];
  char job_id[512];   /* SLURM_JOB_ID, SLURM_JOBID, PBS_JOBID or LSB_JOBID; "unknown" */
  bool job_id_set;    /* one of those was set (not empty): job_id is not the "unknown" of none,
                         which labels Prometheus and OTLP but the JSON records never write */
  char cluster[512];  /* NCCL_INSPECTOR_CLUSTER or SLURM_CLUSTER_NAME; "unknown" */
};

/* Fill *cfg from the environment, warning through the logger about bad values. */
void ins_config_load(struct ins_config *cfg);

/* One line describing the resolved configuration, for the init message. */
void ins_config_describe(const struct ins_config *cfg, char *buf, int len);

/* Parsers, exposed for unit tests. Return 0 and set *out, or -1 if malformed. */
int ins_parse_bool(const char *s, bool *out);
int ins_parse_ll(const char *s, long long lo, long long hi, long long *out);
/* A number of seconds, digits with an optional fraction ("300", "0.5", ".5"; blanks around it
 * allowed; no sign, exponent, hex, inf or nan), in ns (digits past the 9th decimal dropped;
 * 10^10 s and more read as 10^10 s): 0 and *ns set, or -1 if malformed. */
int ins_parse_seconds(const char *s, uint64_t *ns);

#endif

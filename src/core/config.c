/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - environment parsing for struct ins_config.
 *
 * Every variable has a default; a value we cannot use is named in one WARN
 * together with the value used instead (the value given only as core/redact.h's
 * ins_redact_value shows it: a credential pasted into the wrong variable is not).
 * Each is a notice (core/log.h): the user sees it whatever NCCL_DEBUG says, since
 * the job then runs with a setting they did not ask for. Read once per process, so
 * each is said at most once.
 * Read once, before any comm is tracked, so the hot path only reads a const struct.
 */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/env.h"
#include "core/log.h"
#include "core/redact.h"
#include "core/seg.h"
#include "core/utf8.h"

#define RING_MIN 2
#define RING_MAX (1u << 24)

int ins_parse_bool(const char *s, bool *out) {
  static const char *yes[] = {"1", "true", "yes", "on"};
  static const char *no[] = {"0", "false", "no", "off"};
  /* blanks around the value are not part of it (' 1' from a quoted shell line) */
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) n--;
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
    if (n == strlen(yes[i]) && !strncasecmp(s, yes[i], n)) { *out = true; return 0; }
    if (n == strlen(no[i]) && !strncasecmp(s, no[i], n)) { *out = false; return 0; }
  }
  return -1;
}

int ins_parse_ll(const char *s, long long lo, long long hi, long long *out) {
  while (isspace((unsigned char)*s)) s++;
  if (!*s) return -1;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  while (isspace((unsigned char)*end)) end++;
  if (errno || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int ins_parse_seconds(const char *s, uint64_t *ns) {
  while (isspace((unsigned char)*s)) s++;
  uint64_t whole = 0, frac = 0, scale = 1000000000ull;
  int digits = 0;
  for (; *s >= '0' && *s <= '9'; s++, digits++) /* saturates at 10^10 s (300 years) */
    whole = whole >= 1000000000ull ? 10000000000ull : whole * 10 + (uint64_t)(*s - '0');
  if (*s == '.') {
    for (s++; *s >= '0' && *s <= '9'; s++, digits++)
      if (scale > 1) frac += (uint64_t)(*s - '0') * (scale /= 10);
  }
  while (isspace((unsigned char)*s)) s++;
  if (!digits || *s) return -1;
  *ns = whole * 1000000000ull + frac;
  return 0;
}

static void env_bool(const char *name, bool def, bool *out) {
  const char *s = getenv(name);
  *out = def;
  if (!s || !*s) return;
  if (ins_parse_bool(s, out) != 0) {
    *out = def;
    char shown[INS_REDACT_VALUE_SHOWN];
    ins_notice(NULL, NULL, "%s=%s is not 0 or 1; using %d", name,
               ins_redact_value(shown, sizeof shown, s, strlen(s)), def);
  }
}

static void env_ll(const char *name, long long def, long long lo, long long hi,
                   long long *out) {
  const char *s = getenv(name);
  *out = def;
  if (!s || !*s) return;
  if (ins_parse_ll(s, lo, hi, out) != 0) {
    *out = def;
    char shown[INS_REDACT_VALUE_SHOWN];
    ins_notice(NULL, NULL, "%s=%s is not an integer in [%lld, %lld]; using %lld", name,
               ins_redact_value(shown, sizeof shown, s, strlen(s)), lo, hi, def);
  }
}

/* NCCL_INSPECTOR_HANG_SECONDS: 0 turns hang detection off; a value between 0 and 0.1 s, or
 * above a week, is raised or lowered to that bound; anything else malformed: the default. */
static uint64_t env_hang(void) {
  static const char name[] = "NCCL_INSPECTOR_HANG_SECONDS";
  const char *s = getenv(name);
  uint64_t ns;
  if (!s || !*s) return INS_HANG_DEFAULT_NS;
  char shown[INS_REDACT_VALUE_SHOWN];
  if (ins_parse_seconds(s, &ns) != 0) {
    ins_notice(NULL, NULL, "%s=%s is not a number of seconds (0 turns hang detection off); "
               "using %llu", name, ins_redact_value(shown, sizeof shown, s, strlen(s)),
               (unsigned long long)(INS_HANG_DEFAULT_NS / 1000000000ull));
    return INS_HANG_DEFAULT_NS;
  }
  if (ns && ns < INS_HANG_MIN_NS) {
    ins_notice(NULL, NULL, "%s=%s is below the least threshold; using 0.1 (0 turns hang "
               "detection off)", name, ins_redact_value(shown, sizeof shown, s, strlen(s)));
    return INS_HANG_MIN_NS;
  }
  if (ns > INS_HANG_MAX_NS) {
    ins_notice(NULL, NULL, "%s=%s is above the most, a week; using %llu", name,
               ins_redact_value(shown, sizeof shown, s, strlen(s)),
               (unsigned long long)(INS_HANG_MAX_NS / 1000000000ull));
    return INS_HANG_MAX_NS;
  }
  return ns;
}

/* NCCL_INSPECTOR_BOUNDS: apart (1, on, the default), mix, or off (0); malformed: apart. */
static int env_bounds(void) {
  static const char name[] = "NCCL_INSPECTOR_BOUNDS";
  const char *s = getenv(name);
  bool on;
  if (!s || !*s) return INS_BOUNDS_APART;
  if (ins_parse_bool(s, &on) == 0) return on ? INS_BOUNDS_APART : INS_BOUNDS_OFF;
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) n--;
  if (n == 5 && !strncasecmp(s, "apart", n)) return INS_BOUNDS_APART;
  if (n == 3 && !strncasecmp(s, "mix", n)) return INS_BOUNDS_MIX;
  char shown[INS_REDACT_VALUE_SHOWN];
  ins_notice(NULL, NULL, "%s=%s is not apart, mix or off; using apart", name,
             ins_redact_value(shown, sizeof shown, s, strlen(s)));
  return INS_BOUNDS_APART;
}

static uint32_t env_ring(const char *name) {
  long long v;
  env_ll(name, INS_DEFAULT_RING, RING_MIN, RING_MAX, &v);
  uint32_t p = RING_MIN;
  while (p < (uint64_t)v) p <<= 1;
  if (p != v) ins_info("%s=%lld rounded up to %u (ring sizes are powers of two)", name, v, p);
  return p;
}

/* The first of these set: the job id and the cluster name that name the default dump
 * directory and label the Prometheus samples (one list, used by both). */
static const char *env_first(const char *const *vars, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return v;
  }
  return NULL;
}
static const char *const k_job_vars[] = {"SLURM_JOB_ID", "SLURM_JOBID", "PBS_JOBID", "LSB_JOBID"};
static const char *const k_cluster_vars[] = {"NCCL_INSPECTOR_CLUSTER", "SLURM_CLUSTER_NAME"};

#define SAMPLE_MAX_MS (86400LL * 1000) /* a day */
#define SAMPLE_DEFAULT_WINDOW_MS 1000LL
#define SAMPLE_DEFAULT_PERIOD_MS 30000LL

/*
 * NCCL_INSPECTOR_SAMPLE_WINDOW_MS / _PERIOD_MS (time windows) and
 * NCCL_INSPECTOR_SAMPLE_GROUPS (one group in N). Unset: every op is timed.
 * Time windows win over the group count when both are given.
 */
static void sample_config(struct ins_config *cfg) {
  const char *ws = getenv("NCCL_INSPECTOR_SAMPLE_WINDOW_MS");
  const char *ps = getenv("NCCL_INSPECTOR_SAMPLE_PERIOD_MS");
  const char *gs = getenv("NCCL_INSPECTOR_SAMPLE_GROUPS");
  bool want_time = (ws && *ws) || (ps && *ps), want_groups = gs && *gs;
  cfg->sample_mode = INS_SAMPLE_ALL;
  if (want_time) {
    long long w, p;
    env_ll("NCCL_INSPECTOR_SAMPLE_PERIOD_MS", SAMPLE_DEFAULT_PERIOD_MS, 1, SAMPLE_MAX_MS, &p);
    /* A period of 10 s or less without a window: a tenth of it. */
    long long wdef = p > 10 * SAMPLE_DEFAULT_WINDOW_MS ? SAMPLE_DEFAULT_WINDOW_MS : (p / 10 ? p / 10 : 1);
    env_ll("NCCL_INSPECTOR_SAMPLE_WINDOW_MS", wdef, 1, SAMPLE_MAX_MS, &w);
    char shown[INS_REDACT_VALUE_SHOWN];
    if (want_groups)
      ins_notice(NULL, NULL, "NCCL_INSPECTOR_SAMPLE_GROUPS=%s ignored: time windows "
                 "(NCCL_INSPECTOR_SAMPLE_WINDOW_MS/_PERIOD_MS) are set and take precedence",
                 ins_redact_value(shown, sizeof shown, gs, strlen(gs)));
    if (w >= p) {
      ins_notice(NULL, NULL, "NCCL_INSPECTOR_SAMPLE_WINDOW_MS=%lld is not shorter than "
                 "NCCL_INSPECTOR_SAMPLE_PERIOD_MS=%lld; using no sampling (every op timed)", w, p);
      return;
    }
    cfg->sample_mode = INS_SAMPLE_TIME;
    cfg->sample_window_ms = w;
    cfg->sample_period_ms = p;
    return;
  }
  if (!want_groups) return;
  long long n, b;
  env_ll("NCCL_INSPECTOR_SAMPLE_GROUPS", 1, 1, 1LL << 40, &n);
  env_ll("NCCL_INSPECTOR_SAMPLE_GROUPS_BURST", 1, 1, 1LL << 20, &b);
  if (n > 1) {
    cfg->sample_mode = INS_SAMPLE_GROUPS;
    cfg->sample_every = n;
    cfg->sample_burst = b;
  }
}

void ins_config_load(struct ins_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  ins_env_check(environ); /* a misspelled setting gets a warning, not silence */
  env_bool("NCCL_INSPECTOR_ENABLE", false, &cfg->enable);
  env_bool("NCCL_INSPECTOR_ENABLE_P2P", true, &cfg->enable_p2p);
  env_bool("NCCL_INSPECTOR_DUMP_THREAD_ENABLE", true, &cfg->dump_thread_enable);
  env_ll("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", -1, -1, 86400LL * 1000000,
         &cfg->interval_us);
  env_bool("NCCL_INSPECTOR_DUMP_VERBOSE", false, &cfg->verbose);
  env_bool("NCCL_INSPECTOR_DUMP_UNVERIFIED", false, &cfg->dump_unverified);
  cfg->bounds = env_bounds();
  long long min_size;
  env_ll("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", 8192, 0, LLONG_MAX, &min_size);
  cfg->min_size_bytes = (uint64_t)min_size;
  env_bool("NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING", true, &cfg->require_kernel_timing);
  cfg->coll_ring_size = env_ring("NCCL_INSPECTOR_DUMP_COLL_RING_SIZE");
  cfg->p2p_ring_size = env_ring("NCCL_INSPECTOR_DUMP_P2P_RING_SIZE");
  long long ring_mb;
  env_ll("NCCL_INSPECTOR_RING_MEMORY_MAX_MB", INS_SEG_DEFAULT_MAX_MB, 1, 65536, &ring_mb);
  cfg->ring_memory_max_mb = (uint32_t)ring_mb;
  env_bool("NCCL_INSPECTOR_PROM_DUMP", false, &cfg->prom_dump);
  env_bool("NCCL_INSPECTOR_PROM_DUMP_STATS", false, &cfg->prom_dump_stats);
  env_bool("NCCL_INSPECTOR_PROM_DUMP_RANKS", false, &cfg->prom_dump_ranks);
  bool otlp = false, otel = false;
  env_bool("NCCL_INSPECTOR_OTLP_EXPORT", false, &otlp);
  env_bool("NCCL_INSPECTOR_OTEL_EXPORT", false, &otel); /* the vendors' name, a synonym */
  cfg->otlp_export = otlp || otel;
  env_bool("NCCL_INSPECTOR_JSON_DUMP", !cfg->prom_dump, &cfg->json_dump);
  if (!cfg->json_dump && !cfg->prom_dump && !cfg->otlp_export) {
    ins_notice(NULL, NULL, "NCCL_INSPECTOR_JSON_DUMP=0 with neither NCCL_INSPECTOR_PROM_DUMP nor "
               "NCCL_INSPECTOR_OTLP_EXPORT would write nothing; using JSON");
    cfg->json_dump = true;
  }
  /* Live metrics need records drained while the job runs: -1 (teardown only) would leave
   * every export empty until the end. */
  if (cfg->otlp_export && cfg->interval_us < 0) cfg->interval_us = INS_OTLP_DRAIN_INTERVAL_US;
  /* Prometheus mode with no interval given: every 30 s, what the node exporter's polling
   * and the seed's own example imply (-1 would write only at teardown, which removes the
   * files: nothing for the node exporter to read while the job runs). */
  const char *iv = getenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS");
  if (cfg->prom_dump && (!iv || !*iv)) cfg->interval_us = INS_PROM_MIN_INTERVAL_US;
  /* The seed's rule: a minimum of 30 s in Prometheus mode. 0 (continuous) is below it too:
   * it would rewrite every file for each record. -1 (teardown only) is kept. */
  if (cfg->prom_dump && cfg->interval_us >= 0 && cfg->interval_us < INS_PROM_MIN_INTERVAL_US) {
    ins_notice(NULL, NULL, "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=%lld is below the "
               "Prometheus minimum; using %lld (30 s)", cfg->interval_us, INS_PROM_MIN_INTERVAL_US);
    cfg->interval_us = INS_PROM_MIN_INTERVAL_US;
  }

  sample_config(cfg);
  cfg->hang_ns = env_hang();

  const char *dir = getenv("NCCL_INSPECTOR_DUMP_DIR");
  const char *job = env_first(k_job_vars, sizeof k_job_vars / sizeof *k_job_vars);
  const char *cluster = env_first(k_cluster_vars, sizeof k_cluster_vars / sizeof *k_cluster_vars);
  snprintf(cfg->job_id, sizeof cfg->job_id, "%s", job ? job : "unknown");
  cfg->job_id_set = job != NULL;
  snprintf(cfg->cluster, sizeof cfg->cluster, "%s", cluster ? cluster : "unknown");
  int n;
  if (dir && *dir)
    n = snprintf(cfg->dump_dir, sizeof cfg->dump_dir, "%s", dir);
  else
    n = snprintf(cfg->dump_dir, sizeof cfg->dump_dir, "nccl-inspector-%s", job ? job : "unknown-jobid");
  if (n < 0 || (size_t)n >= sizeof cfg->dump_dir) {
    ins_notice(NULL, NULL, "NCCL_INSPECTOR_DUMP_DIR is longer than %zu bytes; using "
               "nccl-inspector-unknown-jobid", sizeof cfg->dump_dir - 1);
    snprintf(cfg->dump_dir, sizeof cfg->dump_dir, "nccl-inspector-unknown-jobid");
  }
  const char *trace = getenv("NCCL_INSPECTOR_TRACE_DIR");
  if (trace && *trace) snprintf(cfg->trace_dir, sizeof cfg->trace_dir, "%s", trace);
  char host[sizeof cfg->hostname] = "";
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) snprintf(host, sizeof host, "unknown-host");
  /* The host name names our files and goes into JSON and label values: valid UTF-8,
   * and no '/' or control character (Linux accepts any bytes in a host name). */
  ins_utf8_clean(cfg->hostname, sizeof cfg->hostname, host);
  for (char *p = cfg->hostname; *p; p++)
    if (*p == '/' || (unsigned char)*p < 0x20 || *p == 0x7f) *p = '_';
}

void ins_config_describe(const struct ins_config *cfg, char *buf, int len) {
  char sample[128] = "", hang[48];
  int hn = snprintf(hang, sizeof hang, "%llu.%09llu", (unsigned long long)(cfg->hang_ns / 1000000000ull),
                    (unsigned long long)(cfg->hang_ns % 1000000000ull));
  while (hn > 0 && (hang[hn - 1] == '0' || hang[hn - 1] == '.') && strchr(hang, '.'))
    hang[--hn] = '\0'; /* 0.5, 300: no trailing zeros */
  if (cfg->sample_mode == INS_SAMPLE_TIME)
    snprintf(sample, sizeof sample, " SAMPLE_WINDOW_MS=%lld SAMPLE_PERIOD_MS=%lld (timing %lld ms of every %lld)",
             cfg->sample_window_ms, cfg->sample_period_ms, cfg->sample_window_ms, cfg->sample_period_ms);
  else if (cfg->sample_mode == INS_SAMPLE_GROUPS)
    snprintf(sample, sizeof sample, " SAMPLE_GROUPS=%lld SAMPLE_GROUPS_BURST=%lld (timing %lld "
             "consecutive group%s of every %lld)", cfg->sample_every, cfg->sample_burst,
             cfg->sample_burst, cfg->sample_burst == 1 ? "" : "s", cfg->sample_every * cfg->sample_burst);
  snprintf(buf, (size_t)len,
           "ENABLE_P2P=%d DUMP_THREAD_ENABLE=%d DUMP_THREAD_INTERVAL_MICROSECONDS=%lld "
           "DUMP_VERBOSE=%d DUMP_MIN_SIZE_BYTES=%llu REQUIRE_KERNEL_TIMING=%d "
           "DUMP_COLL_RING_SIZE=%u DUMP_P2P_RING_SIZE=%u RING_MEMORY_MAX_MB=%u PROM_DUMP=%d "
           "PROM_DUMP_STATS=%d JSON_DUMP=%d OTLP_EXPORT=%d HANG_SECONDS=%s DUMP_DIR=%s%s%s%s%s%s%s",
           cfg->enable_p2p, cfg->dump_thread_enable, cfg->interval_us, cfg->verbose,
           (unsigned long long)cfg->min_size_bytes, cfg->require_kernel_timing,
           cfg->coll_ring_size, cfg->p2p_ring_size, cfg->ring_memory_max_mb, cfg->prom_dump, cfg->prom_dump_stats, cfg->json_dump,
           cfg->otlp_export, hang, cfg->dump_dir,
           cfg->trace_dir[0] ? " TRACE_DIR=" : "", cfg->trace_dir,
           cfg->dump_unverified ? " DUMP_UNVERIFIED=1" : "", cfg->prom_dump_ranks ? " PROM_DUMP_RANKS=1" : "",
           cfg->bounds == INS_BOUNDS_OFF ? " BOUNDS=off" : cfg->bounds == INS_BOUNDS_MIX ? " BOUNDS=mix" : "",
           sample);
}

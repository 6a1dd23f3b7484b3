/* SPDX-License-Identifier: Apache-2.0 */
/*
 * env.c - a misspelled setting is not silent (see env.h).
 *
 * getenv() of the right name never sees NCCL_INSPECTOR_ENABLED=1 or
 * NCCL_INSPECTOR_PROM_DUMPS=1: the job runs without what the user asked for, and
 * nothing says why. So the whole environment is scanned once, at process init, for
 * names that look like ours, and each is named (never its value: name_shown) in a
 * notice (core/log.h: seen whatever NCCL_DEBUG says). The lists here are the one
 * place the plugin's setting names are listed together; tests/test_bad_env.py
 * (names.env-lists) keeps them equal to the names the sources actually read.
 */
#include "core/env.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/log.h"

const char *const ins_env_inspector_names[] = {
    "NCCL_INSPECTOR_ENABLE",
    "NCCL_INSPECTOR_ENABLE_P2P",
    "NCCL_INSPECTOR_DUMP_DIR",
    "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES",
    "NCCL_INSPECTOR_DUMP_THREAD_ENABLE",
    "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS",
    "NCCL_INSPECTOR_DUMP_VERBOSE",
    "NCCL_INSPECTOR_DUMP_UNVERIFIED",
    "NCCL_INSPECTOR_BOUNDS",
    "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE",
    "NCCL_INSPECTOR_DUMP_P2P_RING_SIZE",
    "NCCL_INSPECTOR_RING_MEMORY_MAX_MB",
    "NCCL_INSPECTOR_JSON_DUMP",
    "NCCL_INSPECTOR_PROM_DUMP",
    "NCCL_INSPECTOR_PROM_DUMP_STATS",
    "NCCL_INSPECTOR_PROM_DUMP_RANKS",
    "NCCL_INSPECTOR_OTLP_EXPORT",
    "NCCL_INSPECTOR_OTEL_EXPORT",
    "NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING",
    "NCCL_INSPECTOR_SAMPLE_WINDOW_MS",
    "NCCL_INSPECTOR_SAMPLE_PERIOD_MS",
    "NCCL_INSPECTOR_SAMPLE_GROUPS",
    "NCCL_INSPECTOR_SAMPLE_GROUPS_BURST",
    "NCCL_INSPECTOR_TRACE_DIR",
    "NCCL_INSPECTOR_CLUSTER",
    "NCCL_INSPECTOR_HANG_SECONDS",
    NULL,
};

const char *const ins_env_otel_names[] = {
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SERVICE_NAME",
    NULL,
};

/* Names of the OpenTelemetry specification that other SDKs read and we do not: never
 * taken for a misspelling of ours, however close they come. */
static const char *const k_otel_foreign[] = {
    "OTEL_METRIC_EXPORT_TIMEOUT", "OTEL_METRICS_EXPORTER", "OTEL_TRACES_EXPORTER",
    "OTEL_LOGS_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_LOG_LEVEL", "OTEL_PROPAGATORS",
    NULL,
};

#define NAME_MAX_LEN 128

size_t ins_env_distance(const char *a, const char *b, size_t cap) {
  size_t n = strlen(a), m = strlen(b);
  if (n > NAME_MAX_LEN || m > NAME_MAX_LEN) return cap + 1;
  if ((n > m ? n - m : m - n) > cap) return cap + 1;
  /* three rows of the optimal-string-alignment table */
  size_t rows[3][NAME_MAX_LEN + 1];
  size_t *pp = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= m; j++) prev[j] = j;
  for (size_t i = 1; i <= n; i++) {
    cur[0] = i;
    size_t best = cur[0];
    for (size_t j = 1; j <= m; j++) {
      size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
      size_t d = sub < del ? sub : del;
      if (ins < d) d = ins;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < d)
        d = pp[j - 2] + 1;
      cur[j] = d;
      if (d < best) best = d;
    }
    if (best > cap) return cap + 1; /* every path is over already */
    size_t *t = pp;
    pp = prev, prev = cur, cur = t;
  }
  return prev[m] <= cap ? prev[m] : cap + 1;
}

static bool in_list(const char *name, size_t len, const char *const *list) {
  for (; *list; list++)
    if (strlen(*list) == len && !strncmp(*list, name, len)) return true;
  return false;
}

/* The closest name of list to name (its first len bytes), and its distance. */
static const char *closest(const char *name, size_t len, const char *const *list, size_t *dist) {
  char buf[NAME_MAX_LEN + 1];
  if (len > NAME_MAX_LEN) len = NAME_MAX_LEN;
  memcpy(buf, name, len);
  buf[len] = 0;
  const char *best = NULL;
  *dist = SIZE_MAX;
  for (; *list; list++) {
    size_t d = ins_env_distance(buf, *list, NAME_MAX_LEN);
    if (d < *dist) *dist = d, best = *list;
  }
  return best;
}

/* How much of a variable's name (len bytes) a warning shows: up to the first byte a name
 * in a shell is not made of ([A-Za-z0-9_]), at most NAME_SHOWN_MAX. The value is never
 * shown: an unknown variable is named to say that it does nothing, and what it holds may
 * be a credential (a misspelled OTEL_EXPORTER_OTLP_HEADERS). What follows such a byte may
 * be a value too: an entry without '=' ("NAME:token", which execve allows), or a name
 * with the value glued on. */
#define NAME_SHOWN_MAX 64
static size_t name_shown(const char *name, size_t len) {
  size_t n = 0;
  while (n < len && n < NAME_SHOWN_MAX && (isalnum((unsigned char)name[n]) || name[n] == '_')) n++;
  return n;
}

/* The name an unknown NCCL_INSPECTOR_ variable (len bytes) most likely meant, or NULL when
 * none is likely enough to name. A near spelling (distance at most 2, or a quarter of the
 * part after the prefix); a known name it begins (the unit left off: DUMP_MIN_SIZE for
 * DUMP_MIN_SIZE_BYTES); or an OTel variable it names by its tail (OTLP_ENDPOINT for
 * OTEL_EXPORTER_OTLP_ENDPOINT: Inspector reads the endpoint from OTel's variables only).
 * A known name followed by more words (ENABLE_WARN) is no hint: the closest setting by
 * spelling there (ENABLE_P2P) would send the user the wrong way. */
static const char *inspector_hint(const char *e, size_t len, size_t prefix_len) {
  size_t d;
  const char *best = closest(e, len, ins_env_inspector_names, &d);
  size_t tail = len - prefix_len, near = tail / 4 > 2 ? tail / 4 : 2;
  if (best && d <= near) return best;
  for (const char *const *k = ins_env_inspector_names; *k; k++)
    if (strlen(*k) > len && !strncmp(*k, e, len) && (*k)[len] == '_') return *k;
  const char *otel = NULL; /* the shortest OTel name ending in "_" + the tail */
  for (const char *const *k = ins_env_otel_names; *k; k++) {
    size_t kl = strlen(*k);
    if (kl > tail && (*k)[kl - tail - 1] == '_' && !strncmp(*k + kl - tail, e + prefix_len, tail) &&
        (!otel || kl < strlen(otel)))
      otel = *k;
  }
  return otel;
}

int ins_env_check(char *const *envp) {
  static const char ins[] = "NCCL_INSPECTOR_", otel[] = "OTEL_";
  int unknown = 0;
  for (; envp && *envp; envp++) {
    const char *e = *envp, *eq = strchr(e, '=');
    size_t len = eq ? (size_t)(eq - e) : strlen(e);
    const char *hint;
    size_t d;
    if (len > strlen(ins) - 1 && !strncmp(e, ins, strlen(ins))) {
      if (in_list(e, len, ins_env_inspector_names)) continue;
      hint = inspector_hint(e, len, strlen(ins));
    } else if (len > strlen(otel) && !strncmp(e, otel, strlen(otel))) {
      if (in_list(e, len, ins_env_otel_names) || in_list(e, len, k_otel_foreign)) continue;
      hint = closest(e, len, ins_env_otel_names, &d);
      if (d > 2) continue; /* another SDK's setting */
    } else {
      continue;
    }
    if (++unknown <= INS_ENV_MAX_WARNINGS) {
      size_t shown = name_shown(e, len);
      if (hint)
        ins_notice(NULL, NULL, "%.*s%s is not a setting Inspector knows, and is ignored: did you "
                   "mean %s? (docs/reference.md lists them)", (int)shown, e, shown < len ? "..." : "",
                   hint);
      else
        ins_notice(NULL, NULL, "%.*s%s is not a setting Inspector knows, and is ignored "
                   "(docs/reference.md lists them)", (int)shown, e, shown < len ? "..." : "");
    }
  }
  if (unknown > INS_ENV_MAX_WARNINGS)
    ins_notice(NULL, NULL, "%d more environment variables named like Inspector's settings are not "
               "settings it knows, and are ignored", unknown - INS_ENV_MAX_WARNINGS);
  return unknown;
}

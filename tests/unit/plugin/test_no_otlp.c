/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_no_otlp.c - a plugin built without OTLP (cmake -DINSPECTOR_OTLP=OFF;
 * registered only in such a build, tests/unit/tests.cmake): the setting that
 * asks for OTLP gets one warning that this build has none, and turns on no
 * sink; unset or 0, no warning. The outputs that are built stay on.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/config.h"
#include "core/log.h"
#include "sink/sink.h"

static int g_no_otlp_warns;
static char g_last[1024];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (level == PROF_LOG_WARN && strstr(msg, "no OTLP")) {
    g_no_otlp_warns++;
    snprintf(g_last, sizeof g_last, "%s", msg);
  }
}

/* The active sinks' names, joined with ','. */
static const char *active(const struct ins_config *cfg) {
  static char out[128];
  int n;
  const struct ins_sink *const *s = ins_sinks_active(cfg, &n);
  out[0] = '\0';
  for (int i = 0; i < n; i++)
    snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? "," : "", s[i]->name);
  return out;
}

int main(void) {
  ins_log_set_logger(logger);
  struct ins_config cfg;
  setenv("NCCL_INSPECTOR_ENABLE", "1", 1);

  /* nothing of OTLP asked for: no warning */
  ins_config_load(&cfg);
  CHECK_STR(active(&cfg), "json");
  CHECK_EQ_U(g_no_otlp_warns, 0);

  /* the switch given, but off: no warning */
  setenv("NCCL_INSPECTOR_OTLP_EXPORT", "0", 1);
  ins_config_load(&cfg);
  CHECK_STR(active(&cfg), "json");
  CHECK_EQ_U(g_no_otlp_warns, 0);

  /* the vendors' name for the switch: the warning, and the JSON log as without it */
  setenv("NCCL_INSPECTOR_OTEL_EXPORT", "1", 1);
  ins_config_load(&cfg);
  CHECK(cfg.otlp_export);
  CHECK_STR(active(&cfg), "json");
  CHECK_EQ_U(g_no_otlp_warns, 1);
  CHECK(strstr(g_last, "NCCL_INSPECTOR_OTLP_EXPORT") != NULL);
  CHECK(strstr(g_last, "-DINSPECTOR_OTLP=OFF") != NULL);

  /* the switch itself, with Prometheus: no OTLP sink, the others as configured; still
   * the one warning of the process */
  unsetenv("NCCL_INSPECTOR_OTEL_EXPORT");
  setenv("NCCL_INSPECTOR_OTLP_EXPORT", "1", 1);
  setenv("NCCL_INSPECTOR_PROM_DUMP", "1", 1);
  ins_config_load(&cfg);
  CHECK(cfg.otlp_export);
  CHECK_STR(active(&cfg), "prometheus");
  CHECK_EQ_U(g_no_otlp_warns, 1);
  return check_report("no_otlp");
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c - the plugin-facing logger (see log.h).
 *
 * Each message is formatted into one buffer and written with one stdio call,
 * so that lines from concurrent replay threads do not interleave mid-line.
 *
 * What it prints is what NCCL's ncclDebugLog would (NCCL's src/debug.cc, written
 * here again from its rules, not shared with the plugin's src/core/log.c, so that
 * a test of what reaches a user checks the plugin against an independent reading):
 * nothing unless NCCL_DEBUG names a level (VERSION, WARN, INFO, ABORT, TRACE; any
 * case), then each message up to that level whose subsystem flags meet
 * NCCL_DEBUG_SUBSYS (a comma-separated list, all but those after a leading '^';
 * unset: INIT, BOOTSTRAP and ENV), WARNs included.
 */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl/profiler_abi.h"

static bool g_quiet;
static int g_level = PROF_LOG_NONE; /* NCCL_DEBUG */
static unsigned long g_mask;       /* NCCL_DEBUG_SUBSYS */

/* NCCL's subsystem names that a plugin or a test may meet; others are ignored, as NCCL
 * ignores names it does not know. */
static const struct { const char *name; unsigned long bit; } k_subsys[] = {
    {"INIT", 1UL}, {"ENV", 128UL}, {"BOOTSTRAP", 4096UL}, {"PROFILE", 16384UL}, {"ALL", ~0UL},
};

void rp_log_read_env(void) {
  static const char *const levels[] = {"NONE", "VERSION", "WARN", "INFO", "ABORT", "TRACE"};
  const char *d = getenv("NCCL_DEBUG");
  g_level = PROF_LOG_NONE;
  for (int i = 1; d && i < (int)(sizeof levels / sizeof *levels); i++)
    if (!strcasecmp(d, levels[i])) g_level = i;
  const char *s = getenv("NCCL_DEBUG_SUBSYS");
  if (!s) {
    g_mask = 1UL | 128UL | 4096UL; /* NCCL's default: INIT, ENV, BOOTSTRAP */
    return;
  }
  bool invert = s[0] == '^';
  g_mask = invert ? ~0UL : 0;
  for (const char *p = s + invert; *p;) {
    size_t n = strcspn(p, ",");
    for (size_t i = 0; i < sizeof k_subsys / sizeof *k_subsys; i++)
      if (strlen(k_subsys[i].name) == n && !strncasecmp(p, k_subsys[i].name, n))
        g_mask = invert ? g_mask & ~k_subsys[i].bit : g_mask | k_subsys[i].bit;
    p += n;
    if (*p == ',') p++;
  }
}
static bool g_dies;
static atomic_int g_live;      /* communicators between init and finalize */
static atomic_bool g_exiting;

void rp_log_set_quiet(bool quiet) { g_quiet = quiet; }

static void at_exit(void) { atomic_store(&g_exiting, true); }

void rp_log_set_logger_dies(bool dies) {
  g_dies = dies;
  /* atexit handlers run before the destructors of loaded libraries (ld.so's
   * _dl_fini is the first handler registered, so the last to run) */
  if (dies) atexit(at_exit);
}

void rp_log_comm_opening(void) { atomic_fetch_add(&g_live, 1); }
void rp_log_comm_closed(void) { atomic_fetch_sub(&g_live, 1); }

void rp_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  const char *tag;
  switch (level) {
  case PROF_LOG_WARN: tag = "WARN"; break;
  case PROF_LOG_INFO: tag = "INFO"; break;
  case PROF_LOG_TRACE: tag = "TRACE"; break;
  case PROF_LOG_VERSION: tag = "VERSION"; break;
  case PROF_LOG_ABORT: tag = "ABORT"; break;
  default: return; /* NONE */
  }
  if (g_quiet && (level == PROF_LOG_INFO || level == PROF_LOG_TRACE)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt ? fmt : "", ap);
  va_end(ap);
  if (g_dies && (atomic_load(&g_exiting) || atomic_load(&g_live) <= 0)) {
    fprintf(stderr, "inspector-replay: the plugin called NCCL's logger %s (--logger-dies): %s\n",
            atomic_load(&g_exiting) ? "during exit" : "with no communicator alive", msg);
    abort();
  }
  if (level > g_level || !(flags & g_mask)) return; /* NCCL prints nothing of it */
  if (level == PROF_LOG_TRACE)
    fprintf(stderr, "NCCL TRACE %s:%d %s\n", file ? file : "?", line, msg);
  else
    fprintf(stderr, "NCCL %s %s\n", tag, msg);
}

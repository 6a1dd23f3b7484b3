/*
 * log.c - the plugin-facing logger (see log.h).
 *
 * Each message is formatted into one buffer and written with one stdio call,
 * so that lines from concurrent replay threads do not interleave mid-line.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

#include "abi/profiler_abi.h"

static bool g_quiet;

void rp_log_set_quiet(bool quiet) { g_quiet = quiet; }

void rp_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags;
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
  if (level == PROF_LOG_TRACE)
    fprintf(stderr, "NCCL TRACE %s:%d %s\n", file ? file : "?", line, msg);
  else
    fprintf(stderr, "NCCL %s %s\n", tag, msg);
}

/*
 * log.c - the plugin-facing logger (see log.h).
 *
 * Each message is formatted into one buffer and written with one stdio call,
 * so that lines from concurrent replay threads do not interleave mid-line.
 */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "nccl/profiler_abi.h"

static bool g_quiet;
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
  if (g_dies && (atomic_load(&g_exiting) || atomic_load(&g_live) <= 0)) {
    fprintf(stderr, "inspector-replay: the plugin called NCCL's logger %s (--logger-dies): %s\n",
            atomic_load(&g_exiting) ? "during exit" : "with no communicator alive", msg);
    abort();
  }
  if (level == PROF_LOG_TRACE)
    fprintf(stderr, "NCCL TRACE %s:%d %s\n", file ? file : "?", line, msg);
  else
    fprintf(stderr, "NCCL %s %s\n", tag, msg);
}

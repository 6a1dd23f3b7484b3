/*
 * log.c - routes plugin messages to NCCL's logger (subsystem PROFILE), or to
 * stderr when no logger was given (never in NCCL; possible in odd hosts).
 */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

#ifndef INSPECTOR_LOG_WARN
#define INSPECTOR_LOG_WARN 0
#endif

static _Atomic(prof_logger_t) g_logger;

void ins_log_set_logger(prof_logger_t logger) {
  prof_logger_t none = NULL;
  if (logger) atomic_compare_exchange_strong(&g_logger, &none, logger);
}

static void vlog(int level, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  prof_logger_t logger = atomic_load(&g_logger);
  if (logger)
    logger(level, PROF_SUBSYS_PROFILE, __FILE__, __LINE__, "Inspector: %s", msg);
  else
    fprintf(stderr, "NCCL %s Inspector: %s\n", level == PROF_LOG_WARN ? "WARN" : "INFO", msg);
}

void ins_info(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(INSPECTOR_LOG_WARN ? PROF_LOG_WARN : PROF_LOG_INFO, fmt, ap);
  va_end(ap);
}

void ins_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(PROF_LOG_WARN, fmt, ap);
  va_end(ap);
}

int ins_warn_once(atomic_int *flag, const char *fmt, ...) {
  if (atomic_exchange(flag, 1)) return 0;
  va_list ap;
  va_start(ap, fmt);
  vlog(PROF_LOG_WARN, fmt, ap);
  va_end(ap);
  return 1;
}

/*
 * log.c - routes plugin messages to NCCL's logger (subsystem PROFILE), or to
 * stderr when there is none: before NCCL gave one (odd hosts), and once NCCL
 * may be gone (after the last communicator's finalize, and at process exit).
 *
 * Why stderr then: a host may tear its logger down before our exit code runs
 * (a Python process exiting without finalizing its communicators, or after
 * finalizing them while a write of ours fails at exit): calling NCCL's
 * logger there crashed the process with SIGSEGV and lost every record the
 * exit flush was writing. So the logger is dropped (ins_log_detach) when the
 * last tracked context is finalized and when exit begins; a later init hands
 * it back.
 *
 * Messages can carry bytes from the environment or from NCCL (a variable's
 * value, a communicator name): each is made printable first, with bytes that
 * are not UTF-8 and control characters written as \xNN.
 */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/utf8.h"

#ifndef INSPECTOR_LOG_WARN
#define INSPECTOR_LOG_WARN 0
#endif

static _Atomic(prof_logger_t) g_logger;

void ins_log_set_logger(prof_logger_t logger) {
  prof_logger_t none = NULL;
  if (logger) atomic_compare_exchange_strong(&g_logger, &none, logger);
}

void ins_log_detach(void) { atomic_store(&g_logger, (prof_logger_t)NULL); }

/* Control characters, visible: \xNN. */
static const char *control_escape(unsigned char c, char *tmp) {
  static const char hex[] = "0123456789abcdef";
  if (c >= 0x20 && c != 0x7f) return NULL;
  tmp[0] = '\\', tmp[1] = 'x', tmp[2] = hex[c >> 4], tmp[3] = hex[c & 15], tmp[4] = '\0';
  return tmp;
}

size_t ins_log_printable(char *out, size_t cap, const char *msg) {
  return ins_utf8_escape(out, cap, msg, control_escape, 1);
}

static void vlog(int level, const char *fmt, va_list ap) {
  char raw[1024], msg[1024];
  vsnprintf(raw, sizeof raw, fmt, ap);
  ins_log_printable(msg, sizeof msg, raw);
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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c - routes plugin messages to NCCL's logger (subsystem PROFILE), or to
 * stderr when there is none: before NCCL gave one (odd hosts), and once NCCL
 * may be gone (after the last communicator's finalize, and at process exit);
 * and the notices a user must see whatever NCCL_DEBUG says (log.h says which).
 *
 * Why stderr then: a host may tear its logger down before our exit code runs
 * (a Python process exiting without finalizing its communicators, or after
 * finalizing them while a write of ours fails at exit): calling NCCL's
 * logger there crashed the process with SIGSEGV and lost every record the
 * exit flush was writing. So the logger is dropped (ins_log_detach) when the
 * last tracked context is finalized and when exit begins; a later init hands
 * it back. What goes to stderr in its place is what NCCL would have printed
 * (NCCL_DEBUG and NCCL_DEBUG_SUBSYS, read once at the first init, by NCCL's
 * rules: ins_log_shown_level), so that a job without NCCL_DEBUG sees none of
 * it, at exit as while NCCL is there.
 *
 * Messages can carry bytes from the environment or from NCCL (a variable's
 * value, a communicator name): each is made printable first, with bytes that
 * are not UTF-8 and control characters written as \xNN.
 */
#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/utf8.h"

#ifndef INSPECTOR_LOG_WARN
#define INSPECTOR_LOG_WARN 0
#endif

static _Atomic(prof_logger_t) g_logger;

/* The most verbose level NCCL prints of ours (ins_log_shown_level), once read; before the
 * first init (a unit test driving a module, no init yet) LOG_UNREAD, and the stderr
 * fallback prints every message, as it always did. */
#define LOG_UNREAD (-1)
static atomic_int g_shown = LOG_UNREAD;
static pthread_once_t g_shown_once = PTHREAD_ONCE_INIT;
static atomic_int g_notices; /* "Inspector: " lines written, and those left out */

int ins_log_shown_level(const char *debug, const char *subsys) {
  /* NCCL_DEBUG: one of these names, any case; anything else (or unset) prints nothing */
  static const struct { const char *name; int level; } levels[] = {
      {"VERSION", PROF_LOG_VERSION}, {"WARN", PROF_LOG_WARN}, {"INFO", PROF_LOG_INFO},
      {"ABORT", PROF_LOG_ABORT},     {"TRACE", PROF_LOG_TRACE},
  };
  int level = PROF_LOG_NONE;
  for (size_t i = 0; debug && i < sizeof levels / sizeof *levels; i++)
    if (!strcasecmp(debug, levels[i].name)) level = levels[i].level;
  /* NCCL_DEBUG_SUBSYS: unset, NCCL's default (INIT, BOOTSTRAP, ENV: not PROFILE); else a
   * comma-separated list of names, any case, all but them after a leading '^'. NCCL
   * drops any message whose subsystem is not in it, WARNs included (debug.cc:
   * "(flags & ncclDebugMask) == 0"). */
  bool profile = false;
  if (subsys) {
    bool invert = subsys[0] == '^';
    profile = invert;
    for (const char *p = subsys + invert; *p;) {
      size_t n = strcspn(p, ",");
      if ((n == 7 && !strncasecmp(p, "PROFILE", 7)) || (n == 3 && !strncasecmp(p, "ALL", 3)))
        profile = !invert;
      p += n;
      if (*p == ',') p++;
    }
  }
  return profile ? level : PROF_LOG_NONE;
}

static void read_shown(void) {
  atomic_store(&g_shown, ins_log_shown_level(getenv("NCCL_DEBUG"), getenv("NCCL_DEBUG_SUBSYS")));
}

void ins_log_set_logger(prof_logger_t logger) {
  pthread_once(&g_shown_once, read_shown); /* before the logger is published: see log.h */
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

/* Whether a message of this level reaches the user through NCCL (or our stderr in its
 * place). */
static bool shown(int level) {
  int s = atomic_load(&g_shown);
  return s == LOG_UNREAD || level <= s;
}

/* The message, through NCCL's logger or in its place; its printable text in msg (cap
 * bytes). Returns whether it is shown (above). */
static bool vlog(int level, char *msg, size_t cap, const char *fmt, va_list ap) {
  char raw[1024];
  vsnprintf(raw, sizeof raw, fmt, ap);
  ins_log_printable(msg, cap, raw);
  prof_logger_t logger = atomic_load(&g_logger);
  bool seen = shown(level);
  if (logger)
    logger(level, PROF_SUBSYS_PROFILE, __FILE__, __LINE__, "Inspector: %s", msg);
  else if (seen)
    fprintf(stderr, "NCCL %s Inspector: %s\n", level == PROF_LOG_WARN ? "WARN" : "INFO", msg);
  return seen;
}

static void log_fmt(int level, const char *fmt, va_list ap) {
  char msg[1024];
  vlog(level, msg, sizeof msg, fmt, ap);
}

void ins_info(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_fmt(INSPECTOR_LOG_WARN ? PROF_LOG_WARN : PROF_LOG_INFO, fmt, ap);
  va_end(ap);
}

void ins_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_fmt(PROF_LOG_WARN, fmt, ap);
  va_end(ap);
}

int ins_warn_once(atomic_int *flag, const char *fmt, ...) {
  if (atomic_exchange(flag, 1)) return 0;
  va_list ap;
  va_start(ap, fmt);
  log_fmt(PROF_LOG_WARN, fmt, ap);
  va_end(ap);
  return 1;
}

int ins_notice(atomic_int *once, atomic_int *topic, const char *fmt, ...) {
  if (once && atomic_exchange(once, 1)) return 0;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  bool seen = vlog(PROF_LOG_WARN, msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (seen || (topic && atomic_exchange(topic, 1))) return 1;
  if (atomic_load(&g_notices) > INS_NOTICE_MAX) return 1; /* the count stays bounded too */
  /* one fprintf a line (stderr is unbuffered: one write), so that lines of two threads
   * do not interleave */
  int n = atomic_fetch_add(&g_notices, 1);
  if (n < INS_NOTICE_MAX)
    fprintf(stderr, "Inspector: %s\n", msg);
  else if (n == INS_NOTICE_MAX)
    fprintf(stderr, "Inspector: more warnings than these; NCCL_DEBUG=WARN NCCL_DEBUG_SUBSYS=PROFILE "
            "shows every one\n");
  return 1;
}

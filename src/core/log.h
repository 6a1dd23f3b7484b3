/*
 * log.h - the plugin's messages, through the logger NCCL hands to init.
 *
 * Owns: which logger is used (the first one NCCL gives us), the PROFILE
 * subsystem flag, the INFO-vs-WARN build option, and "warn once" flags.
 * Logging is I/O: call it from init, finalize and the dump thread only,
 * never from an event callback (those set a flag that the dump thread reports).
 */
#ifndef INS_LOG_H
#define INS_LOG_H

#include <stdatomic.h>
#include <stddef.h>

#include "nccl/profiler_abi.h"

/* Remember NCCL's logger (first non-NULL wins; later ones are identical). */
void ins_log_set_logger(prof_logger_t logger);
/* Stop calling NCCL's logger: messages go to stderr until an init gives it again.
 * Called after the last finalize and when process exit begins (NCCL may be gone). */
void ins_log_detach(void);
/* msg made printable into out (cap >= 5): bytes that are not UTF-8 and control
 * characters become \xNN; cut between characters. Returns the length. */
size_t ins_log_printable(char *out, size_t cap, const char *msg);

/* Plugin information (INFO, or WARN when built with NCCL_INSPECTOR_ENABLE_WARN). */
void ins_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Something the user should act on: always WARN. */
void ins_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Warn only the first time this flag is passed; returns 1 if it warned. */
int ins_warn_once(atomic_int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

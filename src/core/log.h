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

#include "abi/profiler_abi.h"

/* Remember NCCL's logger (first non-NULL wins; later ones are identical). */
void ins_log_set_logger(prof_logger_t logger);

/* Plugin information (INFO, or WARN when built with NCCL_INSPECTOR_ENABLE_WARN). */
void ins_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Something the user should act on: always WARN. */
void ins_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Warn only the first time this flag is passed; returns 1 if it warned. */
int ins_warn_once(atomic_int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

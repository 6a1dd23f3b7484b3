/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - the plugin's messages, through the logger NCCL hands to init.
 *
 * Owns: which logger is used (the first one NCCL gives us), the PROFILE
 * subsystem flag, the INFO-vs-WARN build option, "warn once" flags, and what
 * reaches a user who never set NCCL_DEBUG (notices, below).
 * Logging is I/O: call it from init, finalize, the plugin's own threads (dump,
 * writer, exporter) and exit only, never from an event callback (those set a
 * flag that the dump thread reports).
 *
 * Who sees what. NCCL prints a message of ours only when NCCL_DEBUG is WARN or
 * more verbose (INFO, ABORT, TRACE) AND NCCL_DEBUG_SUBSYS names PROFILE (or
 * ALL): NCCL filters even WARNs by subsystem, and its default subsystems (INIT,
 * BOOTSTRAP, ENV) leave PROFILE out, so a plain NCCL_DEBUG=WARN shows none of
 * ours. Every message goes through NCCL's logger as before, and NCCL decides.
 * When there is no logger (none given, or dropped: ins_log_detach) a message goes
 * to stderr only where NCCL would have shown it, so a run prints the same whether
 * NCCL is still there or not; a clean run without NCCL_DEBUG prints nothing.
 *
 * A notice (ins_notice) is a warning a user must see whatever NCCL_DEBUG says:
 * a configuration that is not used as given, an output asked for that will not
 * be written, a plugin loaded but inactive, a collector that took nothing,
 * records lost. It is a WARN like any other, and where NCCL would not show it,
 * it is also written on stderr as one line "Inspector: <message>" (never twice:
 * where NCCL shows it, that is the one copy). At most INS_NOTICE_MAX such lines a
 * process, then one that says how to see the rest. Everything else stays behind
 * NCCL_DEBUG. NCCL_DEBUG and NCCL_DEBUG_SUBSYS are read once, at the first init
 * (ins_log_set_logger), after NCCL has read its configuration files into the
 * environment; never later (a getenv on the dump thread would race the job's
 * setenv).
 */
#ifndef INS_LOG_H
#define INS_LOG_H

#include <stdatomic.h>
#include <stddef.h>

#include "nccl/profiler_abi.h"

/* Remember NCCL's logger (first non-NULL wins; later ones are identical). The first
 * call (an init's, NULL or not) also reads NCCL_DEBUG and NCCL_DEBUG_SUBSYS. */
void ins_log_set_logger(prof_logger_t logger);
/* Stop calling NCCL's logger: messages go to stderr (as NCCL_DEBUG says) until an init
 * gives it again. Called after the last finalize and when process exit begins (NCCL
 * may be gone). */
void ins_log_detach(void);
/* msg made printable into out (cap >= 5): bytes that are not UTF-8 and control
 * characters become \xNN; cut between characters. Returns the length. */
size_t ins_log_printable(char *out, size_t cap, const char *msg);

/* The most verbose level (PROF_LOG_*) NCCL prints of the PROFILE subsystem, by NCCL's
 * rules, given NCCL_DEBUG and NCCL_DEBUG_SUBSYS (either NULL when unset):
 * PROF_LOG_NONE when it prints none of ours. Exposed for unit tests. */
int ins_log_shown_level(const char *nccl_debug, const char *nccl_debug_subsys);

/* Plugin information (INFO, or WARN when built with NCCL_INSPECTOR_ENABLE_WARN). */
void ins_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Something the user should act on: always WARN. */
void ins_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Warn only the first time this flag is passed; returns 1 if it warned. */
int ins_warn_once(atomic_int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A notice (see the top): a WARN, and its "Inspector: " line on stderr where NCCL shows
 * no WARN of ours.
 *   once   as ins_warn_once's flag: only the first call that passes it says anything;
 *          NULL: every call (a call made once per process by construction, as the
 *          configuration's, read once).
 *   topic  the stderr line only for the first call that passes it, the WARN for every
 *          one: several places that meet one problem (the dump directory cannot be
 *          written: at the start, by the JSON log, by the Prometheus files) put one
 *          line on stderr; NULL: the line goes with the WARN.
 * Returns 1 if it warned.
 */
#define INS_NOTICE_MAX 8
int ins_notice(atomic_int *once, atomic_int *topic, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

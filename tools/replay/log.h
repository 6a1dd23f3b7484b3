/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - the logger the replay hands to the plugin's init, as NCCL's
 * ncclDebugLog would: one line per message on stderr, for the messages that
 * NCCL_DEBUG and NCCL_DEBUG_SUBSYS let through by NCCL's rules (log.c), and
 * none at all without NCCL_DEBUG.
 */
#ifndef RP_LOG_H
#define RP_LOG_H

#include <stdbool.h>

/* Set before any replay starts (read-only afterwards): --quiet drops INFO and TRACE. */
void rp_log_set_quiet(bool quiet);
/* Read NCCL_DEBUG and NCCL_DEBUG_SUBSYS, before any replay starts. */
void rp_log_read_env(void);

/*
 * --logger-dies: the logger behaves as a host's that is torn down when its
 * communicators are (NCCL's after the last finalize; a Python host's at exit,
 * finalized or not). A call with no communicator alive (between init and
 * finalize) or once exit has begun prints what the plugin tried to log and
 * aborts the process, where such a host would crash.
 */
void rp_log_set_logger_dies(bool dies);
void rp_log_comm_opening(void); /* before an init */
void rp_log_comm_closed(void);  /* after its finalize (or a failed init) */

void rp_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

#endif /* RP_LOG_H */

/*
 * log.h - the logger the replay hands to the plugin's init, as NCCL's
 * ncclDebugLog would: one line per message on stderr.
 */
#ifndef RP_LOG_H
#define RP_LOG_H

#include <stdbool.h>

/* Set before any replay starts (read-only afterwards): --quiet drops INFO and TRACE. */
void rp_log_set_quiet(bool quiet);

void rp_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

#endif /* RP_LOG_H */

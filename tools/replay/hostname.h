/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostname.h - the host name the plugin sees: a synthetic node's (--synthetic
 * --procs --nodes N > 1) or the machine's.
 *
 * Why: a multi-node job's logs are told apart by host (file names
 * <host>-pid<pid>.log, metadata.hostname), and the tools that read them
 * (inspector-report: clocks per node, slow links between nodes) need jobs of
 * many nodes made on one machine. Each --procs child is one rank; it runs as
 * the host of its rank's node, "node-NNN" (synth.h).
 *
 * How: as vclock.h does for clock_gettime, the replay defines gethostname
 * itself and exports it (-Wl,--export-dynamic-symbol=gethostname), so that
 * the plugin's call (src/core/config.c), resolved in the global scope where
 * the executable comes first, lands here. It answers the name set with
 * rp_hostname_set, else forwards to the real one (dlsym(RTLD_NEXT)). Not
 * used without --procs: all ranks in one process share one host, the real
 * one.
 */
#ifndef RP_HOSTNAME_H
#define RP_HOSTNAME_H

#include <stddef.h>

/* From now on this process's gethostname answers `name` (NULL or "": the real one again).
   Call it before the plugin is loaded, in the child, before any thread starts: it is read
   without a lock. Names longer than 255 bytes are cut. */
void rp_hostname_set(const char *name);

/* The machine's host name, as the plugin would report it when none is set: gethostname's
   answer (or "unknown-host"), '/' and control characters made '_' (src/core/config.c; its
   UTF-8 cleaning is not repeated: host names are ASCII). */
void rp_real_hostname(char *buf, size_t cap);

#endif /* RP_HOSTNAME_H */

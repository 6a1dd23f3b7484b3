/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intern.h - the replay driver's string pool.
 *
 * Owns: every string a descriptor or init call hands to the plugin (func,
 * datatype, algo, proto, sync strategy, comm name). NCCL passes its own
 * constant strings and a plugin may keep them by pointer for as long as it
 * likes (even in its exit-time handlers), so the replay must do the same: an
 * interned string is never freed, and equal strings share one pointer, as
 * NCCL's constants do.
 *
 * Not thread-safe: strings are interned while a trace is loaded or generated,
 * before any replay thread starts.
 */
#ifndef RP_INTERN_H
#define RP_INTERN_H

/* The pooled copy of s (NULL stays NULL). Exits the process on out of memory. */
const char *rp_intern(const char *s);

#endif /* RP_INTERN_H */

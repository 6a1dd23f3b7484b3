/* SPDX-License-Identifier: Apache-2.0 */
/*
 * idmap.h - a uint64 -> uint32 hash map used while a trace is loaded.
 *
 * Owns: translating the trace's sparse numbers (event ids, ctx numbers,
 * thread ids) into dense indices, so that the replay loop indexes plain
 * arrays and never hashes.
 */
#ifndef RP_IDMAP_H
#define RP_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rp_idmap {
  uint64_t *keys;
  uint32_t *vals;
  unsigned char *used;
  size_t cap; /* power of two, or 0 */
  size_t n;
};

/* Sets key -> val, replacing any earlier value. */
void rp_idmap_put(struct rp_idmap *m, uint64_t key, uint32_t val);
/* True and *val if key is present. */
bool rp_idmap_get(const struct rp_idmap *m, uint64_t key, uint32_t *val);
void rp_idmap_free(struct rp_idmap *m);

#endif /* RP_IDMAP_H */

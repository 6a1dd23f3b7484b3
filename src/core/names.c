/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.c - name tables and the pointer-keyed lookup cache (see names.h).
 */
#include "core/names.h"

#include "core/record.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

struct name_val { const char *name; unsigned val; };

static const struct name_val k_funcs[] = {
  {"AllReduce", INS_FUNC_ALLREDUCE},   {"AllGather", INS_FUNC_ALLGATHER},
  {"ReduceScatter", INS_FUNC_REDUCESCATTER}, {"Broadcast", INS_FUNC_BROADCAST},
  {"Reduce", INS_FUNC_REDUCE},         {"AllToAll", INS_FUNC_ALLTOALL},
  {"All2All", INS_FUNC_ALLTOALL},      {"AlltoAll", INS_FUNC_ALLTOALL},
  {"AllGatherV", INS_FUNC_ALLGATHERV}, {"Send", INS_FUNC_SEND},
  {"Recv", INS_FUNC_RECV},
};

const char *const ins_func_name[INS_FUNC_COUNT] = {
  [INS_FUNC_OTHER] = "other",         [INS_FUNC_ALLREDUCE] = "AllReduce",
  [INS_FUNC_ALLGATHER] = "AllGather", [INS_FUNC_REDUCESCATTER] = "ReduceScatter",
  [INS_FUNC_BROADCAST] = "Broadcast", [INS_FUNC_REDUCE] = "Reduce",
  [INS_FUNC_ALLTOALL] = "AllToAll",   [INS_FUNC_ALLGATHERV] = "AllGatherV",
  [INS_FUNC_SEND] = "Send",           [INS_FUNC_RECV] = "Recv",
};

const char *const ins_untimed_name[INS_UNTIMED_REASONS] = {
  [INS_UNTIMED_UNVERIFIED] = "unverified", [INS_UNTIMED_HANDED_OVER] = "handed_over",
  [INS_UNTIMED_NO_GPU_TIMER] = "no_gpu_timer", [INS_UNTIMED_LOST_EVENTS] = "lost_events",
  [INS_UNTIMED_INCOMPLETE] = "incomplete",
};

static const struct name_val k_types[] = {
  {"ncclInt8", 1},     {"ncclUint8", 1},     {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
  {"ncclChar", 1},     {"ncclFloat16", 2},   {"ncclHalf", 2},       {"ncclBfloat16", 2},
  {"ncclInt32", 4},    {"ncclInt", 4},       {"ncclUint32", 4},     {"ncclFloat32", 4},
  {"ncclFloat", 4},    {"ncclInt64", 8},     {"ncclUint64", 8},     {"ncclFloat64", 8},
  {"ncclDouble", 8},
};

static unsigned table_lookup(const struct name_val *t, size_t n, const char *s, unsigned def) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(t[i].name, s)) return t[i].val;
  return def;
}

/*
 * A direct-mapped cache: each slot is one atomic word holding the pointer
 * (low 48 bits of a user-space address) and the value (high 16 bits), so a
 * reader can never see a pointer paired with another pointer's value.
 */
#define CACHE_SLOTS 64
struct name_cache { _Atomic uint64_t slot[CACHE_SLOTS]; };

static unsigned cached_lookup(struct name_cache *c, const char *s, const struct name_val *t,
                              size_t n, unsigned def) {
  if (!s) return def;
  uint64_t p = (uint64_t)(uintptr_t)s;
  if (p >> 48) return table_lookup(t, n, s, def); /* not cacheable; never on Linux x86/arm */
  unsigned idx = (unsigned)((p >> 3) ^ (p >> 9)) & (CACHE_SLOTS - 1);
  uint64_t w = atomic_load_explicit(&c->slot[idx], memory_order_relaxed);
  if ((w & 0xffffffffffffull) == p && w) return (unsigned)(w >> 48);
  unsigned v = table_lookup(t, n, s, def);
  atomic_store_explicit(&c->slot[idx], p | ((uint64_t)v << 48), memory_order_relaxed);
  return v;
}

static struct name_cache g_func_cache, g_type_cache;

enum ins_func ins_func_id(const char *name) {
  return (enum ins_func)cached_lookup(&g_func_cache, name, k_funcs,
                                      sizeof k_funcs / sizeof *k_funcs, INS_FUNC_OTHER);
}

unsigned ins_datatype_size(const char *name) {
  return cached_lookup(&g_type_cache, name, k_types, sizeof k_types / sizeof *k_types, 0);
}

uint64_t ins_bw_bytes(enum ins_func f, uint64_t msg_bytes, int nranks) {
  if ((f == INS_FUNC_ALLGATHER || f == INS_FUNC_REDUCESCATTER) && nranks > 0)
    return msg_bytes * (uint64_t)nranks;
  return msg_bytes;
}

double ins_busbw_factor(enum ins_func f, int nranks) {
  if (nranks <= 0) return 1.0;
  double n = nranks;
  switch (f) {
    case INS_FUNC_ALLREDUCE: return 2.0 * (n - 1) / n;
    case INS_FUNC_ALLGATHER:
    case INS_FUNC_REDUCESCATTER:
    case INS_FUNC_ALLTOALL: return (n - 1) / n;
    default: return 1.0;
  }
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_env.c - libFuzzer target for the plugin's environment parser.
 *
 * Owns: driving src/core/config.c (ins_config_load, ins_parse_bool,
 * ins_parse_ll) on arbitrary values. The input is lines NAME=VALUE; NAME is
 * one of the variables the plugin reads, with or without its NCCL_INSPECTOR_
 * prefix (so that seeds stay short). Only those names are ever set, so the
 * fuzzer cannot change its own process (LD_*, PATH, ASAN_OPTIONS); every one
 * is unset again after the input. Each value also goes straight to
 * ins_parse_bool and ins_parse_ll. The resolved configuration is checked
 * against what the rest of the plugin assumes (ring sizes powers of two,
 * intervals and sampling within their ranges, file names without '/').
 *
 * The config warns about bad values through src/core/log.c on stderr: run.sh
 * passes -close_fd_mask=2 so that this does not slow the fuzzer down
 * (libFuzzer keeps its own and the sanitizers' reports).
 *
 * Build and run: `make fuzz` (tests/fuzz/run.sh); seeds: corpus/env/.
 */
#include <assert.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/sampler.h"

static const char *const k_vars[] = {
  "NCCL_INSPECTOR_ENABLE", "NCCL_INSPECTOR_ENABLE_P2P", "NCCL_INSPECTOR_DUMP_THREAD_ENABLE",
  "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "NCCL_INSPECTOR_DUMP_VERBOSE",
  "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING",
  "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE", "NCCL_INSPECTOR_DUMP_P2P_RING_SIZE",
  "NCCL_INSPECTOR_PROM_DUMP", "NCCL_INSPECTOR_PROM_DUMP_STATS",
  "NCCL_INSPECTOR_SAMPLE_WINDOW_MS", "NCCL_INSPECTOR_SAMPLE_PERIOD_MS",
  "NCCL_INSPECTOR_SAMPLE_GROUPS", "NCCL_INSPECTOR_SAMPLE_GROUPS_BURST",
  "NCCL_INSPECTOR_DUMP_DIR", "NCCL_INSPECTOR_TRACE_DIR", "NCCL_INSPECTOR_HANG_SECONDS",
  "SLURM_JOB_ID", "SLURM_JOBID", "PBS_JOBID", "LSB_JOBID",
};
#define NVARS (sizeof k_vars / sizeof *k_vars)
#define PREFIX "NCCL_INSPECTOR_"

/* The variable a NAME stands for, or NULL. */
static const char *var_of(const char *name, size_t n) {
  for (size_t i = 0; i < NVARS; i++) {
    const char *v = k_vars[i];
    if (strlen(v) == n && !memcmp(v, name, n)) return v;
    if (!strncmp(v, PREFIX, strlen(PREFIX)) && strlen(v) - strlen(PREFIX) == n &&
        !memcmp(v + strlen(PREFIX), name, n))
      return v;
  }
  return NULL;
}

static void parse_value(const char *v) {
  bool b;
  if (ins_parse_bool(v, &b) == 0) assert(b == true || b == false);
  long long x;
  static const long long bounds[][2] = {{0, 1}, {-1, 86400000000LL}, {0, LLONG_MAX},
                                        {LLONG_MIN, LLONG_MAX}, {1, 1}, {5, -5}};
  for (size_t i = 0; i < sizeof bounds / sizeof *bounds; i++)
    if (ins_parse_ll(v, bounds[i][0], bounds[i][1], &x) == 0)
      assert(x >= bounds[i][0] && x <= bounds[i][1]);
}

static bool pow2(uint32_t v) { return v && !(v & (v - 1)); }

static void check(const struct ins_config *c) {
  assert(pow2(c->coll_ring_size) && c->coll_ring_size >= 2 && c->coll_ring_size <= (1u << 24));
  assert(pow2(c->p2p_ring_size) && c->p2p_ring_size >= 2 && c->p2p_ring_size <= (1u << 24));
  assert(c->interval_us >= -1);
  if (c->prom_dump) assert(c->interval_us == -1 || c->interval_us >= INS_PROM_MIN_INTERVAL_US);
  if (c->sample_mode == INS_SAMPLE_TIME)
    assert(c->sample_window_ms >= 1 && c->sample_window_ms < c->sample_period_ms);
  else if (c->sample_mode == INS_SAMPLE_GROUPS)
    assert(c->sample_every > 1 && c->sample_burst >= 1);
  else
    assert(c->sample_mode == INS_SAMPLE_ALL);
  assert(c->dump_dir[0] && memchr(c->dump_dir, 0, sizeof c->dump_dir));
  assert(memchr(c->trace_dir, 0, sizeof c->trace_dir));
  assert(c->hostname[0] && memchr(c->hostname, 0, sizeof c->hostname));
  for (const char *p = c->hostname; *p; p++) assert(*p != '/' && (unsigned char)*p >= 0x20);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (size_t i = 0; i < NVARS; i++) unsetenv(k_vars[i]); /* none from the caller's shell */
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0'; /* a NUL inside ends that value early, as it would in environ */
  for (char *line = buf, *next; line && line < buf + size; line = next) {
    char *nl = memchr(line, '\n', (size_t)(buf + size - line));
    next = nl ? nl + 1 : NULL;
    if (nl) *nl = '\0';
    char *eq = strchr(line, '=');
    if (!eq) continue;
    const char *var = var_of(line, (size_t)(eq - line));
    parse_value(eq + 1);
    if (var) setenv(var, eq + 1, 1);
  }
  struct ins_config cfg;
  ins_config_load(&cfg);
  check(&cfg);
  for (size_t i = 0; i < NVARS; i++) unsetenv(k_vars[i]);
  free(buf);
  return 0;
}

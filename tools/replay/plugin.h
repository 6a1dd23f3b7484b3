/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin.h - loading a profiler plugin as NCCL does.
 *
 * Owns: dlopen of the plugin, lookup of its exported tables
 * (ncclProfiler_v6, _v5, _v4) and the choice of which one to drive; and
 * --preload, the libraries put in the process before it (what NCCL's or
 * RCCL's host process would already hold, e.g. a stand-in HIP runtime).
 */
#ifndef RP_PLUGIN_H
#define RP_PLUGIN_H

#include "abi.h"

struct rp_plugin {
  void *dl;
  const struct prof_table_v4 *v4;
  const struct prof_table_v5 *v5;
  const struct prof_table_v6 *v6;
  const char *path;
};

/* The path used when --plugin is not given: $INSPECTOR_PLUGIN, else
   <dir of this binary>/../lib/libnccl-profiler-inspector.so. Caller frees. */
char *rp_plugin_default_path(void);

/* --preload: dlopen(path, RTLD_NOW | RTLD_GLOBAL), kept open for the whole
   process (a plugin finds it with RTLD_NOLOAD and keeps its functions).
   0, or -1 after printing why. */
int rp_preload(const char *path);

/* 0, or -1 after printing why (not loadable, or exports no known table). */
int rp_plugin_open(const char *path, struct rp_plugin *p);

/* The newest version exported (6, 5 or 4), looked up in NCCL's order. */
int rp_plugin_newest(const struct rp_plugin *p);

/* Binds the table of version ver; -1 after printing why if it is not exported. */
int rp_plugin_bind(const struct rp_plugin *p, int ver, struct rp_abi *a);

#endif /* RP_PLUGIN_H */

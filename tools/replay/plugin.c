/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin.c - the plugin loader (see plugin.h).
 *
 * The library stays loaded until the process exits: a plugin may keep
 * threads or atexit work that outlive its last finalize, and NCCL itself
 * only unloads when the last communicator is gone.
 */
#include "plugin.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* NCCL_PROFILER_PLUGIN as NCCL reads it: a path (with a '/'), a file name (.so), or a name
 * that NCCL makes into libnccl-profiler-NAME.so, looked up on the library path (dlopen's
 * search). "none" and empty: not set. The variable a user just set for a real job then
 * drives the rehearsal too. */
static char *nccl_profiler_plugin(void) {
  const char *v = getenv("NCCL_PROFILER_PLUGIN");
  if (!v || !*v || !strcasecmp(v, "none")) return NULL;
  size_t n = strlen(v);
  if (strchr(v, '/') || (n > 3 && !strcmp(v + n - 3, ".so"))) return strdup(v);
  size_t len = n + sizeof "libnccl-profiler-.so";
  char *out = malloc(len);
  if (out) snprintf(out, len, "libnccl-profiler-%s.so", v);
  return out;
}

char *rp_plugin_default_path(void) {
  const char *env = getenv("INSPECTOR_PLUGIN");
  if (env && *env) return strdup(env);
  char *nccl = nccl_profiler_plugin();
  if (nccl) return nccl;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return strdup("libnccl-profiler-inspector.so");
  exe[n] = 0;
  const char *dir = dirname(exe);
  size_t len = strlen(dir) + sizeof "/../lib/libnccl-profiler-inspector.so";
  char *out = malloc(len);
  if (out) snprintf(out, len, "%s/../lib/libnccl-profiler-inspector.so", dir);
  return out;
}

/* Why not LD_PRELOAD: gcc's ASan must come first in the process, so an
 * ASan-built replay aborts when another library is preloaded ahead of it. A
 * dlopen from main() puts the library in the same place for the plugin: loaded,
 * global, before the plugin's first call. */
int rp_preload(const char *path) {
  if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "inspector-replay: cannot preload %s: %s\n", path, dlerror());
    return -1;
  }
  return 0;
}

int rp_plugin_open(const char *path, struct rp_plugin *p) {
  memset(p, 0, sizeof *p);
  p->path = path;
  p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!p->dl) {
    fprintf(stderr, "inspector-replay: cannot load plugin %s: %s\n", path, dlerror());
    return -1;
  }
  p->v6 = dlsym(p->dl, "ncclProfiler_v6");
  p->v5 = dlsym(p->dl, "ncclProfiler_v5");
  p->v4 = dlsym(p->dl, "ncclProfiler_v4");
  if (!p->v6 && !p->v5 && !p->v4) {
    fprintf(stderr, "inspector-replay: plugin %s exports none of ncclProfiler_v6, _v5, _v4\n", path);
    return -1;
  }
  return 0;
}

int rp_plugin_newest(const struct rp_plugin *p) { return p->v6 ? 6 : p->v5 ? 5 : 4; }

int rp_plugin_bind(const struct rp_plugin *p, int ver, struct rp_abi *a) {
  const void *t = ver == 6 ? (const void *)p->v6 : ver == 5 ? (const void *)p->v5 : ver == 4 ? (const void *)p->v4 : NULL;
  if (!t) {
    fprintf(stderr, "inspector-replay: plugin %s does not export ncclProfiler_v%d\n", p->path, ver);
    return -1;
  }
  if (ver == 6) rp_abi_bind_v6(a, p->v6);
  else if (ver == 5) rp_abi_bind_v5(a, p->v5);
  else rp_abi_bind_v4(a, p->v4);
  bool complete = ver == 6   ? p->v6->init && p->v6->startEvent
                  : ver == 5 ? p->v5->init && p->v5->startEvent
                             : p->v4->init && p->v4->startEvent;
  if (!complete || !a->stop || !a->record || !a->finalize) {
    fprintf(stderr, "inspector-replay: plugin %s: ncclProfiler_v%d has a NULL callback\n", p->path, ver);
    return -1;
  }
  return 0;
}

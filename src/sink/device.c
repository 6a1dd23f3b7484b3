/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.c - which GPU a context runs on (see device.h): the GPU runtime's
 * answer when the process has one loaded, else the fallback identity.
 *
 * The runtime is looked up with dlopen(RTLD_NOLOAD): NCCL has loaded the
 * CUDA driver (RCCL the HIP runtime) long before it calls the profiler's
 * init, so we only borrow it; a process without one (replay, tests) is not
 * made to load a GPU runtime by us, and gets the fallback. No CUDA or HIP
 * header is used: the few prototypes are declared here. The handles are kept
 * until the library is unloaded (ins_device_release).
 */
#include "sink/device.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct { unsigned char bytes[16]; } ins_uuid16; /* CUuuid / hipUUID */
typedef int (*get_device_fn)(int *dev);                /* cuCtxGetDevice / hipGetDevice */
typedef int (*get_uuid_fn)(ins_uuid16 *uuid, int dev); /* cuDeviceGetUuid(_v2) / hipDeviceGetUuid */

/* Whether a loaded object's path names `stem` (libcuda.so, libamdhip64): dlopen with
 * RTLD_NOLOAD of a name that is not loaded still searches the library path, which cost
 * each communicator's init about 150 us in a CUDA process (HIP's two names), more than
 * the rest of an init (docs/BENCHMARKS.md). */
static int names(struct dl_phdr_info *info, size_t size, void *stem) {
  (void)size;
  return info->dlpi_name && strstr(info->dlpi_name, stem) != NULL;
}
static int loaded(const char *stem) { return dl_iterate_phdr(names, (void *)stem); }

/* Looked up again at each init until found: a runtime loaded after an earlier init counts. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static get_device_fn g_get_device;
static get_uuid_fn g_get_uuid;
static void *g_rt_handle, *g_hip_handle; /* what the functions above come from */

static void load_runtime(void) {
  static const struct { const char *lib, *dev, *uuid, *uuid_old; } rt[] = {
      {"libcuda.so.1", "cuCtxGetDevice", "cuDeviceGetUuid_v2", "cuDeviceGetUuid"},
      {"libamdhip64.so.6", "hipGetDevice", "hipDeviceGetUuid", NULL},
      {"libamdhip64.so", "hipGetDevice", "hipDeviceGetUuid", NULL},
  };
  for (size_t i = 0; i < sizeof rt / sizeof *rt; i++) {
    if (!loaded(i ? "libamdhip64" : "libcuda.so")) continue;
    void *h = dlopen(rt[i].lib, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) continue;
    get_device_fn dev = (get_device_fn)(void (*)(void))dlsym(h, rt[i].dev);
    get_uuid_fn uuid = (get_uuid_fn)(void (*)(void))dlsym(h, rt[i].uuid);
    if (!uuid && rt[i].uuid_old) uuid = (get_uuid_fn)(void (*)(void))dlsym(h, rt[i].uuid_old);
    if (dev && uuid) {
      g_get_device = dev, g_get_uuid = uuid; /* the handle stays open: we keep its functions */
      g_rt_handle = h;
      return;
    }
    dlclose(h);
  }
}

/* HIP's wall-clock rate (core/timer.h): looked up on its own, since the identity above
 * takes the first runtime found and a process could hold both. */
typedef int (*get_attr_fn)(int *value, int attr, int dev); /* hipDeviceGetAttribute */
#define HIP_ATTR_WALL_CLOCK_RATE 10017 /* hipDeviceAttributeWallClockRate, kHz */
static get_device_fn g_hip_get_device;
static get_attr_fn g_hip_get_attr;

static void load_hip(void) {
  static const char *const libs[] = {"libamdhip64.so.6", "libamdhip64.so"};
  if (!loaded("libamdhip64")) return;
  for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) {
    void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) continue;
    get_device_fn dev = (get_device_fn)(void (*)(void))dlsym(h, "hipGetDevice");
    get_attr_fn attr = (get_attr_fn)(void (*)(void))dlsym(h, "hipDeviceGetAttribute");
    if (dev && attr) {
      g_hip_get_device = dev, g_hip_get_attr = attr; /* kept open, as above */
      g_hip_handle = h;
      return;
    }
    dlclose(h);
  }
}

uint32_t ins_device_timer_rate_khz(void) {
  pthread_mutex_lock(&g_lock);
  if (!g_hip_get_attr) load_hip();
  pthread_mutex_unlock(&g_lock);
  int dev = -1, khz = 0;
  if (!g_hip_get_attr || g_hip_get_device(&dev) != 0 || dev < 0 ||
      g_hip_get_attr(&khz, HIP_ATTR_WALL_CLOCK_RATE, dev) != 0 || khz <= 0)
    return 0;
  return (uint32_t)khz;
}

void ins_device_release(void) {
  pthread_mutex_lock(&g_lock);
  if (g_rt_handle) dlclose(g_rt_handle);
  if (g_hip_handle) dlclose(g_hip_handle);
  g_rt_handle = g_hip_handle = NULL;
  g_get_device = g_hip_get_device = NULL;
  g_get_uuid = NULL;
  g_hip_get_attr = NULL;
  pthread_mutex_unlock(&g_lock);
}

int ins_device_fallback_ordinal(int rank, int nranks, int nnodes) {
  if (rank < 0) return 0;
  if (nnodes > 0 && nranks > 0 && nranks % nnodes == 0) return rank % (nranks / nnodes);
  return rank;
}

static int from_runtime(struct ins_device_id *d) {
  pthread_mutex_lock(&g_lock);
  if (!g_get_device) load_runtime();
  pthread_mutex_unlock(&g_lock);
  int dev = -1;
  ins_uuid16 u;
  if (!g_get_device || g_get_device(&dev) != 0 || dev < 0 || g_get_uuid(&u, dev) != 0) return -1;
  const unsigned char *b = u.bytes;
  snprintf(d->uuid, sizeof d->uuid,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  d->ordinal = dev;
  return 0;
}

void ins_device_identify(struct ins_device_id *d, const char *hostname, int rank, int nranks,
                         int nnodes) {
  if (from_runtime(d) == 0) return;
  d->ordinal = ins_device_fallback_ordinal(rank, nranks, nnodes);
  /* The host name goes into a file name: keep only portable characters. */
  char host[64];
  size_t n = 0;
  for (const char *p = hostname ? hostname : ""; *p && n < sizeof host - 1; p++) {
    char ch = *p;
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '-' || ch == '_';
    host[n++] = ok ? ch : '_';
  }
  host[n] = '\0';
  snprintf(d->uuid, sizeof d->uuid, "nodev-%s-pid%ld-gpu%d", n ? host : "unknown", (long)getpid(),
           d->ordinal);
}

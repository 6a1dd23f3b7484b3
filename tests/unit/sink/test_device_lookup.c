/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_device_lookup.c - in a process without a GPU runtime loaded (a CUDA job has
 * no HIP; replay and tests have neither), looking one up at a communicator's init
 * (src/sink/device.c: HIP's timer rate, the device identity) makes no dlopen call:
 * dlopen(RTLD_NOLOAD) of a library that is not loaded still searches the library
 * path, which made every init of a CUDA job pay about 150 us for HIP's two names.
 * The dlopen defined here stands in for libc's (the plugin's objects are linked
 * into this program) and counts the runtime names asked for. (With HIP loaded, the
 * lookup still finds it: tests/test_rccl_timer.py, with a fake libamdhip64.so.)
 */
#include <dlfcn.h>
#include <string.h>

#include "check.h"
#include "sink/device.h"

static int g_runtime_dlopens;

void *dlopen(const char *name, int flags) {
  static void *(*real)(const char *, int);
  if (!real) real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
  if (name && (strstr(name, "amdhip") || strstr(name, "libcuda"))) g_runtime_dlopens++;
  return real(name, flags);
}

int main(void) {
  for (int init = 0; init < 3; init++) CHECK_EQ_U(ins_device_timer_rate_khz(), 0);
  struct ins_device_id d;
  ins_device_identify(&d, "host", 1, 4, 1);
  CHECK_EQ_U(d.ordinal, 1); /* the fallback: rank 1 of 4 on one node */
  CHECK(strncmp(d.uuid, "nodev-", 6) == 0);
  CHECK_EQ_U(g_runtime_dlopens, 0);
  ins_device_release();
  return check_report("test_device_lookup");
}

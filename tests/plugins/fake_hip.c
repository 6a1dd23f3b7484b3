/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_hip.c - a stand-in for the HIP runtime (libamdhip64.so), for the tests.
 *
 * Owns: the three HIP entry points the plugin asks an already loaded HIP
 * runtime about, so that the RCCL-only paths (device UUID, the kernel timer's
 * wall-clock rate) run on a machine with no GPU and no ROCm. Built as
 * build/lib/fakehip/libamdhip64.so (SONAME libamdhip64.so), apart from the
 * plugin, and put into a replay's process with `inspector-replay --preload`
 * (the plugin finds it with dlopen(..., RTLD_NOLOAD), as it finds the real
 * one under RCCL). Never installed.
 *
 * It is not HIP: no header of it is used, and the signatures below are only
 * those of the real functions as far as the plugin calls them (hipError_t is
 * an int enum, hipSuccess 0; hipDeviceAttributeWallClockRate is 10017, the
 * rate in kHz). Behaviour, from the environment read at each call:
 *   hipGetDevice          *dev = FAKE_HIP_DEVICE (default 0)
 *   hipDeviceGetUuid      16 bytes derived from dev (fixed: "fakehip" + dev)
 *   hipDeviceGetAttribute attr 10017: FAKE_HIP_WALL_CLOCK_KHZ (default 100000,
 *                         a 100 MHz clock as on MI300X); any other attr:
 *                         hipErrorInvalidValue (1), *value untouched
 * A malformed variable reads as its default: the tests set good values.
 */
#include <stdlib.h>
#include <string.h>

#define FAKE_HIP_SUCCESS 0
#define FAKE_HIP_ERROR_INVALID_VALUE 1
#define FAKE_HIP_ATTR_WALL_CLOCK_RATE 10017

#define FAKE_HIP_API __attribute__((visibility("default")))

int hipGetDevice(int *dev);
int hipDeviceGetUuid(unsigned char uuid[16], int dev);
int hipDeviceGetAttribute(int *value, int attr, int dev);

/* A non-negative int from the environment, or dflt. */
static int env_int(const char *name, int dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end;
  long v = strtol(s, &end, 10);
  if (*end || v < 0 || v > 0x7fffffffL) return dflt;
  return (int)v;
}

FAKE_HIP_API int hipGetDevice(int *dev) {
  if (!dev) return FAKE_HIP_ERROR_INVALID_VALUE;
  *dev = env_int("FAKE_HIP_DEVICE", 0);
  return FAKE_HIP_SUCCESS;
}

FAKE_HIP_API int hipDeviceGetUuid(unsigned char uuid[16], int dev) {
  if (!uuid || dev < 0) return FAKE_HIP_ERROR_INVALID_VALUE;
  static const char k_prefix[8] = "fakehip"; /* 7 letters and a NUL */
  memcpy(uuid, k_prefix, sizeof k_prefix);
  for (int i = 0; i < 8; i++) uuid[8 + i] = (unsigned char)((unsigned)dev >> (8 * (i & 3)));
  return FAKE_HIP_SUCCESS;
}

FAKE_HIP_API int hipDeviceGetAttribute(int *value, int attr, int dev) {
  if (!value || dev < 0) return FAKE_HIP_ERROR_INVALID_VALUE;
  if (attr != FAKE_HIP_ATTR_WALL_CLOCK_RATE) return FAKE_HIP_ERROR_INVALID_VALUE;
  *value = env_int("FAKE_HIP_WALL_CLOCK_KHZ", 100000);
  return FAKE_HIP_SUCCESS;
}

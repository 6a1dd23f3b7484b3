/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostname.c - the synthetic node's host name (see hostname.h).
 */
#include "hostname.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef int (*gethostname_fn)(char *, size_t);

static char g_name[256]; /* "": forward to the real one */
static _Atomic(gethostname_fn) g_real;

static int real_gethostname(char *name, size_t len) {
  gethostname_fn f = atomic_load_explicit(&g_real, memory_order_acquire);
  if (!f) {
    f = (gethostname_fn)(void (*)(void))dlsym(RTLD_NEXT, "gethostname");
    if (!f) {
      errno = ENOSYS;
      return -1;
    }
    atomic_store_explicit(&g_real, f, memory_order_release);
  }
  return f(name, len);
}

/* As glibc's: a name that does not fit (with its NUL) is cut to len bytes, and ENAMETOOLONG. */
int gethostname(char *name, size_t len) {
  if (!g_name[0]) return real_gethostname(name, len);
  size_t n = strlen(g_name) + 1;
  if (n > len) {
    memcpy(name, g_name, len);
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(name, g_name, n);
  return 0;
}

void rp_hostname_set(const char *name) { snprintf(g_name, sizeof g_name, "%s", name ? name : ""); }

void rp_real_hostname(char *buf, size_t cap) {
  char host[256] = "";
  if (real_gethostname(host, sizeof host - 1) != 0 || !host[0]) snprintf(host, sizeof host, "unknown-host");
  for (char *p = host; *p; p++)
    if (*p == '/' || (unsigned char)*p < 0x20 || *p == 0x7f) *p = '_';
  snprintf(buf, cap, "%s", host);
}

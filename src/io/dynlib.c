/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dynlib.c - an optional library loaded once, its functions resolved by name
 * (see dynlib.h).
 */
#include "io/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* dlsym gives an object pointer, stored into function pointers: POSIX requires the two
 * to have one representation (dlsym could not work otherwise); memcpy, because C itself
 * has no conversion between them. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers as wide as dlsym's");

enum ins_dynlib_status ins_dynlib_load(struct ins_dynlib *d, const char *lib, const struct ins_dynlib_sym *syms,
                                       size_t n, char *why, size_t whylen) {
  enum ins_dynlib_status st = INS_DYNLIB_LOADED;
  pthread_mutex_lock(&d->lock);
  if (d->ok) goto out;
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    st = INS_DYNLIB_NO_LIBRARY;
    snprintf(why, whylen, "%s cannot be loaded", lib);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    void *s = dlsym(h, syms[i].name);
    if (!s) {
      st = INS_DYNLIB_NO_SYMBOL;
      snprintf(why, whylen, "%s has no %s", lib, syms[i].name);
      break;
    }
    memcpy(syms[i].slot, &s, sizeof s);
  }
  /* RTLD_NODELETE: this drops only our reference, the library stays mapped (the slots
   * filled so far stay valid); on success the handle is not needed either. */
  dlclose(h);
  d->ok = st == INS_DYNLIB_LOADED;
out:
  pthread_mutex_unlock(&d->lock);
  return st;
}

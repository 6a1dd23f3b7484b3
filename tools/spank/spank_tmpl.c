/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spank_tmpl.c - a step's directory from the site's template (see spank_tmpl.h).
 */
#include "spank_tmpl.h"

#include <stdbool.h>
#include <string.h>

/* A value fit for one path component: not empty, no '/', not "." or "..". The ids come from
 * Slurm and the password database, but a name is the site's text and this is the guard. */
static bool component_ok(const char *v) {
  return v && *v && !strchr(v, '/') && strcmp(v, ".") && strcmp(v, "..");
}

int ins_spank_tmpl_expand(const char *tmpl, const struct ins_spank_ids *ids, char *out, size_t cap,
                          int *fixed) {
  if (!tmpl || tmpl[0] != '/' || cap == 0) return -1;
  size_t n = 0;
  int comps = 0, first_var = -1;
  for (const char *p = tmpl; *p; p++) {
    const char *v = NULL;
    char one[2] = {*p, 0};
    if (*p == '/') {
      if (n == 0 || out[n - 1] != '/') comps++; /* the component that starts here */
      v = one;
    } else if (*p != '%') {
      v = one;
    } else {
      switch (*++p) {
      case 'j': v = ids->job; break;
      case 's': v = ids->step; break;
      case 'u': v = ids->user; break;
      case 'n': v = ids->node; break;
      case '%': v = "%"; break;
      default: return -1; /* an unknown one, or a '%' at the end */
      }
      if (*p != '%') {
        if (!component_ok(v)) return -1;
        if (first_var < 0) first_var = comps;
      }
    }
    size_t l = strlen(v);
    if (n + l >= cap) return -1;
    memcpy(out + n, v, l);
    n += l;
  }
  while (n > 1 && out[n - 1] == '/') n--; /* a trailing '/' names no component */
  out[n] = '\0';
  /* a component made of "." or ".." by the fixed text is the site's business, but one that
   * an expansion touched was checked above; the fixed part's count: */
  *fixed = first_var < 0 ? comps : first_var - 1;
  if (strstr(out, "/../") || (n >= 3 && !strcmp(out + n - 3, "/.."))) return -1;
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spank_conf.c - the SPANK plugin's settings (see spank_conf.h).
 */
#include "spank_conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ins_spank_conf_defaults(struct ins_spank_conf *c, const char *plugin, const char *report_cmd) {
  memset(c, 0, sizeof *c);
  snprintf(c->plugin, sizeof c->plugin, "%s", plugin);
  /* per user first: a shared /tmp/inspector made by the first user would be closed to the
   * next (its directories are 0755, the user's own) */
  snprintf(c->dir, sizeof c->dir, "/tmp/inspector-%%u/%%j.%%s");
  snprintf(c->report_cmd, sizeof c->report_cmd, "%s", report_cmd);
  c->mode = INS_MODE_JSON;
  c->report_timeout = 60;
}

enum ins_spank_mode ins_spank_mode_parse(const char *s) {
  if (!s) return INS_MODE_UNSET;
  if (!strcmp(s, "json")) return INS_MODE_JSON;
  if (!strcmp(s, "prom")) return INS_MODE_PROM;
  if (!strcmp(s, "otlp")) return INS_MODE_OTLP;
  if (!strcmp(s, "off")) return INS_MODE_OFF;
  return INS_MODE_UNSET;
}

const char *ins_spank_mode_name(enum ins_spank_mode m) {
  switch (m) {
  case INS_MODE_OFF: return "off";
  case INS_MODE_JSON: return "json";
  case INS_MODE_PROM: return "prom";
  case INS_MODE_OTLP: return "otlp";
  default: return "unset";
  }
}

static int onoff(const char *v, bool *out) {
  if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "yes")) return *out = true, 0;
  if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no")) return *out = false, 0;
  return -1;
}

/* A variable's name: what a shell exports ([A-Za-z_][A-Za-z0-9_]*). */
static bool env_name_ok(const char *s, size_t n) {
  if (!n || (s[0] >= '0' && s[0] <= '9')) return false;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (!(ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
      return false;
  }
  return true;
}

static int set_str(char *dst, size_t cap, const char *v) {
  if (strlen(v) >= cap) return -1;
  memcpy(dst, v, strlen(v) + 1);
  return 0;
}

static int apply(struct ins_spank_conf *c, const char *arg) {
  const char *eq = strchr(arg, '=');
  if (!eq) return -1;
  size_t k = (size_t)(eq - arg);
  const char *v = eq + 1;
#define KEY(s) (k == sizeof(s) - 1 && !strncmp(arg, s, k))
  if (KEY("plugin")) return *v == '/' ? set_str(c->plugin, sizeof c->plugin, v) : -1;
  if (KEY("dir")) return *v == '/' ? set_str(c->dir, sizeof c->dir, v) : -1;
  if (KEY("report_cmd")) return *v == '/' ? set_str(c->report_cmd, sizeof c->report_cmd, v) : -1;
  if (KEY("default")) return onoff(v, &c->on_by_default);
  if (KEY("report")) return onoff(v, &c->report);
  if (KEY("mode")) {
    enum ins_spank_mode m = ins_spank_mode_parse(v);
    if (m == INS_MODE_UNSET || m == INS_MODE_OFF) return -1;
    c->mode = m;
    return 0;
  }
  if (KEY("report_timeout")) {
    char *end;
    unsigned long s = strtoul(v, &end, 10);
    if (!*v || *end || s == 0 || s > 3600) return -1;
    c->report_timeout = (unsigned)s;
    return 0;
  }
  if (KEY("env")) {
    const char *e = strchr(v, '=');
    if (!e || !env_name_ok(v, (size_t)(e - v)) || c->nenv == INS_SPANK_MAX_ENV) return -1;
    return set_str(c->env[c->nenv++], sizeof c->env[0], v);
  }
#undef KEY
  return -1;
}

int ins_spank_conf_parse(struct ins_spank_conf *c, int argc, char **argv, char *err, size_t cap) {
  for (int i = 0; i < argc; i++) {
    if (apply(c, argv[i]) != 0) {
      snprintf(err, cap, "plugstack.conf argument '%s' not understood (plugin=/PATH, dir=/TEMPLATE, "
               "mode=json|prom|otlp, default=on|off, env=NAME=VALUE, report=on|off, "
               "report_cmd=/PATH, report_timeout=1..3600)", argv[i]);
      return -1;
    }
  }
  return 0;
}

enum ins_spank_mode ins_spank_mode_for_step(const struct ins_spank_conf *c, bool opt_used,
                                            const char *opt_arg, const char *env) {
  if (opt_used) return opt_arg && *opt_arg ? ins_spank_mode_parse(opt_arg) : c->mode;
  if (env && *env) return ins_spank_mode_parse(env);
  return c->on_by_default ? c->mode : INS_MODE_OFF;
}

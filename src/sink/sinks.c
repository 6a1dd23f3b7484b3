/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sinks.c - which sinks a configuration turns on (see sink.h): the one place
 * that knows every output format. Adding one is a line here. A build without
 * OTLP (cmake -DINSPECTOR_OTLP=OFF: no sink/otlp/, no net/) has no OTLP sink,
 * and says so once when a setting asks for it.
 */
#include "sink/sink.h"

#include "core/config.h"
#include "core/log.h"
#include "sink/json/json.h"
#include "sink/prom/prom.h"

#ifndef INSPECTOR_OTLP
#define INSPECTOR_OTLP 1 /* CMake's INSPECTOR_OTLP option sets it */
#endif
#if INSPECTOR_OTLP
#include "sink/otlp/otlp.h"
#endif

static bool json_on(const struct ins_config *cfg) { return cfg->json_dump; }
static bool prom_on(const struct ins_config *cfg) { return cfg->prom_dump; }
#if INSPECTOR_OTLP
static bool otlp_on(const struct ins_config *cfg) { return cfg->otlp_export; }
#endif

static const struct {
  const struct ins_sink *sink;
  bool (*on)(const struct ins_config *cfg);
} k_sinks[] = {
    {&ins_json_sink, json_on}, /* JSON lines, unless NCCL_INSPECTOR_PROM_DUMP=1 or JSON_DUMP=0 */
    {&ins_prom_sink, prom_on}, /* NCCL_INSPECTOR_PROM_DUMP=1: Prometheus textfiles */
#if INSPECTOR_OTLP
    {&ins_otlp_sink, otlp_on}, /* NCCL_INSPECTOR_OTLP_EXPORT=1: OTLP metrics to a collector */
#endif
};
_Static_assert(sizeof k_sinks / sizeof *k_sinks <= INS_MAX_SINKS, "a slot per sink in struct ins_comm");

#if !INSPECTOR_OTLP
static atomic_int g_warned_no_otlp;

/* This build has no OTLP: a setting that asks for it is named in one warning rather than
 * ignored silently. */
static void say_no_otlp(const struct ins_config *cfg) {
  if (cfg->otlp_export)
    ins_notice(&g_warned_no_otlp, NULL, /* no output asked for: a notice (core/log.h) */
               "NCCL_INSPECTOR_OTLP_EXPORT (or NCCL_INSPECTOR_OTEL_EXPORT) asks for OTLP metrics, "
               "but this build of the plugin has no OTLP exporter (built with -DINSPECTOR_OTLP=OFF): "
               "nothing is exported; the JSON log and Prometheus files are written as configured");
}
#endif

const struct ins_sink *const *ins_sinks_active(const struct ins_config *cfg, int *n) {
  static const struct ins_sink *active[INS_MAX_SINKS];
#if !INSPECTOR_OTLP
  say_no_otlp(cfg);
#endif
  *n = 0;
  for (size_t i = 0; i < sizeof k_sinks / sizeof *k_sinks; i++)
    if (k_sinks[i].on(cfg)) active[(*n)++] = k_sinks[i].sink;
  return active;
}

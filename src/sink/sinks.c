/*
 * sinks.c - which sinks a configuration turns on (see sink.h): the one place
 * that knows every output format. Adding one is a line here.
 */
#include "sink/sink.h"

#include "core/config.h"
#include "sink/json.h"
#include "sink/otlp.h"
#include "sink/prom.h"

static bool json_on(const struct ins_config *cfg) { return cfg->json_dump; }
static bool prom_on(const struct ins_config *cfg) { return cfg->prom_dump; }
static bool otlp_on(const struct ins_config *cfg) { return cfg->otlp_export; }

static const struct {
  const struct ins_sink *sink;
  bool (*on)(const struct ins_config *cfg);
} k_sinks[] = {
    {&ins_json_sink, json_on}, /* JSON lines, unless NCCL_INSPECTOR_PROM_DUMP=1 or JSON_DUMP=0 */
    {&ins_prom_sink, prom_on}, /* NCCL_INSPECTOR_PROM_DUMP=1: Prometheus textfiles */
    {&ins_otlp_sink, otlp_on}, /* NCCL_INSPECTOR_OTLP_EXPORT=1: OTLP metrics to a collector */
};
_Static_assert(sizeof k_sinks / sizeof *k_sinks <= INS_MAX_SINKS, "a slot per sink in struct ins_comm");

const struct ins_sink *const *ins_sinks_active(const struct ins_config *cfg, int *n) {
  static const struct ins_sink *active[INS_MAX_SINKS];
  *n = 0;
  for (size_t i = 0; i < sizeof k_sinks / sizeof *k_sinks; i++)
    if (k_sinks[i].on(cfg)) active[(*n)++] = k_sinks[i].sink;
  return active;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_config.h - the OTLP sink's settings, from the OpenTelemetry SDK's standard
 * environment variables (the names and defaults of the OTLP exporter spec), read
 * once when the sink starts. A malformed value gets one warning naming the
 * variable and the value used instead; header values are never printed (they
 * hold tokens), an endpoint only as ins_otlp_url_redact shows it, any other value
 * only as core/redact.h's ins_redact_value allows (a credential pasted into the
 * wrong variable is not shown).
 *
 *   OTEL_EXPORTER_OTLP_METRICS_ENDPOINT   the full URL, used as given
 *   OTEL_EXPORTER_OTLP_ENDPOINT           base URL; /v1/metrics is appended
 *                                         (default http://localhost:4318)
 *   OTEL_EXPORTER_OTLP_[METRICS_]HEADERS  key=value,key2=value2 (values URL-decoded; the
 *                                         headers the exporter writes itself, Host,
 *                                         Content-Length..., are dropped with a warning)
 *   OTEL_EXPORTER_OTLP_[METRICS_]PROTOCOL http/protobuf (default) or http/json
 *   OTEL_EXPORTER_OTLP_[METRICS_]COMPRESSION  gzip or none (default)
 *   OTEL_EXPORTER_OTLP_[METRICS_]TIMEOUT  ms per request (10000)
 *   OTEL_METRIC_EXPORT_INTERVAL           ms between exports (10000 here; the SDK's 60000
 *                                         is long for a job whose steps take seconds)
 *   OTEL_SERVICE_NAME                     service.name (nccl-inspector)
 *   OTEL_RESOURCE_ATTRIBUTES              key=value,... added to the resource
 */
#ifndef INS_OTLP_CONFIG_H
#define INS_OTLP_CONFIG_H

#include <stdint.h>

#include "sink/otlp/otlp_export.h"

#define INS_OTLP_MAX_ATTRS 32

struct ins_otlp_config {
  struct ins_otlp_endpoint ep; /* ep.headers is malloc'ed (or NULL) */
  uint32_t interval_ms;
  char service_name[512];
  int nattrs;
  struct {
    char key[128], value[512];
  } attrs[INS_OTLP_MAX_ATTRS]; /* OTEL_RESOURCE_ATTRIBUTES, decoded */
};

/* Reads the environment into c (warnings through the logger). */
void ins_otlp_config_load(struct ins_otlp_config *c);
void ins_otlp_config_free(struct ins_otlp_config *c);

/* The URL as a message may show it: net/url.h's ins_net_url_shown (the one rule: the
 * userinfo, the path and the query withheld by structure, the host when it is not shaped
 * like a credential, a malformed URL nothing beyond its scheme), with OTLP's standard path
 * shown as it is; into out (cap bytes, "..." at the end when cut) and returned, for a
 * printf argument. Every message that shows an endpoint goes through it. */
#define INS_OTLP_URL_SHOWN 320 /* a buffer for one URL in a message */
#define INS_OTLP_METRICS_PATH "/v1/metrics" /* the OTLP/HTTP metrics path: no secret in it */
const char *ins_otlp_url_redact(const char *url, char *out, size_t cap);

/* "a%2Cb" -> "a,b" into out (cap bytes). -1 for a bad escape or no room. Exposed for tests. */
int ins_otlp_url_decode(const char *s, size_t n, char *out, size_t cap);

#endif

/*
 * prom.c - the Prometheus aggregator and file writer (see prom.h).
 *
 * Owns the devices (one per GPU that has had a context), their series of
 * the current window (an open-addressing table keyed by the label string),
 * their counters, and the .prom files. A series stores only the labels that
 * vary (comm_name onwards); the device's fixed labels are prepended when
 * the file is written.
 */
#include "sink/prom.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/config.h"
#include "core/device.h"
#include "core/log.h"
#include "core/names.h"
#include "core/sampler.h"
#include "core/utf8.h"
#include "sink/json.h"
#include "sink/files.h"

struct series {
  uint64_t hash;
  int kind;         /* enum ins_kind */
  char *labels;     /* comm_name=...: the labels after gpu */
  double sum_us;    /* execution times, us */
  double sum_log_bw; /* log of bus bandwidths (GB/s) > 0 */
  uint64_t n, nbw;  /* ops; ops with a bandwidth > 0 */
};

struct ins_prom_dev {
  struct ins_device_id id;
  int ncomms;              /* live contexts on this device */
  char *labels;            /* version=...,gpu="GPUn" */
  struct series *s;
  size_t ns, cap;
  uint32_t *idx;           /* index + 1 into s; 0 = empty; idx_cap a power of two */
  size_t idx_cap;
  uint64_t kept[2], dropped[2];
  bool named;              /* the file's path was logged */
  struct ins_prom_dev *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_dir[PATH_MAX], g_host[256];
static bool g_stats;
static char *g_proc_labels;            /* version, cluster, slurm_job_id, node */
static struct ins_prom_dev *g_devs;
static atomic_int g_warned_write, g_warned_mem;

/* ---- helpers ------------------------------------------------------------ */

size_t ins_prom_escape(char *out, size_t cap, const char *s) {
  size_t o = 0;
  if (!cap) return 0;
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t left = strlen((const char *)p);
  while (left) {
    /* a label value is UTF-8 text: a byte that is not becomes U+FFFD */
    size_t len = ins_utf8_char_len(p, left);
    const char *piece = (const char *)p;
    size_t n = len;
    if (*p == '\\') piece = "\\\\", n = 2;
    else if (*p == '"') piece = "\\\"", n = 2;
    else if (*p == '\n') piece = "\\n", n = 2;
    else if (!len) piece = INS_UTF8_REPLACEMENT, n = sizeof INS_UTF8_REPLACEMENT - 1;
    if (o + n >= cap) break; /* never cut an escape or a character in half */
    memcpy(out + o, piece, n);
    o += n;
    if (!len) len = ins_utf8_invalid_len(p, left);
    p += len;
    left -= len;
  }
  out[o] = '\0';
  return o;
}

void ins_prom_bucket(uint64_t bytes, char *out, size_t cap) {
  static const char *const unit[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (u < 6 && (bytes >> (10 * (u + 1))) != 0) u++;
  uint64_t lo = bytes >> (10 * u);
  snprintf(out, cap, "%llu-%llu%s", (unsigned long long)lo, (unsigned long long)lo + 1, unit[u]);
}

static uint64_t fnv1a(int kind, const char *s) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* label="escaped value", appended at *o (room checked: values are capped below). */
static void label(char *buf, size_t cap, size_t *o, const char *name, const char *value,
                  size_t max_value) {
  char esc[512];
  if (max_value > sizeof esc) max_value = sizeof esc;
  ins_prom_escape(esc, max_value, value ? value : "unknown");
  int n = snprintf(buf + *o, cap - *o, "%s%s=\"%s\"", *o ? "," : "", name, esc);
  if (n > 0) *o += (size_t)n < cap - *o ? (size_t)n : cap - *o - 1;
}

static const char *env_first(const char *const *vars, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return v;
  }
  return "unknown";
}

/* ---- configuration and devices ------------------------------------------ */

void ins_prom_configure(const struct ins_config *cfg) {
  static const char *const cluster[] = {"NCCL_INSPECTOR_CLUSTER", "SLURM_CLUSTER_NAME"};
  static const char *const job[] = {"SLURM_JOB_ID", "SLURM_JOBID", "PBS_JOBID", "LSB_JOBID"};
  char buf[2048];
  size_t o = 0;
  label(buf, sizeof buf, &o, "version", INS_FORMAT_VERSION, 64);
  label(buf, sizeof buf, &o, "cluster", env_first(cluster, 2), 256);
  label(buf, sizeof buf, &o, "slurm_job_id", env_first(job, 4), 256);
  label(buf, sizeof buf, &o, "node", cfg->hostname, 512);
  pthread_mutex_lock(&g_lock);
  snprintf(g_dir, sizeof g_dir, "%s", cfg->dump_dir);
  snprintf(g_host, sizeof g_host, "%s", cfg->hostname);
  g_stats = cfg->prom_dump_stats;
  free(g_proc_labels);
  g_proc_labels = strdup(buf);
  pthread_mutex_unlock(&g_lock);
}

void ins_prom_attach(struct ins_comm *c) {
  struct ins_device_id id;
  ins_device_identify(&id, g_host, c->rank, c->nranks, c->nnodes);
  pthread_mutex_lock(&g_lock);
  struct ins_prom_dev *d = g_devs;
  while (d && strcmp(d->id.uuid, id.uuid)) d = d->next;
  if (!d && (d = calloc(1, sizeof *d))) {
    char gpu[32];
    snprintf(gpu, sizeof gpu, "GPU%d", id.ordinal);
    size_t len = (g_proc_labels ? strlen(g_proc_labels) : 0) + 64;
    d->labels = malloc(len);
    if (!d->labels) {
      free(d);
      d = NULL;
    } else {
      size_t o = (size_t)snprintf(d->labels, len, "%s", g_proc_labels ? g_proc_labels : "");
      label(d->labels, len, &o, "gpu", gpu, 32);
      d->id = id;
      d->next = g_devs;
      g_devs = d;
    }
  }
  if (d) d->ncomms++;
  c->prom_dev = d;
  pthread_mutex_unlock(&g_lock);
  if (!d)
    ins_warn("out of memory: the records of communicator 0x%llx rank %d are counted as dropped",
             (unsigned long long)c->id, c->rank);
}

/* ---- aggregation ---------------------------------------------------------- */

static int grow_index(struct ins_prom_dev *d) {
  size_t cap = d->idx_cap ? d->idx_cap * 2 : 64;
  uint32_t *idx = calloc(cap, sizeof *idx);
  if (!idx) return -1;
  for (size_t i = 0; i < d->ns; i++) {
    size_t h = (size_t)d->s[i].hash & (cap - 1);
    while (idx[h]) h = (h + 1) & (cap - 1);
    idx[h] = (uint32_t)i + 1;
  }
  free(d->idx);
  d->idx = idx;
  d->idx_cap = cap;
  return 0;
}

static struct series *find_or_add(struct ins_prom_dev *d, int kind, const char *labels) {
  uint64_t hash = fnv1a(kind, labels);
  if (d->idx_cap) {
    for (size_t h = (size_t)hash & (d->idx_cap - 1); d->idx[h]; h = (h + 1) & (d->idx_cap - 1)) {
      struct series *s = &d->s[d->idx[h] - 1];
      if (s->hash == hash && s->kind == kind && !strcmp(s->labels, labels)) return s;
    }
  }
  /* Keep the table at most half full. */
  if ((d->ns + 1) * 2 > d->idx_cap && grow_index(d) != 0) return NULL;
  if (d->ns == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 32;
    struct series *p = realloc(d->s, cap * sizeof *p);
    if (!p) return NULL;
    d->s = p;
    d->cap = cap;
  }
  char *copy = strdup(labels);
  if (!copy) return NULL;
  struct series *s = &d->s[d->ns];
  *s = (struct series){.hash = hash, .kind = kind, .labels = copy};
  size_t h = (size_t)hash & (d->idx_cap - 1);
  while (d->idx[h]) h = (h + 1) & (d->idx_cap - 1);
  d->idx[h] = (uint32_t)++d->ns;
  return s;
}

static void reset_window(struct ins_prom_dev *d) {
  for (size_t i = 0; i < d->ns; i++) free(d->s[i].labels);
  d->ns = 0;
  if (d->idx) memset(d->idx, 0, d->idx_cap * sizeof *d->idx);
}

int ins_prom_add(const struct ins_comm *c, const struct ins_record *r) {
  struct ins_prom_dev *d = c->prom_dev;
  if (!d) return -1;
  char buf[1536], size[48], ap[160], algo[64], proto[64];
  size_t o = 0;
  label(buf, sizeof buf, &o, "comm_name", c->name, 300);
  snprintf(size, sizeof size, "%d", c->nnodes);
  label(buf, sizeof buf, &o, "n_nodes", size, 32);
  snprintf(size, sizeof size, "%d", c->nranks);
  label(buf, sizeof buf, &o, "nranks", size, 32);
  ins_prom_bucket(r->bytes, size, sizeof size);
  if (r->kind == INS_KIND_COLL) {
    label(buf, sizeof buf, &o, "collective", r->func_name, 128);
    label(buf, sizeof buf, &o, "message_size", size, 48);
    snprintf(algo, sizeof algo, "%s", r->algo ? r->algo : "unknown");
    snprintf(proto, sizeof proto, "%s", r->proto ? r->proto : "unknown");
    snprintf(ap, sizeof ap, "%s_%s", algo, proto);
    label(buf, sizeof buf, &o, "algo_proto", ap, 300);
  } else {
    label(buf, sizeof buf, &o, "p2p_operation", r->func_name, 128);
    label(buf, sizeof buf, &o, "message_size", size, 48);
  }
  double bw = 0;
  if (r->exec_ns)
    bw = (double)ins_bw_bytes(r->func, r->bytes, c->nranks) / (double)r->exec_ns *
         ins_busbw_factor(r->func, c->nranks);

  pthread_mutex_lock(&g_lock);
  struct series *s = find_or_add(d, r->kind, buf);
  if (s) {
    s->n++;
    s->sum_us += (double)r->exec_ns / 1000.0;
    /* A geometric mean is undefined with a zero: such ops (no measurable time or no
     * bytes) count in the mean time but not in the bandwidth. */
    if (bw > 0) s->nbw++, s->sum_log_bw += log(bw);
  }
  pthread_mutex_unlock(&g_lock);
  if (!s)
    ins_warn_once(&g_warned_mem, "out of memory for Prometheus series: records are counted as dropped");
  return s ? 0 : -1;
}

void ins_prom_count(const struct ins_comm *c, const uint64_t kept[2], const uint64_t dropped[2]) {
  struct ins_prom_dev *d = c->prom_dev;
  if (!d) return;
  pthread_mutex_lock(&g_lock);
  for (int k = 0; k < 2; k++) d->kept[k] += kept[k], d->dropped[k] += dropped[k];
  pthread_mutex_unlock(&g_lock);
}

/* ---- files -------------------------------------------------------------- */

static void file_path(char *out, size_t cap, const struct ins_prom_dev *d) {
  snprintf(out, cap, "%s/nccl_inspector_metrics_%s.prom", g_dir, d->id.uuid);
}

static void family(FILE *f, const struct ins_prom_dev *d, const char *name, const char *help,
                   int kind, bool bw) {
  fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
  for (size_t i = 0; i < d->ns; i++) {
    const struct series *s = &d->s[i];
    if (s->kind != kind || !s->n) continue;
    double v = bw ? (s->nbw ? exp(s->sum_log_bw / (double)s->nbw) : 0.0) : s->sum_us / (double)s->n;
    fprintf(f, "%s{%s,%s} %.6f\n", name, d->labels, s->labels, v);
  }
}

static void counter(FILE *f, const struct ins_prom_dev *d, const char *name, const char *help,
                    uint64_t v) {
  fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s{%s} %llu\n", name, help, name, name, d->labels,
          (unsigned long long)v);
}

/* The share of the job that was timed, with the sampling configuration as labels. */
static void sampling_gauge(FILE *f, const struct ins_prom_dev *d) {
  struct ins_sample_stats s;
  ins_sampler_stats(&s);
  static const char *const name = "nccl_sampled_ratio";
  fprintf(f, "# HELP %s Share of the job whose ops were timed: of wall time (time windows) or of "
          "groups (group count); 1 when every op is timed. Means and bandwidths cover timed ops only.\n"
          "# TYPE %s gauge\n%s{%s,sampling_mode=", name, name, name, d->labels);
  if (s.mode == INS_SAMPLE_TIME)
    fprintf(f, "\"time\",sampling_window_ms=\"%lld\",sampling_period_ms=\"%lld\"", s.window_ms,
            s.period_ms);
  else if (s.mode == INS_SAMPLE_GROUPS)
    fprintf(f, "\"groups\",sampling_every=\"%lld\",sampling_burst=\"%lld\"", s.every, s.burst);
  else
    fprintf(f, "\"all\"");
  fprintf(f, "} %.6f\n", s.covered);
}

/* Write d's file from its window and start a new window (g_lock held). */
static void write_dev(struct ins_prom_dev *d) {
  char tmp[PATH_MAX + 256], path[PATH_MAX + 256], prefix[256];
  file_path(path, sizeof path, d);
  /* A new file under a random name (sink/files.h), renamed over the .prom file when
   * complete: the node exporter never reads half a file, and a link planted at either
   * name is never written through. Not *.prom: the textfile collector ignores it. */
  snprintf(prefix, sizeof prefix, ".nccl_inspector_metrics_%s.prom.tmp", d->id.uuid);
  FILE *f = NULL;
  int fd = -1;
  if (ins_mkdir_p(g_dir) != 0) {
    ins_warn_once(&g_warned_write, "cannot create dump directory '%s': %s; Prometheus metrics are "
                  "not written (set NCCL_INSPECTOR_DUMP_DIR to a writable directory)",
                  g_dir, strerror(errno));
  } else if ((fd = ins_create_temp(g_dir, prefix, tmp, sizeof tmp)) < 0 ||
             !(f = fdopen(fd, "w"))) {
    ins_warn_once(&g_warned_write, "cannot create a file in '%s': %s; Prometheus metrics are "
                  "not written", g_dir, strerror(errno));
    if (fd >= 0) {
      close(fd);
      unlink(tmp);
    }
  }
  if (f) {
    family(f, d, "nccl_bus_bandwidth_gbs",
           "Collective bus bandwidth in GB/s: geometric mean over the dump window.", INS_KIND_COLL, true);
    family(f, d, "nccl_collective_exec_time_microseconds",
           "Collective execution time in microseconds: mean over the dump window.", INS_KIND_COLL, false);
    family(f, d, "nccl_p2p_bus_bandwidth_gbs",
           "Point-to-point bus bandwidth in GB/s: geometric mean over the dump window.", INS_KIND_P2P, true);
    family(f, d, "nccl_p2p_exec_time_microseconds",
           "Point-to-point execution time in microseconds: mean over the dump window.", INS_KIND_P2P, false);
    if (g_stats) {
      counter(f, d, "nccl_collectives_total", "Collective records aggregated on this GPU.", d->kept[0]);
      counter(f, d, "nccl_collectives_dropped_total", "Collective records dropped on this GPU.", d->dropped[0]);
      counter(f, d, "nccl_p2p_total", "Point-to-point records aggregated on this GPU.", d->kept[1]);
      counter(f, d, "nccl_p2p_dropped_total", "Point-to-point records dropped on this GPU.", d->dropped[1]);
      sampling_gauge(f, d);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
      ins_warn_once(&g_warned_write, "cannot write '%s': %s; Prometheus metrics are not written",
                    path, strerror(errno));
      unlink(tmp);
    } else if (!d->named) {
      d->named = true;
      ins_info("writing Prometheus metrics to %s", path);
    }
  }
  reset_window(d);
}

void ins_prom_write_all(void) {
  pthread_mutex_lock(&g_lock);
  for (struct ins_prom_dev *d = g_devs; d; d = d->next)
    if (d->ncomms > 0) write_dev(d);
  pthread_mutex_unlock(&g_lock);
}

void ins_prom_detach(struct ins_comm *c) {
  struct ins_prom_dev *d = c->prom_dev;
  if (!d) return;
  pthread_mutex_lock(&g_lock);
  if (--d->ncomms > 0) {
    write_dev(d);
  } else {
    char path[PATH_MAX + 256];
    file_path(path, sizeof path, d);
    if (unlink(path) == 0) ins_info("removed %s (last communicator on its GPU destroyed)", path);
    reset_window(d);
  }
  pthread_mutex_unlock(&g_lock);
  c->prom_dev = NULL;
}

void ins_prom_shutdown(void) {
  /* The devices themselves are kept (a few hundred bytes each): a context finalized
   * after exit has begun still finds its device. */
  ins_prom_write_all();
}

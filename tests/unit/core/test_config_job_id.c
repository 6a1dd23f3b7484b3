/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config_job_id.c - metadata.job_id in every line of the JSON log (src/core/config.c reads it,
 * src/sink/json/json.c writes it; docs/CONTRACTS.md section 2), one behaviour per ctest:
 *
 *   inspector-unit-config_job_id --case CASE      (unit_config_job_id.<case>; every case without --case)
 *
 * Each case runs in a process of its own (fork_util.h: the plugin reads its configuration
 * once per process) and sets the batch systems' variables, the four cleared first (the
 * test itself may run inside a Slurm job). Then it writes every kind of line the log has:
 * two records and a dump_stats line through the plugin's v5 table (two AllReduces, the
 * finalize), and a hang, a hang_resolved and a comm_idle line through the JSON sink, called
 * as hang detection's checks call it (sink/sink.h), for a context made by hand. Every line is
 * read back with jansson, the reference parser (it refuses invalid UTF-8, a raw control
 * character, a bad escape): its metadata holds the format's six keys, plus job_id exactly
 * when one of the variables is set, equal to the value written here by hand.
 *
 *   slurm     all four set: SLURM_JOB_ID's value
 *   jobid     SLURM_JOB_ID empty (read as unset), SLURM_JOBID and PBS_JOBID set: SLURM_JOBID's
 *   pbs       PBS_JOBID alone ("4242.pbs-server.example.org")
 *   lsb       LSB_JOBID alone
 *   none      none set: no job_id key (not "unknown", which Prometheus' label says then)
 *   hostile   quotes, a backslash, control characters, invalid UTF-8 (a lone byte, a sequence
 *             cut short, an encoded surrogate) and 600 bytes in all: the line parses, each
 *             invalid sequence is U+FFFD, and the id is cut between characters to at most
 *             128 bytes (126 here: the next character, 3 bytes, would cross the bound)
 */
#include <jansson.h>

#include "core/comm.h"
#include "core/config.h"
#include "fork_util.h"
#include "sink/json/json.h"

static const char *const k_vars[] = {"SLURM_JOB_ID", "SLURM_JOBID", "PBS_JOBID", "LSB_JOBID"};

static void clear_vars(void) {
  for (size_t i = 0; i < sizeof k_vars / sizeof *k_vars; i++) unsetenv(k_vars[i]);
}

/* The metadata keys of the format (docs/CONTRACTS.md section 2), job_id aside. */
static const char *const k_meta[] = {"inspector_output_format_version", "git_rev", "rec_mechanism",
                                     "dump_timestamp_us", "hostname", "pid"};
#define NMETA (sizeof k_meta / sizeof *k_meta)

/* Lines of each kind found, by their top-level key. */
struct kinds {
  int records, stats, hang, resolved, idle, other;
};

/* Checks one line's metadata; want: the job id (want_len bytes), or NULL for none. */
static void check_line(const char *line, const char *want, size_t want_len, struct kinds *k) {
  json_error_t err;
  json_t *o = json_loads(line, 0, &err);
  if (!o) fprintf(stderr, "not JSON (%s): %.300s\n", err.text, line);
  CHECK(o != NULL);
  if (!o) return;
  if (json_object_get(o, "coll_perf")) k->records++;
  else if (json_object_get(o, "dump_stats")) k->stats++;
  else if (json_object_get(o, "hang")) k->hang++;
  else if (json_object_get(o, "hang_resolved")) k->resolved++;
  else if (json_object_get(o, "comm_idle")) k->idle++;
  else k->other++;
  json_t *m = json_object_get(o, "metadata");
  CHECK(json_is_object(m));
  if (json_is_object(m)) {
    for (size_t i = 0; i < NMETA; i++) CHECK(json_object_get(m, k_meta[i]) != NULL);
    CHECK_EQ_U(json_object_size(m), NMETA + (want != NULL));
    json_t *j = json_object_get(m, "job_id");
    if (!want) {
      CHECK(j == NULL);
    } else {
      CHECK(json_is_string(j));
      bool same = json_is_string(j) && json_string_length(j) == want_len &&
                  memcmp(json_string_value(j), want, want_len) == 0;
      if (!same) {
        char *got = json_dumps(j, JSON_ENCODE_ANY);
        fprintf(stderr, "job_id %s, expected %zu bytes: %.*s\n", got ? got : "(none)", want_len,
                (int)want_len, want);
        free(got);
      }
      CHECK(same);
    }
  }
  json_decref(o);
}

/* A hang, a hang_resolved and a comm_idle line, through the JSON sink as a check writes them. */
static void hang_lines(void) {
  struct ins_config cfg;
  ins_config_load(&cfg);
  struct ins_comm *c = ins_comm_create(&cfg, 0x4a0b, "hung", 1, 2, 0);
  CHECK(c != NULL);
  if (!c) return;
  void *state = NULL;
  CHECK(ins_json_sink.attach(c, &state) == 0);
  struct ins_sink_batch b = {.wall_us = 1796000000000000ull, .direct = true};
  ins_json_sink.begin_pass(&b);
  struct ins_sink_last last = {.kind = INS_KIND_COLL, .func = "AllGather", .sn = 6, .end_ns = 5};
  struct ins_sink_hang h = {.what = INS_HANG_STUCK, .wall_us = b.wall_us,
                            .op = {.kind = INS_KIND_COLL, .func = "AllReduce", .datatype = "ncclFloat32",
                                   .sn = 7, .peer = -1, .bytes = 1 << 20, .count = 1 << 18},
                            .in_flight_s = 12.5, .first_seen_us = b.wall_us - 12500000,
                            .channels_started = 1, .ops_in_flight = 1, .last = &last};
  CHECK(ins_json_sink.hang(&b, c, state, &h) == 0);
  h.what = INS_HANG_RESOLVED;
  CHECK(ins_json_sink.hang(&b, c, state, &h) == 0);
  h.what = INS_HANG_IDLE;
  h.idle_s = 301;
  CHECK(ins_json_sink.hang(&b, c, state, &h) == 0);
  ins_json_sink.batch_free(&b);
  ins_json_sink.detach(c, state);
  ins_comm_destroy(c);
}

/* Writes every kind of line into dir and checks each against want (NULL: no job id). */
static int run(const char *dir, const char *want, size_t want_len) {
  setenv("NCCL_INSPECTOR_HANG_SECONDS", "0", 1); /* no check of the dump thread's: ours alone */
  void *ctx = fu_init(0x10b1d);
  if (!ctx) return 1;
  fu_op(ctx);
  fu_op(ctx);
  hang_lines();
  CHECK(ncclProfiler_v5.finalize(ctx) == 0); /* its records and dump_stats, written */

  struct kinds k = {0};
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  int logs = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 4, ".log")) continue;
    logs++;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char *line = NULL;
    size_t cap = 0;
    while (f && getline(&line, &cap, f) > 0)
      if (line[strspn(line, " \n")]) check_line(line, want, want_len, &k); /* the layout's padding aside */
    free(line);
    if (f) fclose(f);
  }
  if (d) closedir(d);
  CHECK_EQ_U(logs, 1);
  CHECK_EQ_U(k.records, 2);
  CHECK(k.stats >= 1);
  CHECK_EQ_U(k.hang, 1);
  CHECK_EQ_U(k.resolved, 1);
  CHECK_EQ_U(k.idle, 1);
  CHECK_EQ_U(k.other, 0);
  return g_fail;
}

static int run_str(const char *dir, const char *want) { return run(dir, want, want ? strlen(want) : 0); }

static int case_slurm(const char *dir) {
  clear_vars();
  setenv("SLURM_JOB_ID", "4242", 1);
  setenv("SLURM_JOBID", "1111", 1);
  setenv("PBS_JOBID", "2222.pbs", 1);
  setenv("LSB_JOBID", "3333", 1);
  return run_str(dir, "4242");
}

static int case_jobid(const char *dir) {
  clear_vars();
  setenv("SLURM_JOB_ID", "", 1);
  setenv("SLURM_JOBID", "31337", 1);
  setenv("PBS_JOBID", "2222.pbs", 1);
  return run_str(dir, "31337");
}

static int case_pbs(const char *dir) {
  clear_vars();
  setenv("PBS_JOBID", "4242.pbs-server.example.org", 1);
  return run_str(dir, "4242.pbs-server.example.org");
}

static int case_lsb(const char *dir) {
  clear_vars();
  setenv("LSB_JOBID", "77", 1);
  return run_str(dir, "77");
}

static int case_none(const char *dir) {
  clear_vars();
  return run_str(dir, NULL);
}

static int case_hostile(const char *dir) {
  clear_vars();
  /* 32 bytes that are not a plain name: JSON's specials, control characters, DEL, a lone
   * 0xff, 0xc3 cut short by '(', an encoded surrogate (ED A0 80: three bytes, none of them
   * the start of a valid character), then e-acute */
  static const char head[] = "a\"b\\c\n\t\x01\x1f\x7f|\xff|\xc3(|\xed\xa0\x80|\xc3\xa9";
  /* as valid UTF-8: each invalid byte one U+FFFD (EF BF BD), as Python's decoder has it */
  static const char head_clean[] = "a\"b\\c\n\t\x01\x1f\x7f|\xef\xbf\xbd|\xef\xbf\xbd(|"
                                   "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xc3\xa9";
  char value[601], want[129];
  size_t hn = strlen(head), cn = strlen(head_clean);
  CHECK_EQ_U(cn, 32);
  /* then 'x' up to 126 bytes of the cleaned text, a euro sign (3 bytes: 127 to 129, past the
   * bound), and 'y' up to 600 bytes */
  size_t nx = 126 - cn;
  memcpy(value, head, hn);
  memset(value + hn, 'x', nx);
  memcpy(value + hn + nx, "\xe2\x82\xac", 3);
  memset(value + hn + nx + 3, 'y', 600 - (hn + nx + 3));
  value[600] = '\0';
  memcpy(want, head_clean, cn);
  memset(want + cn, 'x', nx);
  setenv("SLURM_JOB_ID", value, 1);
  return run(dir, want, 126);
}

static const struct fu_named_case k_cases[] = {
    {"slurm", case_slurm}, {"jobid", case_jobid}, {"pbs", case_pbs},
    {"lsb", case_lsb},     {"none", case_none},   {"hostile", case_hostile},
};

int main(int argc, char **argv) {
  (void)fu_child_ok, (void)fu_log_files, (void)fu_records; /* fork_util.h's, not needed */
  return fu_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "job_id");
}

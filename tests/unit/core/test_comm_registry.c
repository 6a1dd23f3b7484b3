/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_comm_registry.c - communicators come and go while the dump thread drains others: an
 * init or a finalize never waits for the draining or formatting of other communicators
 * (src/sink/dump.c, "A pass"), and the registry adds and removes in O(1) (core/comm.h).
 * Through the plugin's exported v5 table, as NCCL calls it. The dump thread is stopped
 * at a point made certain through the plugin's test hook (inside a drain of a chosen
 * communicator, or at a pass's start), the Prometheus sink inside a file's write through
 * this program's renameat() (the .prom file's publication), the JSON log's writer thread
 * inside a write through its pwrite() (they take precedence over libc's for the plugin
 * objects linked in). What must happen while it is stopped runs on a helper thread; the
 * only wait is for that to finish, bounded (DETECT_MS) so that a plugin that makes it
 * wait fails the case instead of hanging it. Each case runs in a process of its own (fork_util.h).
 *   mid_drain         the dump thread stopped inside a busy communicator's drain (its
 *                     producer going on): another communicator's ops, a new one's init,
 *                     both finalizes complete, and their records are in the file when
 *                     the finalizes return
 *   mid_drain_prom    the same with the Prometheus sink on (a pass woken by a filling
 *                     ring: Prometheus windows are 30 s at least)
 *   prom_write        a finalize stopped inside its GPU's .prom file write: an init on
 *                     that GPU and a finalize on another GPU complete
 *   writer_held       the writer thread stopped inside a write of a busy communicator's
 *                     lines (a slow file system): an idle communicator's finalize, and
 *                     another's init and finalize, complete (a finalize with lines of its
 *                     own waits for that one write: the log file takes one at a time)
 *   final_in_order    a pass that drained communicator X and stopped inside Y's: X's next
 *                     record, then X's finalize: when it returns, X's every record is in
 *                     the file, in order (the lines the pass took of X first)
 *   remove_in_order   1,000 communicators finalized in creation order: the registry
 *                     stores or moves one entry per init and per finalize, not one per
 *                     communicator it holds (ins_registry_moves)
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

#include "core/comm.h"
#include "sink/dump.h"
/* its cases in processes of their own, ops and counts; not its fork helpers */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "fork_util.h"
#pragma GCC diagnostic pop

#define DETECT_MS 30000 /* a wait that must end at once; longer is a failure, not a hang */

/* ---- the seams ------------------------------------------------------------------ */

static atomic_int g_release;              /* what stopped may go on */
static atomic_int g_hold_pass, g_in_pass; /* the next pass stops at its start (once) */
static _Atomic uint64_t g_hold_drain_of;  /* a drain of this communicator stops (once) */
static atomic_int g_hold_second;          /* the next pass stops in its 2nd communicator */
static _Atomic uint64_t g_first_drained;  /* ... whose 1st was this one */
static _Atomic uint64_t g_held_in;        /* the communicator a drain stopped in */
static atomic_int g_hold_rename, g_in_rename; /* the next .prom rename stops (once) */
static atomic_int g_hold_pwrite, g_in_pwrite; /* the next pwrite stops (once) */

static void wait_release(void) {
  while (!atomic_load(&g_release)) fu_sleep_ms(1);
}

static void hook(enum ins_dump_hook_at at, const struct ins_comm *c) {
  if (at == INS_DUMP_HOOK_PASS && atomic_exchange(&g_hold_pass, 0)) {
    atomic_store(&g_in_pass, 1);
    wait_release();
    atomic_store(&g_release, 0); /* the next stop waits for its own release */
    return;
  }
  if (at != INS_DUMP_HOOK_DRAIN) return;
  bool hold = false;
  uint64_t want = atomic_load(&g_hold_drain_of);
  if (want && c->id == want) {
    hold = atomic_compare_exchange_strong(&g_hold_drain_of, &want, 0);
  } else if (atomic_load(&g_hold_second)) {
    uint64_t first = 0;
    if (!atomic_compare_exchange_strong(&g_first_drained, &first, c->id) && first != c->id)
      hold = atomic_exchange(&g_hold_second, 0);
  }
  if (!hold) return;
  atomic_store(&g_held_in, c->id);
  wait_release();
}

int renameat(int fromfd, const char *from, int tofd, const char *to) {
  static int (*real)(int, const char *, int, const char *);
  if (!real) real = (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
  if (strstr(to, "nccl_inspector_metrics_") && atomic_exchange(&g_hold_rename, 0)) {
    atomic_store(&g_in_rename, 1);
    wait_release();
  }
  return real(fromfd, from, tofd, to);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  static ssize_t (*real)(int, const void *, size_t, off_t);
  if (!real) real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  if (atomic_exchange(&g_hold_pwrite, 0)) {
    atomic_store(&g_in_pwrite, 1);
    wait_release();
  }
  return real(fd, buf, n, off);
}

/* Wait (bounded) until *flag is non-zero: an event that must come. */
static bool reached(const atomic_int *flag) {
  for (int i = 0; i < FU_CHILD_MS && !atomic_load(flag); i++) fu_sleep_ms(1);
  return atomic_load(flag) != 0;
}

static bool reached_u64(const _Atomic uint64_t *v) {
  for (int i = 0; i < FU_CHILD_MS && !atomic_load(v); i++) fu_sleep_ms(1);
  return atomic_load(v) != 0;
}

/* Run fn on a thread of its own; true if it returned within DETECT_MS (it should not
 * have to wait for anything). The thread is joined by join_helper, after the release. */
struct helper {
  pthread_t t;
  void *(*fn)(void *);
  void *arg;
  atomic_int done;
};

static void *helper_main(void *arg) {
  struct helper *h = arg;
  h->fn(h->arg);
  atomic_store(&h->done, 1);
  return NULL;
}

static bool start(struct helper *h, void *(*fn)(void *), void *arg) {
  h->fn = fn;
  h->arg = arg;
  atomic_store(&h->done, 0);
  return pthread_create(&h->t, NULL, helper_main, h) == 0;
}

static bool completes(struct helper *h, void *(*fn)(void *), void *arg) {
  if (!start(h, fn, arg)) return false;
  for (int i = 0; i < DETECT_MS && !atomic_load(&h->done); i++) fu_sleep_ms(1);
  return atomic_load(&h->done) != 0;
}

static void join_helper(struct helper *h) { pthread_join(h->t, NULL); }

/* ---- the plugin's side of it ------------------------------------------------------ */

static void *comm_init(uint64_t id, int rank) {
  void *ctx = NULL;
  CHECK(ncclProfiler_v5.init(&ctx, id, &fu_mask, "registry", 1, 2, rank, fu_logger) == 0 && ctx);
  return ctx;
}

/* AllReduce number sn, alone in its group, later on the GPU than every op before it. */
static void op_sn(void *ctx, uint64_t sn) {
  uint64_t t0 = atomic_fetch_add(&fu_gpu_ns, 20000);
  oo_group(ctx);
  oo_allreduce(ctx, sn, (struct oo_span[]){{t0, t0 + 12000}}, 1);
}

/* The coll_sn of communicator id's records in this process's log, in file order: how many
 * (at most cap in sn[]). */
static int record_sns(const char *dir, uint64_t id, uint64_t *sn, int cap) {
  char suffix[48], idpat[48], path[4096], line[16384];
  snprintf(suffix, sizeof suffix, "-pid%ld.log", (long)getpid());
  snprintf(idpat, sizeof idpat, "\"id\":\"0x%llx\"", (unsigned long long)id);
  int n = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name), sl = strlen(suffix);
    if (l < sl || strcmp(e->d_name + l - sl, suffix)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
      const char *p = strstr(line, "\"coll_sn\":");
      if (!strstr(line, "\"coll_perf\":{") || !strstr(line, idpat) || !p) continue;
      if (n < cap) sn[n] = strtoull(p + 10, NULL, 10);
      n++;
    }
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

/* Communicator id's records are sn 0 .. n-1, in that order, in the file. */
static void check_in_order(const char *dir, uint64_t id, int n) {
  uint64_t sn[4096];
  int got = record_sns(dir, id, sn, 4096);
  CHECK_EQ_U(got, n);
  int in_order = 0;
  for (int i = 0; i < got && i < n && i < 4096; i++) in_order += sn[i] == (uint64_t)i;
  CHECK_EQ_U(in_order, n);
}

/* ---- mid_drain, mid_drain_prom ---------------------------------------------------- */

#define COMM_A 0xa1ULL
#define COMM_B 0xb2ULL
#define COMM_C 0xc3ULL
#define COMM_D 0xd4ULL

struct busy {
  void *ctx;
  uint64_t first, n; /* ops numbered first .. first + n - 1 */
};

/* A's producer, while its drain is stopped: paced, and fewer than its ring holds. */
static void *produce(void *arg) {
  struct busy *b = arg;
  for (uint64_t i = 0; i < b->n; i++) {
    op_sn(b->ctx, b->first + i);
    if (i % 8 == 7) fu_sleep_ms(1);
  }
  return NULL;
}

struct others {
  void *b;      /* live, no record yet */
  void *c;      /* made here */
};

static void *init_and_finalize(void *arg) {
  struct others *o = arg;
  op_sn(o->b, 0);
  op_sn(o->b, 1);
  CHECK(ncclProfiler_v5.finalize(o->b) == 0);
  /* B was in the stopped pass's snapshot: its memory is not retired for reuse until that
   * pass ends (core/comm.h), so C, made now, is not made in it (the pass will still lock
   * B's drain_lock and find it finalized) */
  o->c = comm_init(COMM_C, 0);
  CHECK(o->c != o->b);
  if (o->c) op_sn(o->c, 0);
  if (o->c) CHECK(ncclProfiler_v5.finalize(o->c) == 0);
  return NULL;
}

/* A's first `initial` ops wake a pass, which stops inside A's drain; `busy` more come
 * while it is stopped. */
static int mid_drain(const char *dir, int initial, int busy) {
  ins_dump_test_hook = hook;
  void *a = comm_init(COMM_A, 0);
  struct others o = {.b = comm_init(COMM_B, 0)};
  if (!a || !o.b) return 1;
  atomic_store(&g_hold_drain_of, COMM_A);
  for (int i = 0; i < initial; i++) op_sn(a, (uint64_t)i);
  CHECK(reached_u64(&g_held_in));
  CHECK_EQ_U(atomic_load(&g_held_in), COMM_A);
  pthread_t prod;
  struct busy bz = {a, (uint64_t)initial, (uint64_t)busy};
  CHECK(pthread_create(&prod, NULL, produce, &bz) == 0);

  struct helper h;
  bool done = completes(&h, init_and_finalize, &o);
  CHECK(done);
  if (done) { /* written by their finalizes, A's drain still stopped */
    check_in_order(dir, COMM_B, 2);
    check_in_order(dir, COMM_C, 1);
  }
  atomic_store(&g_release, 1);
  join_helper(&h);
  pthread_join(prod, NULL);
  CHECK(ncclProfiler_v5.finalize(a) == 0);
  check_in_order(dir, COMM_A, initial + busy);
  return g_fail;
}

static int case_mid_drain(const char *dir) {
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "0", 1); /* a pass every ms */
  return mid_drain(dir, 3, 500);
}

static int case_mid_drain_prom(const char *dir) {
  setenv("NCCL_INSPECTOR_PROM_DUMP", "1", 1);
  setenv("NCCL_INSPECTOR_JSON_DUMP", "1", 1); /* the records, to count */
  /* Windows of 30 s: the pass comes when A's ring is a quarter full (64 of 256) */
  setenv("NCCL_INSPECTOR_DUMP_COLL_RING_SIZE", "256", 1);
  return mid_drain(dir, 70, 150);
}

/* ---- prom_write ------------------------------------------------------------------ */

static void *finalize_one(void *ctx) {
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  return NULL;
}

struct gpus {
  void *c;  /* made here, on GPU 0, whose file is being written */
  void *d;  /* live on GPU 1, finalized here */
};

static void *init_gpu0_finalize_gpu1(void *arg) {
  struct gpus *g = arg;
  g->c = comm_init(COMM_C, 0);
  CHECK(ncclProfiler_v5.finalize(g->d) == 0);
  return NULL;
}

static int case_prom_write(const char *dir) {
  (void)dir;
  setenv("NCCL_INSPECTOR_PROM_DUMP", "1", 1);
  ins_dump_test_hook = hook;
  /* ranks 0 and 1 of 2 on one node: GPUs 0 and 1 (no GPU runtime: sink/device.c) */
  void *a = comm_init(COMM_A, 0), *b = comm_init(COMM_B, 0);
  struct gpus g = {.d = comm_init(COMM_D, 1)};
  if (!a || !b || !g.d) return 1;
  op_sn(a, 0);
  /* A's finalize rewrites GPU 0's file (B stays): it stops inside that write */
  atomic_store(&g_hold_rename, 1);
  struct helper fin;
  CHECK(start(&fin, finalize_one, a));
  CHECK(reached(&g_in_rename));
  struct helper h;
  CHECK(completes(&h, init_gpu0_finalize_gpu1, &g));
  atomic_store(&g_release, 1);
  join_helper(&fin);
  join_helper(&h);
  CHECK(g.c != NULL);
  if (g.c) CHECK(ncclProfiler_v5.finalize(g.c) == 0);
  CHECK(ncclProfiler_v5.finalize(b) == 0);
  return g_fail;
}

/* ---- writer_held ------------------------------------------------------------------- */

struct idle {
  void *c; /* live, no op: nothing of its own to write */
};

static void *idle_comings_and_goings(void *arg) {
  struct idle *i = arg;
  CHECK(ncclProfiler_v5.finalize(i->c) == 0);
  void *d = comm_init(COMM_D, 0);
  if (d) CHECK(ncclProfiler_v5.finalize(d) == 0);
  return NULL;
}

static int case_writer_held(const char *dir) {
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "0", 1);
  void *a = comm_init(COMM_A, 0);
  struct idle i = {.c = comm_init(COMM_C, 0)};
  if (!a || !i.c) return 1;
  atomic_store(&g_hold_pwrite, 1);
  for (uint64_t k = 0; k < 3; k++) op_sn(a, k); /* the writer holds in their write */
  CHECK(reached(&g_in_pwrite));
  for (uint64_t k = 3; k < 200; k++) op_sn(a, k); /* more of A's lines queued behind it */
  struct helper h;
  CHECK(completes(&h, idle_comings_and_goings, &i));
  atomic_store(&g_release, 1);
  join_helper(&h);
  CHECK(ncclProfiler_v5.finalize(a) == 0);
  check_in_order(dir, COMM_A, 200);
  return g_fail;
}

/* ---- final_in_order ---------------------------------------------------------------- */

struct last {
  void *ctx;
  uint64_t sn;
};

static void *record_and_finalize(void *arg) {
  struct last *l = arg;
  op_sn(l->ctx, l->sn);
  CHECK(ncclProfiler_v5.finalize(l->ctx) == 0);
  return NULL;
}

static int case_final_in_order(const char *dir) {
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "0", 1);
  ins_dump_test_hook = hook;
  void *a = comm_init(COMM_A, 0), *b = comm_init(COMM_B, 0);
  if (!a || !b) return 1;
  /* a pass stopped at its start, before it sees any of these */
  atomic_store(&g_hold_pass, 1);
  CHECK(reached(&g_in_pass));
  for (uint64_t i = 0; i < 3; i++) op_sn(a, i), op_sn(b, i);
  /* that pass drains one of them (X), then stops in the other's (Y) */
  atomic_store(&g_hold_second, 1);
  atomic_store(&g_release, 1);
  CHECK(reached_u64(&g_held_in));
  uint64_t x = atomic_load(&g_first_drained), y = atomic_load(&g_held_in);
  CHECK((x == COMM_A && y == COMM_B) || (x == COMM_B && y == COMM_A));
  /* X's next record, then its finalize: the pass took X's first 3 */
  struct last l = {x == COMM_A ? a : b, 3};
  struct helper h;
  bool done = completes(&h, record_and_finalize, &l);
  CHECK(done);
  if (done) check_in_order(dir, x, 4); /* Y's drain still stopped */
  atomic_store(&g_release, 1);
  join_helper(&h);
  CHECK(ncclProfiler_v5.finalize(x == COMM_A ? b : a) == 0);
  check_in_order(dir, y, 3);
  return g_fail;
}

/* ---- remove_in_order --------------------------------------------------------------- */

#define MANY 1000

static int case_remove_in_order(const char *dir) {
  (void)dir;
  static void *ctx[MANY];
  uint64_t m0 = ins_registry_moves();
  for (int i = 0; i < MANY; i++) ctx[i] = comm_init(0x100000ULL + (uint64_t)i, 0);
  uint64_t m1 = ins_registry_moves();
  for (int i = 0; i < MANY; i++)
    if (ctx[i]) CHECK(ncclProfiler_v5.finalize(ctx[i]) == 0);
  uint64_t m2 = ins_registry_moves();
  /* one entry stored per init, at most one moved per finalize (a list walked from the
   * newest would visit MANY * (MANY + 1) / 2) */
  CHECK_EQ_U(m1 - m0, MANY);
  CHECK(m2 - m1 <= MANY);
  if (m2 - m1 > MANY)
    fprintf(stderr, "%llu entries visited or moved for %d finalizes\n",
            (unsigned long long)(m2 - m1), MANY);
  return g_fail;
}

int main(void) {
  fu_case("remove_in_order", case_remove_in_order);
  fu_case("mid_drain", case_mid_drain);
  fu_case("mid_drain_prom", case_mid_drain_prom);
  fu_case("prom_write", case_prom_write);
  fu_case("writer_held", case_writer_held);
  fu_case("final_in_order", case_final_in_order);
  return check_report("registry");
}

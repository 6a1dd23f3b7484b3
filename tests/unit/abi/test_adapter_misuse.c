/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_adapter_misuse.c - calls NCCL never makes, through the plugin's v5 and v6 tables as a
 * host would make them (one_op.h): each returns success, writes no record and touches no
 * memory that is not the plugin's (each case is clean under ASan+UBSan; on the code before
 * the fix each failed there: a heap-use-after-free, a buffer overflow or a misaligned
 * access). Each case runs in a process of its own (fork_util.h).
 *   start_after_finalize      startEvent of every kind on a finalized context, and a
 *                             second finalize (v5): no handle, no record
 *   start_after_finalize_v6   the same through v6, a copy-engine collective among them
 *   late_kernel_events        an op in flight at its communicator's finalize: its kernel
 *                             channels' record and stop, the op's stop and a new channel of
 *                             it, all after the finalize; and a channel left started by a
 *                             completed op that said fewer channels: nothing recorded
 *   foreign_misaligned        stopEvent and recordEventState on memory of the test's own:
 *                             copies of a live channel and of a live op at misaligned
 *                             addresses (their tags are the plugin's own): each refused, the
 *                             memory untouched, the live op recorded right; one warning at
 *                             the next finalize counts them
 *   foreign_aligned           the same on aligned memory starting with a one-byte tag of the
 *                             layout before (0xA2, 0xA1) or with anything (0x55)
 *   retired_contexts_reused   a finalized context is kept for late calls, and the next init
 *                             reuses it: 200 communicators made and finalized one at a time
 *                             leave one context; three at a time, three
 */
#include "fork_util.h"
#include "core/comm.h" /* ins_comm_retired_count: the contexts kept */
#include "core/op.h"   /* ins_op_refused_handles: what the warning counts */

extern struct prof_table_v6 ncclProfiler_v6;

/* Records of communicator id in this process's log. */
static long records(const char *dir, uint64_t id) { return fu_records(dir, (long)getpid(), id); }

static struct prof_descr_v5 descr(uint64_t type, void *parent) {
  struct prof_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = type;
  d.parentObj = parent;
  return d;
}

/* A Coll descriptor: AllReduce of 1 MiB on n channels. */
static struct prof_descr_v5 coll(uint64_t sn, int n) {
  struct prof_descr_v5 d = descr(PROF_EV_COLL, NULL);
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.count = 262144;
  d.coll.seqNumber = sn;
  d.coll.nChannels = (uint8_t)n;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  return d;
}

static void *kernel_start(void *ctx, void *op, int channel, uint64_t ptimer) {
  struct prof_descr_v5 d = descr(PROF_EV_KERNEL_CH, op);
  d.kernelCh.channelId = (uint8_t)channel;
  d.kernelCh.pTimer = ptimer;
  void *h = (void *)1;
  CHECK(ncclProfiler_v5.startEvent(ctx, &h, &d) == 0);
  return h;
}

static int record_stop(void *h, uint64_t ptimer) {
  union prof_state_args a;
  memset(&a, 0, sizeof a);
  a.kernelCh.pTimer = ptimer;
  return ncclProfiler_v5.recordEventState(h, PROF_STATE_KERNEL_CH_STOP, &a);
}

/* A startEvent of each kind on ctx: every one returns 0, and none a handle. */
static void late_starts_v5(void *ctx, void *stale_parent) {
  static const uint64_t types[] = {PROF_EV_GROUP, PROF_EV_GROUP_API, PROF_EV_COLL_API,
                                   PROF_EV_P2P_API, PROF_EV_COLL, PROF_EV_P2P, PROF_EV_KERNEL_CH,
                                   PROF_EV_PROXY_OP};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    struct prof_descr_v5 d = types[i] == PROF_EV_COLL ? coll(99, 2) : descr(types[i], NULL);
    if (types[i] == PROF_EV_P2P) {
      d.p2p.func = "Send", d.p2p.datatype = "ncclInt8", d.p2p.count = 1 << 20, d.p2p.peer = 1;
      d.p2p.nChannels = 1;
    }
    if (types[i] == PROF_EV_COLL_API) d.collApi.func = "AllReduce";
    if (types[i] == PROF_EV_KERNEL_CH) d.parentObj = stale_parent, d.kernelCh.pTimer = 5000000;
    void *h = (void *)1;
    CHECK(ncclProfiler_v5.startEvent(ctx, &h, &d) == 0);
    CHECK(h == NULL);
    CHECK(ncclProfiler_v5.stopEvent(h) == 0);
  }
}

static int case_start_after_finalize(const char *dir) {
  void *c = fu_init(0xa1);
  fu_op(c);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  CHECK_EQ_U(records(dir, 0xa1), 1);
  late_starts_v5(c, NULL);
  CHECK(ncclProfiler_v5.finalize(c) == 0); /* a second finalize: nothing */
  late_starts_v5(c, NULL);
  /* a communicator made after: records as ever (it takes the finalized context's memory) */
  void *d = fu_init(0xa2);
  fu_op(d);
  CHECK(ncclProfiler_v5.finalize(d) == 0);
  CHECK_EQ_U(records(dir, 0xa1), 1);
  CHECK_EQ_U(records(dir, 0xa2), 1);
  CHECK_EQ_U(fu_warns, 0);
  return g_fail;
}

static int case_start_after_finalize_v6(const char *dir) {
  void *c = NULL;
  CHECK(ncclProfiler_v6.init(&c, 0x6a, &fu_mask, "v6", 1, 2, 0, fu_logger) == 0 && c);
  static const uint64_t types[] = {PROF_EV_GROUP, PROF_EV_GROUP_API, PROF_EV_COLL_API,
                                   PROF_EV_COLL, PROF_EV_CE_COLL, PROF_EV_KERNEL_CH};
  for (int late = 0; late < 2; late++) {
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
      struct prof_descr_v6 d;
      memset(&d, 0, sizeof d);
      d.type = types[i];
      if (types[i] == PROF_EV_COLL)
        d.coll.func = "AllReduce", d.coll.datatype = "ncclFloat32", d.coll.count = 262144,
        d.coll.nChannels = 1, d.coll.seqNumber = 7;
      if (types[i] == PROF_EV_CE_COLL)
        d.ceColl.func = "AllGather", d.ceColl.datatype = "ncclInt8", d.ceColl.count = 1 << 20,
        d.ceColl.seqNumber = 8;
      if (types[i] == PROF_EV_COLL_API) d.collApi.func = "AllReduce";
      void *h = NULL;
      CHECK(ncclProfiler_v6.startEvent(c, &h, &d) == 0);
      if (late) CHECK(h == NULL);
      if (h && types[i] == PROF_EV_COLL) { /* live: one channel, then the op's stop */
        struct prof_descr_v6 k;
        memset(&k, 0, sizeof k);
        k.type = PROF_EV_KERNEL_CH, k.parentObj = h, k.kernelCh.pTimer = 1000000;
        void *ch = NULL;
        CHECK(ncclProfiler_v6.startEvent(c, &ch, &k) == 0 && ch);
        union prof_state_args a = {.kernelCh = {.pTimer = 1012000}};
        CHECK(ncclProfiler_v6.recordEventState(ch, PROF_STATE_KERNEL_CH_STOP, &a) == 0);
        CHECK(ncclProfiler_v6.stopEvent(ch) == 0);
      }
      CHECK(ncclProfiler_v6.stopEvent(h) == 0);
    }
    if (!late) CHECK(ncclProfiler_v6.finalize(c) == 0);
  }
  CHECK(ncclProfiler_v6.finalize(c) == 0);
  CHECK_EQ_U(records(dir, 0x6a), 1); /* the AllReduce before the finalize (the CE one is not timed) */
  CHECK_EQ_U(fu_warns, 0);
  return g_fail;
}

static int case_late_kernel_events(const char *dir) {
  void *c = fu_init(0xb1);
  /* an op that says 1 channel and starts 3 (RCCL's nChannels can be uninitialised): it
   * completes at its first channel's stop, and the others (5, 6) stay started; the pool
   * hands its memory to the next op, which uses channels 0 and 1. Their two late stops
   * would take that op's count of 2 outstanding events to 0 and complete it, freed */
  oo_group(c);
  struct prof_descr_v5 a = coll(0, 1);
  void *opa = NULL;
  CHECK(ncclProfiler_v5.startEvent(c, &opa, &a) == 0 && opa);
  void *a0 = kernel_start(c, opa, 0, 900000), *a1 = kernel_start(c, opa, 5, 900100),
       *a2 = kernel_start(c, opa, 6, 900200);
  CHECK(a0 && a1 && a2);
  CHECK(record_stop(a0, 912000) == 0);
  CHECK(record_stop(a1, 912100) == 0);
  CHECK(record_stop(a2, 912200) == 0);
  CHECK(ncclProfiler_v5.stopEvent(a0) == 0);
  CHECK(ncclProfiler_v5.stopEvent(opa) == 0); /* complete (a1 not stopped): recorded */
  /* an op in flight at the finalize */
  oo_group(c);
  struct prof_descr_v5 d = coll(1, 2);
  void *op = NULL;
  CHECK(ncclProfiler_v5.startEvent(c, &op, &d) == 0 && op);
  CHECK(op == opa); /* the first op's memory (so a1 is a stale channel of this op) */
  void *ch0 = kernel_start(c, op, 0, 1000000), *ch1 = kernel_start(c, op, 1, 1000100);
  CHECK(ch0 && ch1);
  CHECK(record_stop(ch0, 1012000) == 0);
  CHECK(ncclProfiler_v5.stopEvent(ch0) == 0);
  CHECK(ncclProfiler_v5.finalize(c) == 0); /* channel 1 and the op's stop still to come */
  CHECK_EQ_U(records(dir, 0xb1), 1);
  CHECK(ncclProfiler_v5.stopEvent(a1) == 0); /* the first op's channels, late twice over */
  CHECK(ncclProfiler_v5.stopEvent(a2) == 0);
  CHECK(record_stop(a1, 912100) == 0);
  CHECK(ncclProfiler_v5.stopEvent(a1) == 0);
  CHECK(record_stop(ch1, 1012100) == 0);
  CHECK(ncclProfiler_v5.stopEvent(ch1) == 0);
  CHECK(ncclProfiler_v5.stopEvent(op) == 0);
  CHECK(record_stop(ch0, 1012000) == 0);
  CHECK(ncclProfiler_v5.stopEvent(ch0) == 0);
  CHECK(kernel_start(c, op, 2, 1000200) == NULL); /* a channel of the finalized op */
  late_starts_v5(c, op);
  CHECK_EQ_U(ins_op_refused_handles(), 0); /* the plugin's own handles, finalized: not foreign */
  /* a communicator made after writes its own record only */
  void *e = fu_init(0xb2);
  fu_op(e);
  CHECK(ncclProfiler_v5.finalize(e) == 0);
  CHECK_EQ_U(records(dir, 0xb1), 1);
  CHECK_EQ_U(records(dir, 0xb2), 1);
  CHECK_EQ_U(fu_warns, 0);
  return g_fail;
}

/* memory of the test's own: n bytes, 64-byte aligned, filled with `fill` */
static unsigned char *buffer(size_t n, int fill) {
  unsigned char *b = aligned_alloc(64, n);
  if (b) memset(b, fill, n);
  return b;
}

/* The "coll_exec_time_ns" of communicator id's only record, or -1. */
static long long exec_ns(const char *dir, uint64_t id) {
  char path[4096], line[16384], suffix[48], idpat[48];
  snprintf(suffix, sizeof suffix, "-pid%ld.log", (long)getpid());
  snprintf(idpat, sizeof idpat, "\"id\":\"0x%llx\"", (unsigned long long)id);
  long long v = -1;
  DIR *dd = opendir(dir);
  for (struct dirent *e; dd && (e = readdir(dd));) {
    size_t l = strlen(e->d_name), sl = strlen(suffix);
    if (l < sl || strcmp(e->d_name + l - sl, suffix)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
      const char *p = strstr(line, "\"coll_exec_time_ns\":");
      if (p && strstr(line, idpat)) v = strtoll(p + strlen("\"coll_exec_time_ns\":"), NULL, 10);
    }
    if (f) fclose(f);
  }
  if (dd) closedir(dd);
  return v;
}

/* A live op on one channel; then stopEvent and recordEventState on each of the n foreign
 * handles h (into memory of the test's own, mem[i] of len[i] bytes; with copy_live, first
 * filled with the live channel's 64 bytes, or for odd i the live op's first 64): each
 * refused, its memory untouched; then the live op is recorded with its own time, and the
 * next finalize says how many were refused, once. */
static int foreign(const char *dir, unsigned char *const *mem, void *const *h, const size_t *len,
                   int n, int copy_live, const char *told) {
  void *c = fu_init(0xc1);
  oo_group(c);
  struct prof_descr_v5 d = coll(1, 1);
  void *op = NULL;
  CHECK(ncclProfiler_v5.startEvent(c, &op, &d) == 0 && op);
  void *ch = kernel_start(c, op, 0, 2000000);
  CHECK(ch != NULL);
  if (!op || !ch) return 1;
  unsigned char *copy[8];
  for (int i = 0; i < n && copy_live; i++) memcpy(h[i], i % 2 ? op : ch, 64);
  for (int i = 0; i < n; i++) {
    copy[i] = malloc(len[i]);
    if (!copy[i]) return 1;
    memcpy(copy[i], mem[i], len[i]);
  }
  for (int i = 0; i < n; i++) {
    CHECK(record_stop(h[i], 2015000) == 0);
    CHECK(ncclProfiler_v5.stopEvent(h[i]) == 0);
    if (memcmp(mem[i], copy[i], len[i])) fprintf(stderr, "foreign handle %d: its memory was written\n", i);
    CHECK(memcmp(mem[i], copy[i], len[i]) == 0);
    free(copy[i]);
  }
  CHECK_EQ_U(ins_op_refused_handles(), 2 * n); /* a record and a stop each */
  /* the live op, unharmed: its record has its own time */
  CHECK(record_stop(ch, 2012345) == 0);
  CHECK(ncclProfiler_v5.stopEvent(ch) == 0);
  CHECK(ncclProfiler_v5.stopEvent(op) == 0);
  CHECK_EQ_U(fu_warns, 0); /* nothing said from a callback */
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  CHECK_EQ_U(records(dir, 0xc1), 1);
  CHECK_EQ_U(exec_ns(dir, 0xc1), 12345);
  CHECK_EQ_U(fu_warns, 1);
  CHECK(strstr(fu_last_warn, told) != NULL);
  /* told once */
  CHECK(ncclProfiler_v5.stopEvent(h[0]) == 0);
  void *e = fu_init(0xc2);
  CHECK(ncclProfiler_v5.finalize(e) == 0);
  CHECK_EQ_U(fu_warns, 1);
  return g_fail;
}

/* A live channel's bytes and a live op's first 64, copied to addresses 8 bytes past a
 * cache line: their tags are the plugin's own, their addresses never are. */
static int case_foreign_misaligned(const char *dir) {
  unsigned char *mem[2] = {buffer(128, 0), buffer(128, 0)};
  if (!mem[0] || !mem[1]) return 1;
  void *h[2] = {mem[0] + 8, mem[1] + 8};
  static const size_t len[2] = {128, 128};
  int failed = foreign(dir, mem, h, len, 2, 1, "4 stopEvent/recordEventState calls");
  free(mem[0]), free(mem[1]);
  return failed;
}

/* Aligned memory starting with the one-byte tags of the layout before 4-byte tags (a
 * channel's 0xA2, an op's 0xA1; then zeros), and with 0x55 bytes. */
static int case_foreign_aligned(const char *dir) {
  unsigned char *mem[3] = {buffer(64, 0), buffer(64, 0), buffer(64, 0x55)};
  if (!mem[0] || !mem[1] || !mem[2]) return 1;
  mem[0][0] = 0xA2;
  mem[1][0] = 0xA1;
  void *h[3] = {mem[0], mem[1], mem[2]};
  static const size_t len[3] = {64, 64, 64};
  int failed = foreign(dir, mem, h, len, 3, 0, "6 stopEvent/recordEventState calls");
  free(mem[0]), free(mem[1]), free(mem[2]);
  return failed;
}

static int case_retired_contexts_reused(const char *dir) {
  void *first = NULL;
  int same = 0;
  for (uint64_t i = 0; i < 200; i++) {
    void *c = fu_init(0x1000 + i);
    if (!first) first = c;
    same += c == first;
    fu_op(c);
    CHECK(ncclProfiler_v5.finalize(c) == 0);
  }
  CHECK_EQ_U(same, 200);
  CHECK_EQ_U(ins_comm_retired_count(), 1);
  void *seen[3] = {NULL, NULL, NULL};
  int foreign = 0;
  for (uint64_t r = 0; r < 50; r++) {
    void *c[3];
    for (int k = 0; k < 3; k++) {
      c[k] = fu_init(0x2000 + 3 * r + (uint64_t)k);
      int known = 0;
      for (int s = 0; s < 3; s++) {
        if (!seen[s]) {
          seen[s] = c[k];
          known = 1;
          break;
        }
        if (seen[s] == c[k]) {
          known = 1;
          break;
        }
      }
      foreign += !known; /* a fourth context: memory beyond the peak of three live */
    }
    for (int k = 0; k < 3; k++) fu_op(c[k]);
    for (int k = 0; k < 3; k++) CHECK(ncclProfiler_v5.finalize(c[k]) == 0);
  }
  CHECK_EQ_U(foreign, 0);
  CHECK_EQ_U(ins_comm_retired_count(), 3);
  CHECK(seen[0] == first);
  CHECK_EQ_U(records(dir, 0x1000), 1);
  CHECK_EQ_U(records(dir, 0x1000 + 199), 1);
  CHECK_EQ_U(records(dir, 0x2000 + 149), 1);
  return g_fail;
}

int main(void) {
  (void)fu_child_ok, (void)fu_log_files;
  fu_case("start_after_finalize", case_start_after_finalize);
  fu_case("start_after_finalize_v6", case_start_after_finalize_v6);
  fu_case("late_kernel_events", case_late_kernel_events);
  fu_case("foreign_misaligned", case_foreign_misaligned);
  fu_case("foreign_aligned", case_foreign_aligned);
  fu_case("retired_contexts_reused", case_retired_contexts_reused);
  return check_report("test_abi_misuse");
}

// SPDX-License-Identifier: Apache-2.0
// truth_driver.cu - NCCL traffic with CUPTI's kernel times beside it: the ground truth
// that tools/validate/truth/compare.py judges the profiler plugin's records against.
//
//   truth_driver OUTDIR WORKLOAD ITERS BYTES [SYNC_EVERY]
//
// One process drives every rank (ncclCommInitAll over TRUTH_DEVICES, "0,0" by default:
// two ranks on one GPU, which NCCL 2.30+ allows with NCCL_MULTI_RANK_GPU_ENABLE=1; "0,1"
// for two GPUs). Each op is one ncclGroupStart/End over all ranks, so it is one kernel on
// each rank's stream, and the k-th kernel on a rank's stream is that rank's k-th op.
// WORKLOAD, a comma list; every iteration issues an AllReduce of BYTES, and
//   p2p: every 4th iteration first a Send/Recv ring (rank r to r+1) of BYTES/4
//   bc:  every 5th, a Broadcast of BYTES from rank 0
//   ag:  every 7th, an AllGather of BYTES/nranks per rank
//   ddp: a data-parallel training step instead: a compute kernel (truth_compute, 300 us)
//        on each rank's stream, then the gradient buckets as separate AllReduces: 2 of
//        BYTES and 8 of BYTES/64 (PyTorch DDP's 25 MiB buckets cut by layer width), the
//        host running ahead until SYNC_EVERY makes it wait (the optimizer step)
// SYNC_EVERY N > 0: the host waits for the GPU after every N iterations (0: never, the
// host runs as far ahead as CUDA lets it). TRUTH_SLEEP_US: a sleep after each such wait.
//
// Writes into OUTDIR:
//   kernels.csv  stream,start_ns,end_ns,name  (CUPTI's clock) for every kernel
//   ops.csv      rank,k,name,bytes  the ops in the order each rank issued them
//   clock.csv    rank,gpu_ns  the %globaltimer read by each clock-marker kernel on the
//                rank's stream, in launch order (before, among and after the ops); with
//                the markers' CUPTI starts it gives globaltimer - CUPTI per GPU over time
// Markers: a kernel truth_rank<R> opens rank R's stream (which stream is whose),
// and truth_clock kernels, synchronised one by one, measure the clock offset.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      fprintf(stderr, "truth_driver: %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)
#define NK(x)                                                                               \
  do {                                                                                      \
    ncclResult_t r_ = (x);                                                                  \
    if (r_ != ncclSuccess) {                                                                \
      fprintf(stderr, "truth_driver: %s:%d: %s\n", __FILE__, __LINE__, ncclGetErrorString(r_)); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

// CUPTI's kernel record changes name with its version: the build picks one (run.sh).
#ifndef KERNEL_RECORD_VERSION
#define KERNEL_RECORD_VERSION 9
#endif
#define KREC2(v) CUpti_ActivityKernel##v
#define KREC1(v) KREC2(v)
typedef KREC1(KERNEL_RECORD_VERSION) kernel_record;

#define MAX_RANKS 8
#define CLOCK_SAMPLES 16 /* clock marks before the ops, and after */
#define CLOCK_EVERY 25   /* iterations between clock marks among the ops */

static FILE *g_kernels;

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
  *size = 16u << 20;
  *buf = (uint8_t *)aligned_alloc(8, *size);
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
  (void)ctx, (void)stream, (void)size;
  CUpti_Activity *rec = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS)
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const kernel_record *k = (const kernel_record *)rec;
      fprintf(g_kernels, "%u,%llu,%llu,%s\n", k->streamId, (unsigned long long)k->start,
              (unsigned long long)k->end, k->name);
    }
  free(buf);
}

__global__ void truth_clock(unsigned long long *out) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  *out = t;
}
// A training step's compute: the GPU busy for `us` microseconds.
__global__ void truth_compute(unsigned us) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - t0 < 1000ull * us);
}
// One marker kernel per rank, each its own name (CUPTI records names, not arguments).
template <int R> __global__ void truth_rank() {}
static void mark_rank(int r, cudaStream_t s) {
  switch (r) {
    case 0: truth_rank<0><<<1, 1, 0, s>>>(); break;
    case 1: truth_rank<1><<<1, 1, 0, s>>>(); break;
    case 2: truth_rank<2><<<1, 1, 0, s>>>(); break;
    case 3: truth_rank<3><<<1, 1, 0, s>>>(); break;
    case 4: truth_rank<4><<<1, 1, 0, s>>>(); break;
    case 5: truth_rank<5><<<1, 1, 0, s>>>(); break;
    case 6: truth_rank<6><<<1, 1, 0, s>>>(); break;
    default: truth_rank<7><<<1, 1, 0, s>>>(); break;
  }
}

struct ops_log {
  FILE *f;
  int k[MAX_RANKS];
};

static void log_op(struct ops_log *L, int nranks, const char *name, size_t bytes) {
  for (int r = 0; r < nranks; r++) fprintf(L->f, "%d,%d,%s,%zu\n", r, L->k[r]++, name, bytes);
}

static FILE *open_out(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  return f;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: truth_driver OUTDIR WORKLOAD ITERS BYTES [SYNC_EVERY]\n");
    return 2;
  }
  const char *out = argv[1], *wl = argv[2];
  int iters = atoi(argv[3]);
  size_t bytes = strtoull(argv[4], NULL, 0);
  int sync_every = argc > 5 ? atoi(argv[5]) : 0;
  int sleep_us = getenv("TRUTH_SLEEP_US") ? atoi(getenv("TRUTH_SLEEP_US")) : 0;
  int devs[MAX_RANKS], nranks = 0;
  const char *dl = getenv("TRUTH_DEVICES") ? getenv("TRUTH_DEVICES") : "0,0";
  for (const char *p = dl; *p && nranks < MAX_RANKS; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
    devs[nranks++] = atoi(p);
  bool p2p = strstr(wl, "p2p"), bc = strstr(wl, "bc"), ag = strstr(wl, "ag"), ddp = strstr(wl, "ddp");

  g_kernels = open_out(out, "kernels.csv");
  struct ops_log L = {open_out(out, "ops.csv"), {0}};
  FILE *clk = open_out(out, "clock.csv");
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    fprintf(stderr, "truth_driver: CUPTI kernel activity is not available\n");
    return 1;
  }

  ncclComm_t comm[MAX_RANKS];
  NK(ncclCommInitAll(comm, nranks, devs));
  cudaStream_t s[MAX_RANKS];
  float *sb[MAX_RANKS], *rb[MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    CK(cudaSetDevice(devs[r]));
    CK(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking));
    CK(cudaMalloc(&sb[r], bytes * nranks + 4096));
    CK(cudaMalloc(&rb[r], bytes * nranks + 4096));
    CK(cudaMemset(sb[r], 0, bytes * nranks + 4096));
    mark_rank(r, s[r]);
  }
  // The clock: globaltimer read in kernels that CUPTI times, on every rank's stream (each
  // GPU has its own timer): a few before the ops, then one every CLOCK_EVERY iterations
  // among them (CUPTI's clock drifts from the GPU's by microseconds over a run; compare.py
  // interpolates between these), then a few after.
  int max_marks = 2 * CLOCK_SAMPLES + iters / CLOCK_EVERY + 2, nmarks = 0;
  unsigned long long *gt[MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    CK(cudaSetDevice(devs[r]));
    CK(cudaMalloc(&gt[r], max_marks * sizeof **gt));
  }
#define CLOCK_MARK()                                                        \
  do {                                                                      \
    for (int r = 0; r < nranks; r++) truth_clock<<<1, 1, 0, s[r]>>>(gt[r] + nmarks); \
    nmarks++;                                                               \
  } while (0)
  for (int i = 0; i < CLOCK_SAMPLES; i++) {
    CLOCK_MARK();
    for (int r = 0; r < nranks; r++) CK(cudaStreamSynchronize(s[r]));
    usleep(200);
  }
  for (int r = 0; r < nranks; r++) CK(cudaStreamSynchronize(s[r]));

  size_t cnt = bytes / sizeof(float);
#define OP(NAME, B, BODY)                                     \
  do {                                                        \
    NK(ncclGroupStart());                                     \
    for (int r = 0; r < nranks; r++) { BODY; }                \
    NK(ncclGroupEnd());                                       \
    log_op(&L, nranks, NAME, (B));                            \
  } while (0)
  // Warm-up, one op at a time: connections are made, and these ops are right by any rule.
  for (int i = 0; i < 4; i++) {
    OP("AllReduce", bytes, NK(ncclAllReduce(sb[r], rb[r], cnt, ncclFloat, ncclSum, comm[r], s[r])));
    for (int r = 0; r < nranks; r++) CK(cudaStreamSynchronize(s[r]));
  }
  for (int it = 0; it < iters; it++) {
    if (ddp) {
      for (int r = 0; r < nranks; r++) {
        CK(cudaSetDevice(devs[r]));
        truth_compute<<<1, 1, 0, s[r]>>>(300);
      }
      for (int b = 0; b < 10; b++) {
        size_t bb = b < 2 ? bytes : bytes / 64;
        OP("AllReduce", bb, NK(ncclAllReduce(sb[r], rb[r], bb / sizeof(float), ncclFloat, ncclSum, comm[r], s[r])));
      }
    } else {
      if (p2p && it % 4 == 0)
        OP("SendRecv", bytes / 4, {
          NK(ncclSend(sb[r], cnt / 4, ncclFloat, (r + 1) % nranks, comm[r], s[r]));
          NK(ncclRecv(rb[r], cnt / 4, ncclFloat, (r + nranks - 1) % nranks, comm[r], s[r]));
        });
      if (bc && it % 5 == 2)
        OP("Broadcast", bytes, NK(ncclBroadcast(sb[r], rb[r], cnt, ncclFloat, 0, comm[r], s[r])));
      if (ag && it % 7 == 3)
        OP("AllGather", bytes / nranks,
           NK(ncclAllGather(sb[r], rb[r], cnt / nranks, ncclFloat, comm[r], s[r])));
      OP("AllReduce", bytes, NK(ncclAllReduce(sb[r], rb[r], cnt, ncclFloat, ncclSum, comm[r], s[r])));
    }
    if ((it + 1) % CLOCK_EVERY == 0) CLOCK_MARK();
    if (sync_every > 0 && (it + 1) % sync_every == 0) {
      for (int r = 0; r < nranks; r++) CK(cudaStreamSynchronize(s[r]));
      if (sleep_us) usleep(sleep_us);
    }
  }
  for (int r = 0; r < nranks; r++) CK(cudaStreamSynchronize(s[r]));
  for (int i = 0; i < CLOCK_SAMPLES; i++) {
    CLOCK_MARK();
    for (int r = 0; r < nranks; r++) CK(cudaStreamSynchronize(s[r]));
    usleep(200);
  }
  for (int r = 0; r < nranks; r++) {
    unsigned long long *v = (unsigned long long *)calloc(nmarks, sizeof *v);
    CK(cudaSetDevice(devs[r]));
    CK(cudaMemcpy(v, gt[r], nmarks * sizeof *v, cudaMemcpyDeviceToHost));
    for (int i = 0; i < nmarks; i++) fprintf(clk, "%d,%llu\n", r, v[i]);
    free(v);
  }
  for (int r = 0; r < nranks; r++) NK(ncclCommDestroy(comm[r]));
  cuptiActivityFlushAll(1);
  fclose(g_kernels);
  fclose(L.f);
  fclose(clk);
  return 0;
}

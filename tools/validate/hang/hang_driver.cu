// SPDX-License-Identifier: Apache-2.0
// hang_driver.cu - a real stuck collective on a GPU, for hang detection's validation.
//
//   hang_driver SCENARIO HOLD_S [LATE_S]
//
// One process drives every rank (ncclCommInitAll over HANG_DEVICES, "0,0,0,0" by default:
// four ranks on GPU 0, which NCCL 2.30+ allows with NCCL_MULTI_RANK_GPU_ENABLE=1). After a
// warm-up (4 AllReduce, 2 AllGather, a Send/Recv ring each way, all ranks), the scenario:
//   coll: AllReduce #5 is issued by ranks 0..n-3, whose kernels start and wait for the
//         others ("waiting"); rank n-2 issues it behind a gate kernel that spins on host
//         memory, so its AllReduce kernel never starts ("queued"); rank n-1 never issues it
//         ("missing"). After HOLD_S seconds the gate is opened and every communicator is
//         aborted (ncclCommAbort, one thread per rank, so that all abort flags rise together).
//   late: as coll, but at LATE_S seconds the gate opens and rank n-1 issues the AllReduce:
//         the op completes on every rank (the plugin then writes hang_resolved); after
//         HOLD_S the communicators are destroyed normally.
//   p2p:  rank 0 posts a Recv from rank 1 that never sends (rank 1 and the others issue
//         nothing more); after HOLD_S every communicator is aborted.
// Prints "stuck <t_wall_us>" when the stuck op has been issued, then "released"/"aborted"
// and "done", so that a script can take copies of the logs while the job hangs.
#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "hang_driver: %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)
#define NK(x)                                                                                  \
  do {                                                                                         \
    ncclResult_t r_ = (x);                                                                     \
    if (r_ != ncclSuccess) {                                                                   \
      fprintf(stderr, "hang_driver: %s:%d: %s\n", __FILE__, __LINE__, ncclGetErrorString(r_)); \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

#define MAX_RANKS 8

// Holds a stream until the host writes a non-zero value into *gate (mapped host memory).
__global__ void hang_gate(volatile int *gate) {
  while (*gate == 0) __nanosleep(100000);
}

static long long now_us(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec * 1000000LL + tv.tv_usec;
}

static ncclComm_t g_comm[MAX_RANKS];
static void *abort_one(void *arg) {
  ncclCommAbort(g_comm[(long)arg]);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: hang_driver coll|late|p2p HOLD_S [LATE_S]\n");
    return 2;
  }
  const char *sc = argv[1];
  double hold = atof(argv[2]), late = argc > 3 ? atof(argv[3]) : hold / 2;
  int devs[MAX_RANKS], n = 0;
  const char *dl = getenv("HANG_DEVICES") ? getenv("HANG_DEVICES") : "0,0,0,0";
  for (const char *p = dl; *p && n < MAX_RANKS; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
    devs[n++] = atoi(p);
  if (n < 3) {
    fprintf(stderr, "hang_driver: needs at least 3 ranks\n");
    return 2;
  }
  NK(ncclCommInitAll(g_comm, n, devs));
  cudaStream_t s[MAX_RANKS];
  float *sb[MAX_RANKS], *rb[MAX_RANKS];
  const size_t bytes = 4 << 20, cnt = bytes / sizeof(float);
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(devs[r]));
    CK(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking));
    CK(cudaMalloc(&sb[r], bytes));
    CK(cudaMalloc(&rb[r], bytes));
    CK(cudaMemset(sb[r], 0, bytes));
  }
  int *gate_h, *gate_d;
  CK(cudaHostAlloc(&gate_h, sizeof *gate_h, cudaHostAllocMapped));
  *gate_h = 0;
  CK(cudaHostGetDevicePointer(&gate_d, gate_h, 0));

  for (int i = 0; i < 6; i++) {
    NK(ncclGroupStart());
    for (int r = 0; r < n; r++)
      if (i == 2 || i == 4)
        NK(ncclAllGather(sb[r], rb[r], cnt / n, ncclFloat, g_comm[r], s[r]));
      else
        NK(ncclAllReduce(sb[r], rb[r], cnt, ncclFloat, ncclSum, g_comm[r], s[r]));
    NK(ncclGroupEnd());
    for (int r = 0; r < n; r++) CK(cudaStreamSynchronize(s[r]));
  }
  // P2P connections are made on first use, by both peers at once: a Send/Recv ring each way
  // makes rank 0's from rank 1 now, so that the stuck Recv below does not wait in ncclGroupEnd.
  for (int dir = 1; dir <= n - 1; dir += n - 2) {
    NK(ncclGroupStart());
    for (int r = 0; r < n; r++) {
      NK(ncclSend(sb[r], cnt / 4, ncclFloat, (r + dir) % n, g_comm[r], s[r]));
      NK(ncclRecv(rb[r], cnt / 4, ncclFloat, (r + n - dir) % n, g_comm[r], s[r]));
    }
    NK(ncclGroupEnd());
    for (int r = 0; r < n; r++) CK(cudaStreamSynchronize(s[r]));
  }
  printf("warm-up done: 4 AllReduce, 2 AllGather, 2 Send/Recv rings on %d ranks\n", n);

  const bool p2p = !strcmp(sc, "p2p"), is_late = !strcmp(sc, "late");
  if (p2p) {
    NK(ncclGroupStart());
    NK(ncclRecv(rb[0], cnt, ncclFloat, 1, g_comm[0], s[0]));
    NK(ncclGroupEnd());
    printf("stuck p2p Recv rank 0 <- rank 1 (Send never posted) %lld\n", now_us());
  } else {
    CK(cudaSetDevice(devs[n - 2]));
    hang_gate<<<1, 1, 0, s[n - 2]>>>(gate_d);
    CK(cudaGetLastError());
    NK(ncclGroupStart());
    for (int r = 0; r < n - 1; r++)
      NK(ncclAllReduce(sb[r], rb[r], cnt, ncclFloat, ncclSum, g_comm[r], s[r]));
    NK(ncclGroupEnd());
    printf("stuck coll AllReduce #5: waiting ranks 0-%d, queued rank %d, missing rank %d %lld\n",
           n - 3, n - 2, n - 1, now_us());
  }
  fflush(stdout);
  if (is_late) {
    usleep((useconds_t)(late * 1e6));
    *(volatile int *)gate_h = 1;
    NK(ncclAllReduce(sb[n - 1], rb[n - 1], cnt, ncclFloat, ncclSum, g_comm[n - 1], s[n - 1]));
    for (int r = 0; r < n; r++) CK(cudaStreamSynchronize(s[r]));
    printf("released: rank %d issued it late, every rank completed it %lld\n", n - 1, now_us());
    fflush(stdout);
    usleep((useconds_t)((hold > late ? hold - late : 0) * 1e6));
    for (int r = 0; r < n; r++) NK(ncclCommDestroy(g_comm[r]));
  } else {
    usleep((useconds_t)(hold * 1e6));
    *(volatile int *)gate_h = 1;
    pthread_t t[MAX_RANKS];
    for (long r = 0; r < n; r++) pthread_create(&t[r], NULL, abort_one, (void *)r);
    for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
    printf("aborted every communicator %lld\n", now_us());
  }
  printf("done\n");
  return 0;
}

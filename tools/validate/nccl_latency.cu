// SPDX-License-Identifier: Apache-2.0
// nccl_latency.cu - small-message AllReduce latency measured as nccl-tests does, with no
// framework in the way: one process drives every GPU (ncclCommInitAll); each iteration is one
// ncclAllReduce per GPU inside a group; N iterations between two CUDA events on GPU 0's
// stream give the per-op latency; the median of R repeats is printed as one JSON line per size:
//   {"label": L, "size": bytes, "us": median per-op latency, "reps": [...]}
// Built on the GPU machine only (tools/validate/run_on_gpus.sh), against the libnccl that
// PyTorch bundles: the plugin itself never needs CUDA or NCCL at build time.
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
#define NK(x) do { ncclResult_t r = (x); if (r != ncclSuccess) { fprintf(stderr, "%s: %s\n", #x, ncclGetErrorString(r)); exit(1); } } while (0)

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const char *label = argc > 1 ? argv[1] : "run";
  int n_iter = argc > 2 ? atoi(argv[2]) : 2000, reps = argc > 3 ? atoi(argv[3]) : 7;
  size_t sizes[] = {8, 1024, 65536};
  int ngpu;
  CK(cudaGetDeviceCount(&ngpu));
  ncclComm_t *comms = (ncclComm_t *)calloc(ngpu, sizeof *comms);
  cudaStream_t *st = (cudaStream_t *)calloc(ngpu, sizeof *st);
  float **buf = (float **)calloc(ngpu, sizeof *buf);
  for (int g = 0; g < ngpu; g++) {
    CK(cudaSetDevice(g));
    CK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
    CK(cudaMalloc((void **)&buf[g], 65536));
    CK(cudaMemset(buf[g], 0, 65536));
  }
  NK(ncclCommInitAll(comms, ngpu, NULL));
  cudaEvent_t e0, e1;
  CK(cudaSetDevice(0));
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    size_t count = sizes[s] / sizeof(float) ? sizes[s] / sizeof(float) : 1;
    double *r = (double *)calloc(reps, sizeof *r);
    for (int rep = -1; rep < reps; rep++) { // rep -1: warm-up
      int iters = rep < 0 ? 200 : n_iter;
      for (int g = 0; g < ngpu; g++) { CK(cudaSetDevice(g)); CK(cudaStreamSynchronize(st[g])); }
      CK(cudaSetDevice(0));
      CK(cudaEventRecord(e0, st[0]));
      for (int i = 0; i < iters; i++) {
        NK(ncclGroupStart());
        for (int g = 0; g < ngpu; g++)
          NK(ncclAllReduce(buf[g], buf[g], count, ncclFloat, ncclSum, comms[g], st[g]));
        NK(ncclGroupEnd());
      }
      CK(cudaSetDevice(0));
      CK(cudaEventRecord(e1, st[0]));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (rep >= 0) r[rep] = ms * 1000.0 / iters;
    }
    double *sorted = (double *)malloc(reps * sizeof *sorted);
    memcpy(sorted, r, reps * sizeof *sorted);
    qsort(sorted, reps, sizeof *sorted, cmp);
    printf("{\"label\": \"%s\", \"size\": %zu, \"us\": %.4f, \"reps\": [", label, sizes[s], sorted[reps / 2]);
    for (int i = 0; i < reps; i++) printf("%s%.4f", i ? ", " : "", r[i]);
    printf("]}\n");
    free(r);
    free(sorted);
  }
  for (int g = 0; g < ngpu; g++) ncclCommDestroy(comms[g]);
  return 0;
}

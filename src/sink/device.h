/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.h - which GPU a communicator context runs on, for the outputs that
 * are per device (Prometheus: one file per GPU).
 *
 * Asked once per context, at init, on the thread NCCL calls init from (the
 * thread that has the context's device current). With a GPU runtime in the
 * process (the CUDA driver for NCCL, HIP for RCCL; found with dlopen, never
 * loaded by us) the ordinal is the current device (cuCtxGetDevice /
 * hipGetDevice, so after CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES) and the
 * uuid its UUID as nvidia-smi prints it, "GPU-xxxxxxxx-xxxx-xxxx-xxxx-
 * xxxxxxxxxxxx" (cuDeviceGetUuid_v2 / hipDeviceGetUuid, bytes in hex).
 *
 * Fallback (no GPU runtime: replay, tests, or a runtime that cannot be
 * loaded): the ordinal is the context's local rank under the usual block
 * layout, rank % (nranks / nnodes) when nnodes divides nranks, else rank;
 * the uuid is "nodev-<hostname>-pid<pid>-gpu<ordinal>". The pid keeps two
 * processes on one host from sharing a file name; the ordinal keeps the
 * ranks of a process driving several GPUs apart, and distinguishes the
 * processes of a one-process-per-GPU job on the world communicator. A
 * sub-communicator whose ranks are not numbered like the world's can map a
 * GPU to another ordinal: that is the limit of guessing without a runtime.
 */
#ifndef INS_DEVICE_H
#define INS_DEVICE_H

#include <stdint.h>

struct ins_device_id {
  char uuid[160]; /* only [A-Za-z0-9._-]: it is part of a file name */
  int ordinal;
};

/* Fill *d for a context of rank `rank` of a communicator of nranks ranks on nnodes nodes. */
void ins_device_identify(struct ins_device_id *d, const char *hostname, int rank, int nranks,
                         int nnodes);
/* The wall-clock rate (kHz) HIP reports for the current device when the HIP runtime is
 * in the process (RCCL's kernel timer: core/timer.h); 0 without HIP. Init thread only. */
uint32_t ins_device_timer_rate_khz(void);
/* Library unload: the GPU runtime's handles, taken with RTLD_NOLOAD, given back (each
 * holds a reference; a plugin loaded and unloaded again must not add one per load). */
void ins_device_release(void);
/* The fallback ordinal alone (exposed for unit tests). */
int ins_device_fallback_ordinal(int rank, int nranks, int nnodes);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * synth.h - synthetic traffic for the benchmark.
 *
 * Owns: a small, fixed model of what NCCL sends for one communicator: per
 * operation a Group start, an AllReduce start, the Group and AllReduce stops
 * (the host side returns before the GPU), then per channel a KernelCh start,
 * its kernel-stop record with the GPU timer, and its stop. Sizes cycle from
 * 8 KiB (Inspector's default minimum) to 8 MiB, so every op is recorded.
 * Built as a tools/replay trace, it is compiled like a fixture (prog.h).
 */
#ifndef BP_SYNTH_H
#define BP_SYNTH_H

#include <stdint.h>

struct rp_trace;

/* A trace of one communicator (init, nops operations, finalize) on ABI v5. */
void bp_synth_trace(struct rp_trace *t, uint64_t comm_id, int nops, int nchannels);

/* Callbacks one synthetic operation makes: Group, Coll, and 3 per channel, starts and stops. */
static inline int bp_synth_calls_per_op(int nchannels) { return 4 + 3 * nchannels; }

#endif

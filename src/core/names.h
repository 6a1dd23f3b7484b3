/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.h - what NCCL's name strings mean to us: operation kinds, datatype
 * sizes, and the nccl-tests bus-bandwidth factors.
 *
 * NCCL passes the same constant string pointers over and over, so lookups
 * go through a small lock-free cache keyed by pointer; a miss (first sight
 * of a pointer) falls back to string comparison. NULL and unknown strings
 * are legal: unknown datatype has size 0, unknown function is INS_FUNC_OTHER.
 */
#ifndef INS_NAMES_H
#define INS_NAMES_H

#include <stdint.h>

enum ins_func {
  INS_FUNC_OTHER = 0,
  INS_FUNC_ALLREDUCE,
  INS_FUNC_ALLGATHER,
  INS_FUNC_REDUCESCATTER,
  INS_FUNC_BROADCAST,
  INS_FUNC_REDUCE,
  INS_FUNC_ALLTOALL,
  INS_FUNC_ALLGATHERV,
  INS_FUNC_SEND,
  INS_FUNC_RECV,
  INS_FUNC_COUNT
};

/* NCCL's name of a function id ("other" for INS_FUNC_OTHER). */
extern const char *const ins_func_name[INS_FUNC_COUNT];
/* Function id of an NCCL function name (e.g. "AllReduce"); NULL -> OTHER. */
enum ins_func ins_func_id(const char *name);
/* Size in bytes of an NCCL datatype name (e.g. "ncclFloat32"); 0 if unknown. */
unsigned ins_datatype_size(const char *name);

/* Bytes the bandwidth is computed on: AllGather/ReduceScatter move count x n. */
uint64_t ins_bw_bytes(enum ins_func f, uint64_t msg_bytes, int nranks);
/* nccl-tests bus-bandwidth factor for an operation on n ranks. */
double ins_busbw_factor(enum ins_func f, int nranks);

#endif

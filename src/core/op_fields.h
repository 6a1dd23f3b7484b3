/* SPDX-License-Identifier: Apache-2.0 */
/*
 * op_fields.h - how the tracker's files (op.c, op_group.c) read and write a communicator's
 * fields that only its application thread writes. Nothing else includes it.
 */
#ifndef INS_OP_FIELDS_H
#define INS_OP_FIELDS_H

#include <stdatomic.h>

/* Relaxed loads and stores of a field only the application thread of the communicator
 * writes (NCCL lets one thread at a time use a communicator): no read-modify-write. */
#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

#endif

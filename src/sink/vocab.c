/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vocab.c - the message-size bucket the outputs share (see vocab.h).
 */
#include "sink/vocab.h"

#include <stdio.h>

void ins_vocab_size_bucket(uint64_t bytes, char *out, size_t cap) {
  static const char *const unit[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (u < 6 && (bytes >> (10 * (u + 1))) != 0) u++;
  uint64_t lo = bytes >> (10 * u);
  snprintf(out, cap, "%llu-%llu%s", (unsigned long long)lo, (unsigned long long)lo + 1, unit[u]);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abi.c - what each ABI version can carry (see abi.h). Lines of a type the
 * driven version lacks are skipped, as that NCCL would never produce them.
 */
#include "abi.h"

bool rp_abi_has_type(int ver, uint32_t type) {
  switch (type) {
  case RP_EV_GROUP: case RP_EV_COLL: case RP_EV_P2P: case RP_EV_PROXY_OP:
  case RP_EV_PROXY_STEP: case RP_EV_PROXY_CTRL: case RP_EV_KERNEL_CH: case RP_EV_NET_PLUGIN:
    return true;
  case RP_EV_GROUP_API: case RP_EV_COLL_API: case RP_EV_P2P_API: case RP_EV_KERNEL_LAUNCH:
    return ver >= 5;
  case RP_EV_CE_COLL: case RP_EV_CE_SYNC: case RP_EV_CE_BATCH:
    return ver >= 6;
  default:
    return false;
  }
}

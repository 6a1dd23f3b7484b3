/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nccl/profiler_abi.h - our own declarations of the NCCL/RCCL profiler-plugin
 * ABI, versions 4, 5 and 6, written from the facts of the ABI (layouts,
 * semantics, what NCCL sends), never from a vendor header.
 *
 * Owns: the binary layout NCCL expects of the exported plugin table and of
 * the event descriptors it hands us. Nothing here has behaviour, and it
 * includes only the C library: src/nccl/ is the ground floor, below every
 * layer, so any of them may read it (core/log.h for the logger's type,
 * core/sampler.c for the activation mask's bits). The per-version adapters
 * (abi/adapter_v4.c, abi/adapter_v5.c, abi/adapter_v6.c) translate these
 * layouts into calls on the tracker (core/op.h) and the sampler
 * (core/sampler.h), through the dispatch they share (abi/adapter.h).
 *
 * Field order and types matter: NCCL reads and writes these structs by
 * layout, with natural C alignment. Do not reorder.
 */
#ifndef INS_PROFILER_ABI_H
#define INS_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ncclResult_t is a C int; 0 is success. */
typedef int prof_result_t;
#define PROF_SUCCESS 0

/* The logger NCCL hands to init (v4+). */
typedef void (*prof_logger_t)(int level, unsigned long flags, const char *file,
                              int line, const char *fmt, ...);

enum prof_log_level {
  PROF_LOG_NONE = 0,
  PROF_LOG_VERSION = 1,
  PROF_LOG_WARN = 2,
  PROF_LOG_INFO = 3,
  PROF_LOG_ABORT = 4,
  PROF_LOG_TRACE = 5
};
#define PROF_SUBSYS_INIT 1UL
#define PROF_SUBSYS_ENV 128UL
#define PROF_SUBSYS_PROFILE 16384UL

/* Event types: bits of a descriptor's type and of the activation mask. */
enum prof_event_type {
  PROF_EV_GROUP = 1,
  PROF_EV_COLL = 2,
  PROF_EV_P2P = 4,
  PROF_EV_PROXY_OP = 8,
  PROF_EV_PROXY_STEP = 16,
  PROF_EV_PROXY_CTRL = 32,
  PROF_EV_KERNEL_CH = 64,
  PROF_EV_NET_PLUGIN = 128,
  PROF_EV_GROUP_API = 256,
  PROF_EV_COLL_API = 512,
  PROF_EV_P2P_API = 1024,
  PROF_EV_KERNEL_LAUNCH = 2048,
  PROF_EV_CE_COLL = 4096,  /* v6 only */
  PROF_EV_CE_SYNC = 8192,  /* v6 only */
  PROF_EV_CE_BATCH = 16384 /* v6 only */
};

/* Event states passed to recordEventState that we act on. */
enum prof_event_state {
  PROF_STATE_KERNEL_CH_STOP = 22,    /* args->kernelCh.pTimer = stop time */
  PROF_STATE_GROUP_START_API_STOP = 23, /* v5+ */
  PROF_STATE_GROUP_END_API_START = 24   /* v5+ */
};

/* ---- descriptor unions, member by member -------------------------------- */

struct prof_coll_v4 {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char *algo;
  const char *proto;
};

struct prof_coll_v5 {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char *algo;
  const char *proto;
  void *parentGroup;
};

struct prof_p2p_v4 {
  const char *func;
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};

struct prof_p2p_v5 {
  const char *func;
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void *parentGroup;
};

struct prof_proxy_op {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};

struct prof_proxy_step {
  int step;
};

struct prof_kernel_ch {
  uint8_t channelId;
  uint64_t pTimer;
};

struct prof_net_plugin {
  int64_t id;
  void *data;
};

struct prof_group_api {
  bool graphCaptured;
  int groupDepth;
};

struct prof_coll_api {
  const char *func;
  size_t count;
  const char *datatype;
  int root;
  void *stream;
  bool graphCaptured;
};

struct prof_p2p_api {
  const char *func;
  size_t count;
  const char *datatype;
  void *stream;
  bool graphCaptured;
};

struct prof_kernel_launch {
  void *stream;
};

struct prof_ce_coll {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  const char *syncStrategy;
  bool intraBatchSync;
  uint32_t batchSize;
  uint32_t numBatches;
  uint32_t ceSeqNum;
  void *stream;
};

struct prof_ce_sync {
  bool isComplete;
  int nRanks;
};

struct prof_ce_batch {
  int numOps;
  size_t totalBytes;
  bool useIntraSync;
};

/* ---- event descriptors --------------------------------------------------- */

struct prof_descr_v4 {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct prof_coll_v4 coll;
    struct prof_p2p_v4 p2p;
    struct prof_proxy_op proxyOp;
    struct prof_proxy_step proxyStep;
    struct prof_kernel_ch kernelCh;
    struct prof_net_plugin netPlugin;
  };
};

struct prof_descr_v5 {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    struct prof_group_api groupApi;
    struct prof_coll_api collApi;
    struct prof_p2p_api p2pApi;
    struct prof_kernel_launch kernelLaunch;
    struct prof_coll_v5 coll;
    struct prof_p2p_v5 p2p;
    struct prof_proxy_op proxyOp;
    struct prof_proxy_step proxyStep;
    struct prof_kernel_ch kernelCh;
    struct prof_net_plugin netPlugin;
  };
};

struct prof_descr_v6 {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    struct prof_group_api groupApi;
    struct prof_coll_api collApi;
    struct prof_p2p_api p2pApi;
    struct prof_kernel_launch kernelLaunch;
    struct prof_coll_v5 coll;
    struct prof_p2p_v5 p2p;
    struct prof_proxy_op proxyOp;
    struct prof_proxy_step proxyStep;
    struct prof_kernel_ch kernelCh;
    struct prof_net_plugin netPlugin;
    struct prof_ce_coll ceColl;
    struct prof_ce_sync ceCollSync;
    struct prof_ce_batch ceCollBatch;
  };
};

/* v5 and v6 descriptor d: the address of the parentGroup field of a Coll or P2p
 * (they sit at different offsets), NULL for any other event type. */
#define PROF_PARENT_GROUP_SLOT(d)                                 \
  ((d)->type == PROF_EV_COLL  ? &(d)->coll.parentGroup            \
   : (d)->type == PROF_EV_P2P ? &(d)->p2p.parentGroup : (void **)0)

/* State arguments (same shape in v4, v5 and v6). */
union prof_state_args {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void *data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

/* ---- the exported tables ------------------------------------------------- */

struct prof_table_v4 {
  const char *name;
  prof_result_t (*init)(void **context, int *eActivationMask,
                        const char *commName, uint64_t commHash, int nNodes,
                        int nranks, int rank, prof_logger_t logfn);
  prof_result_t (*startEvent)(void *context, void **eHandle,
                              struct prof_descr_v4 *eDescr);
  prof_result_t (*stopEvent)(void *eHandle);
  prof_result_t (*recordEventState)(void *eHandle, int eState,
                                    union prof_state_args *eStateArgs);
  prof_result_t (*finalize)(void *context);
};

struct prof_table_v5 {
  const char *name;
  prof_result_t (*init)(void **context, uint64_t commId, int *eActivationMask,
                        const char *commName, int nNodes, int nranks, int rank,
                        prof_logger_t logfn);
  prof_result_t (*startEvent)(void *context, void **eHandle,
                              struct prof_descr_v5 *eDescr);
  prof_result_t (*stopEvent)(void *eHandle);
  prof_result_t (*recordEventState)(void *eHandle, int eState,
                                    union prof_state_args *eStateArgs);
  prof_result_t (*finalize)(void *context);
};

struct prof_table_v6 {
  const char *name;
  prof_result_t (*init)(void **context, uint64_t commId, int *eActivationMask,
                        const char *commName, int nNodes, int nranks, int rank,
                        prof_logger_t logfn);
  prof_result_t (*startEvent)(void *context, void **eHandle,
                              struct prof_descr_v6 *eDescr);
  prof_result_t (*stopEvent)(void *eHandle);
  prof_result_t (*recordEventState)(void *eHandle, int eState,
                                    union prof_state_args *eStateArgs);
  prof_result_t (*finalize)(void *context);
};

#endif /* INS_PROFILER_ABI_H */

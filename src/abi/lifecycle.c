/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lifecycle.c - the wiring: what happens once per process (configuration,
 * the version message, trace mode, the sampler, the dump thread and its
 * sinks, the exit flush) and once per communicator (init: a context, its
 * sinks, the activation mask; finalize: write everything it completed, then
 * free it). The one place that knows every layer; each layer knows only
 * those below it (abi/ above trace/ and sink/, sink/ above core/:
 * docs/ARCHITECTURE.md).
 */
#include "abi/lifecycle.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/op.h"
#include "core/sampler.h"
#include "sink/dump.h"
#include "trace/trace.h"

#ifndef INSPECTOR_VERSION
#define INSPECTOR_VERSION "0.0.0"
#endif
#ifndef INSPECTOR_GIT_REV
#define INSPECTOR_GIT_REV "unknown"
#endif

static struct ins_config g_cfg;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_once_t g_exit_once = PTHREAD_ONCE_INIT; /* exit_register */
static atomic_int g_exited;                            /* exit_flush has run */
static void exit_register(void);
static atomic_int g_first_abi;
static atomic_int g_live; /* tracked contexts not yet finalized */

/* What the plugin asks NCCL for when an op is to be timed; through ABI v6, copy-engine
 * collectives too (host events only, no kernel: cheap; without them such a collective
 * is only an API call NCCL never reported). */
static int full_mask(void) {
  return PROF_EV_COLL | PROF_EV_KERNEL_CH | (g_cfg.enable_p2p ? PROF_EV_P2P : 0) |
         (atomic_load(&g_first_abi) >= 6 ? PROF_EV_CE_COLL : 0);
}

static pid_t g_pid; /* the process that started the threads */
static atomic_bool g_forked; /* a child forked from the job: its threads start at its first init */

/*
 * fork() (pthread_atfork, registered at process init). Every plugin lock a plugin thread
 * (or a callback, briefly) may hold is taken before the fork, in the order the work
 * takes them, all within one bound (INS_FORK_WAIT_MS): the dump layer's and the sinks'
 * (sink/dump.c, "fork()"), the sampler's time thread's, trace mode's memory lock. So the
 * child inherits none held. The child has none of the plugin's threads; the dump layer
 * restarts its own at the child's first communicator, and so does this file the
 * sampler's and the trace's (child_start), after which the child is a process of its
 * own: its exit writes what its communicators left, as any process's does.
 */
static void fork_prepare(void) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += INS_FORK_WAIT_MS / 1000;
  until.tv_nsec += (long)(INS_FORK_WAIT_MS % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  ins_dump_fork_prepare(&until);
  ins_sampler_fork_prepare(&until);
  ins_trace_fork_prepare(&until);
}

static void fork_parent(void) {
  ins_trace_fork_parent();
  ins_sampler_fork_parent();
  ins_dump_fork_parent();
}

static void fork_child(void) {
  ins_trace_fork_child();
  ins_sampler_fork_child();
  ins_dump_fork_child();
  atomic_store(&g_forked, true);
}

/* A forked child's first communicator of its own: its threads, and its exit's flush. */
static void child_start(void) {
#if !defined(__SANITIZE_THREAD__)
  /* Not under ThreadSanitizer: it still counts the parent's threads as live in the child,
   * and joining a child's thread whose pthread_t reuses a parent's (glibc reuses their
   * stacks) stops the process ("dup thread with used id"). There the child's exit writes
   * nothing, as before; its finalizes do. */
  g_pid = getpid();
#endif
  ins_sampler_fork_restart();
  if (g_cfg.trace_dir[0]) ins_trace_fork_restart(g_cfg.trace_dir, g_cfg.hostname);
}

static void process_init(void) {
  g_pid = getpid();
  ins_config_load(&g_cfg);
  int abi = atomic_load(&g_first_abi);
  if (!g_cfg.enable) {
    /* NCCL loaded us because the job named the plugin, yet NCCL_INSPECTOR_ENABLE is not set:
     * a job that expected records would end with none and no word why, so a notice
     * (core/log.h). Set to 0 it is off on purpose (a site that names the plugin for every
     * job), and malformed config.c's notice said so: information. */
    const char *en = getenv("NCCL_INSPECTOR_ENABLE");
    if (!en || !*en)
      ins_notice(NULL, NULL, "Inspector %s is loaded (profiler ABI v%d) but records nothing: "
                 "NCCL_INSPECTOR_ENABLE is not set. Set NCCL_INSPECTOR_ENABLE=1 to record, or =0 "
                 "to keep it off without this line", INSPECTOR_VERSION, abi);
    else
      ins_info("Inspector %s (git %s), profiler ABI v%d: inactive (set NCCL_INSPECTOR_ENABLE=1 to record)",
               INSPECTOR_VERSION, INSPECTOR_GIT_REV, abi);
    return;
  }
  char desc[1024 + PATH_MAX];
  ins_config_describe(&g_cfg, desc, sizeof desc);
  ins_info("Inspector %s (git %s) loaded through profiler ABI v%d: %s", INSPECTOR_VERSION,
           INSPECTOR_GIT_REV, abi, desc);
  if (g_cfg.trace_dir[0]) ins_trace_open(g_cfg.trace_dir, g_cfg.hostname);
  ins_sampler_start(&g_cfg, full_mask(), abi);
  ins_dump_start(&g_cfg);
  /* A child forked from the job holds no plugin lock, leaves the parent's records to the
   * parent, and records its own communicators (above, fork_prepare). */
  if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
    ins_warn("cannot register the fork handlers: a process forked from this one may hang if it "
             "creates a communicator");
}

prof_result_t ins_lifecycle_comm_init(void **context, uint64_t comm_id, int *activation_mask,
                              const char *comm_name, int nnodes, int nranks, int rank,
                              prof_logger_t logger, int abi_version) {
  if (context) *context = NULL;
  ins_log_set_logger(logger);
  int none = 0;
  atomic_compare_exchange_strong(&g_first_abi, &none, abi_version);
  pthread_once(&g_once, process_init);
  pthread_once(&g_exit_once, exit_register); /* after process_init: see exit_register */
  if (!g_cfg.enable || !context) {
    /* Inert: ask for nothing, explicitly (NCCL's starting value need not be 0). */
    if (activation_mask) __atomic_store_n(activation_mask, 0, __ATOMIC_RELAXED);
    return PROF_SUCCESS;
  }

  if (atomic_exchange(&g_forked, false)) child_start();
  struct ins_comm *c = ins_comm_create(&g_cfg, comm_id, comm_name, nnodes, nranks, rank);
  if (!c) return PROF_SUCCESS;
  /* Here, on the init thread, where the context's GPU is current; before the dump
   * thread can see the context. */
  if (ins_dump_attach(c) != 0) {
    ins_warn("out of memory attaching communicator 0x%llx rank %d to its outputs: not tracked",
             (unsigned long long)comm_id, rank);
    ins_comm_retire(c); /* not freed: it may have been another communicator's (core/comm.h) */
    return PROF_SUCCESS;
  }
  if (ins_registry_add(c) != 0) { /* out of memory (it warned): undone, untracked */
    ins_dump_comm_final(c);
    ins_comm_retire(c);
    return PROF_SUCCESS;
  }
  /* NCCL re-reads this word atomically at every group start: with sampling on,
   * the sampler keeps rewriting it, until this communicator's finalize. */
  c->ext_mask = ins_sampler_attach(activation_mask);
  if (ins_tracing())
    c->ext_trace = (void *)(intptr_t)ins_trace_init(comm_id, comm_name, nnodes, nranks, rank,
                                  activation_mask ? __atomic_load_n(activation_mask, __ATOMIC_RELAXED) : full_mask(), abi_version);
  *context = c;
  atomic_fetch_add(&g_live, 1);
  ins_log_set_logger(logger); /* again: a finalize racing with us may have just dropped it */
  ins_info("tracking communicator 0x%llx '%s' rank %d of %d (%d node%s)",
           (unsigned long long)comm_id, c->name, rank, nranks, nnodes, nnodes == 1 ? "" : "s");
  return PROF_SUCCESS;
}

/* Handles refused that the plugin never gave (core/op.h): NCCL never passes one, so a
 * host that does has a bug its author should hear of, once; told at a finalize, where
 * the plugin may log (a callback never does). */
static void warn_refused_handles(void) {
  static atomic_int warned;
  uint64_t n = ins_op_refused_handles();
  if (n)
    ins_warn_once(&warned, "%llu stopEvent/recordEventState calls named handles this plugin never "
                  "gave (misaligned, or not tagged as its own): ignored. The host breaks NCCL's "
                  "profiler ABI (docs/reference.md, \"Security and failure behaviour\")",
                  (unsigned long long)n);
}

prof_result_t ins_lifecycle_comm_finalize(void *context) {
  struct ins_comm *c = context;
  if (!c || ins_comm_retired(c)) return PROF_SUCCESS; /* a second finalize: core/comm.h */
  if (ins_tracing()) ins_trace_finalize((int)(intptr_t)c->ext_trace);
  ins_registry_remove(c); /* O(1), waits for no dump pass (sink/dump.c, "A pass") */
  uint64_t incomplete = 0;
  ins_op_finish_all_at_teardown(c, &incomplete);
  ins_op_close_group(c);
  ins_dump_comm_final(c); /* says what left no record, and why (sink/dump.c) */
  if (incomplete)
    ins_info("communicator 0x%llx rank %d: %llu ops were still in flight at teardown and are not recorded",
             (unsigned long long)c->id, c->rank, (unsigned long long)incomplete);
  uint64_t late_rec = atomic_load(&c->overtaken_recorded);
  if (late_rec)
    ins_info("communicator 0x%llx rank %d: %llu ops never received every kernel event and were "
             "recorded from the channels they had when %d later ops had completed",
             (unsigned long long)c->id, c->rank, (unsigned long long)late_rec, INS_OVERTAKE_WINDOW);
  uint64_t odd_parent = atomic_load(&c->refused_parent);
  uint64_t odd_dup = atomic_load(&c->refused_dup);
  if (odd_parent || odd_dup)
    ins_info("communicator 0x%llx rank %d: kernel events refused: %llu whose parent was not an op "
             "in flight, %llu for a channel the op already had",
             (unsigned long long)c->id, c->rank, (unsigned long long)odd_parent,
             (unsigned long long)odd_dup);
  /* The host may free its activation-mask word once we return (core/sampler.h). */
  ins_sampler_detach(c->ext_mask);
  /* kept for late calls until an init reuses it; if a dump pass still holds it, the rest
   * at that pass's end (core/comm.h) */
  ins_comm_retire(c);
  warn_refused_handles();
  /* The last one: NCCL may tear down its logger from now on (core/log.c). */
  if (atomic_fetch_sub(&g_live, 1) == 1) ins_log_detach();
  return PROF_SUCCESS;
}

/* Process exit or library unload: nothing completed is lost. Once per load (g_exited),
 * from whichever comes first of the atexit handler and the destructor below. */
static void exit_flush(void) {
  /* A child forked from the job (without exec) that made no communicator of its own has
   * none of the parent's threads, and joining them would hang it; the records are the
   * parent's: nothing to do. One that did is g_pid from then on (child_start). */
  if (g_pid && getpid() != g_pid) return;
  if (atomic_exchange(&g_exited, 1)) return;
  ins_log_detach(); /* NCCL's logger may be gone already: stderr from here on */
  ins_sampler_shutdown();
  ins_dump_shutdown();
  if (ins_tracing()) ins_trace_flush();
}

/* glibc's atexit in a shared object, spelled out (C++'s ABI, which glibc implements):
 * a handler tied to this object by its __dso_handle. Called directly because a
 * sanitizer's atexit interceptor (TSan's) registers without the handle, for exit only:
 * after a dlclose it would call into unmapped code. */
extern void *__dso_handle __attribute__((visibility("hidden")));
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

static void exit_handler(void *arg) {
  (void)arg;
  exit_flush();
}

/*
 * With OTLP on, the exit flush runs from an atexit handler, not from the destructor
 * alone: its last export may need a new TLS handshake (https: libcurl and OpenSSL), and
 * OpenSSL frees its locks in its own atexit handler (OPENSSL_cleanup), which runs before
 * any destructor: an export from the destructor then crashed in RAND_status. atexit
 * handlers run in the reverse order of registration, and OpenSSL registers its handler
 * at its first initialisation: at the latest in curl_global_init, which the OTLP sink's
 * start ran in process_init (net/curl.c, on the init thread); a host that initialised
 * OpenSSL before us (Python's ssl module) registered it earlier still. So a handler
 * registered after process_init runs before OpenSSL's.
 *
 * A plugin that NCCL unloads (dlclose, after its last communicator): a handler registered
 * with __cxa_atexit and the object's handle (what glibc's atexit does in a shared object)
 * is run by dlclose after the object's destructors (__cxa_finalize), never later from
 * exit. So at unload the destructor does the flush (libcurl and OpenSSL are still whole:
 * the process is not exiting) and the handler finds it done; at exit the handler does
 * it, and the destructor finds it done and uses no library of the exiting process, only
 * frees.
 * Without OTLP nothing at exit needs another library: the destructor alone does it, as
 * ever (later, so that atexit handlers registered before us, such as C++ static
 * destructors finalizing communicators, still find the sinks there).
 */
static void exit_register(void) {
  if (g_cfg.enable && g_cfg.otlp_export && __cxa_atexit(exit_handler, NULL, &__dso_handle) != 0)
    ins_warn("cannot register the exit handler: the last OTLP export is made from the library's "
             "destructor, too late for https:// (OpenSSL may be gone)");
}

/* Process exit or library unload. Runs before the code is unmapped, so the threads are
 * joined here (or were, by the atexit handler); then what the writer and the device
 * lookup hold is released, so that a plugin loaded and unloaded again leaks nothing.
 * Trace mode's memory too, when no communicator is left (always at unload: NCCL unloads
 * the plugin with its last one): its buffers are written by callbacks, and the wrappers
 * NCCL was given may be named by any later one; at an exit with communicators alive,
 * callbacks may still come from other threads, and it stays. */
__attribute__((destructor)) static void process_exit(void) {
  if (g_pid && getpid() != g_pid) return; /* a forked child: see exit_flush */
  exit_flush();
  ins_dump_release();
  if (atomic_load(&g_live) == 0) ins_trace_release();
}

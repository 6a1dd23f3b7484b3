/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h - inspector-replay's command line (docs/CONTRACTS.md section 1).
 *
 * Owns: parsing and validating the options, the usage text, and the exit
 * status 2 for usage errors.
 */
#ifndef RP_CLI_H
#define RP_CLI_H

#include <stdbool.h>

#include "synth.h"

#define RP_ABI_NEWEST 0 /* default: the newest table the plugin exports */
#define RP_ABI_TRACE (-1) /* --abi trace: the ver of each trace's init lines */

struct rp_cli {
  const char *plugin; /* NULL: the default path */
  int abi;            /* 4, 5, 6, RP_ABI_NEWEST or RP_ABI_TRACE */
  bool threads, procs, quiet;
  int max_procs;      /* --max-procs N: children alive at once (0: procs.h's default) */
  bool logger_dies; /* --logger-dies (log.h) */
  int repeat;
  bool synthetic;
  struct syn_params syn;
  const char *truth; /* --truth FILE, or NULL */
  double hang_hold_s;         /* --hang-hold-s: the hold at the stuck point (stuck.h) */
  const char *hang_ready_dir; /* --hang-ready-dir DIR, or NULL */
  bool hold;                  /* the job stops at a stuck point: --hang-rank, or --hang-hold-s or
                                 --hang-ready-dir alone (a quiet job held at its end, stuck.h) */
  const char *mask_log; /* --mask-log FILE, or NULL */
  bool pace_recorded;   /* --pace-recorded (replay.h) */
  bool recorded_clock;  /* --recorded-clock (vclock.h) */
  const char **preload; /* --preload LIB..., in command-line order (npreload of them) */
  int npreload;
  char **traces;
  int ntraces;
};

/* Fills o from argv. Prints usage and exits 0 on --help; prints a message
   naming the bad option or value and exits 2 on a usage error. o->preload
   is allocated (argc entries): free it with rp_cli_free. */
void rp_cli_parse(int argc, char **argv, struct rp_cli *o);
void rp_cli_free(struct rp_cli *o);

#endif /* RP_CLI_H */

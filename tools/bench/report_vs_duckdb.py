#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report against DuckDB on the same logs, side by side in one run.

What a user would run instead of inspector-report is DuckDB (NVIDIA's exporter script uses
it): tools/bench/duckdb_aggregate.mjs does the same aggregation (count, median and p95 time,
median busbw per communicator, op, size, rank and P2P peer) with the schema given, DuckDB's
fastest way to read these logs. inspector-report does that and everything else it does (clock
alignment, lateness, links, changes). Both read the same files, alternately, RUNS times each,
on each thread count asked; the medians of wall time and of CPU time (user + system, every
thread), MB/s per core and their ratio are printed, with each one's peak memory. MB/s per core
is MB over CPU seconds: on a machine that others share, wall time measures the others' load as
much as the program (the wall figures are printed too). DuckDB's times are its query's alone
(node's start-up left out); inspector-report's are its whole process's.

    tools/bench/report_vs_duckdb.py [--build build-bench] [--runs 5] [--threads 1,N]
                                    [--shape mixed|all-pairs|ring|nodes|collectives] [--ranks R]
                                    [--mb 200] [--logs DIR] [--report BIN] [--baseline BIN]

Traffic shapes (logs written by the plugin through inspector-replay --synthetic --procs, one
log per rank, 8 ranks per node, 64 KiB ops; every log a different process: the report reads
each log once, so copies would not make more work for it):
  mixed        8 ranks, collectives and a P2P ring, 1 KiB to 64 MiB, iterations until --mb
  all-pairs    R ranks, every rank exchanging with every other once (--p2p-pattern all,
               R - 1 exchanges), an AllReduce per exchange
  ring         R ranks, each exchanging with rank +-1, R - 1 times, an AllReduce each time
  nodes        the same with the same local rank on the next and previous node
  collectives  R ranks, 2 x (R - 1) AllReduce, no P2P
--logs DIR reads logs already there (written by an earlier run: BUILD/bench-logs-SHAPE-R);
--report BIN times another inspector-report (an earlier build, say) on them; --baseline BIN
times one more, alternately with the two (before and after a change, against the same DuckDB
runs).

Needs node and npm (DuckDB 1.x's @duckdb/node-api is installed into BUILD/duckdb on first
use) and a Release build of inspector-replay, the plugin and inspector-report in BUILD.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def logs_mb(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / 1e6


def replay(build, d, args):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    env = dict(os.environ, NCCL_INSPECTOR_ENABLE="1", NCCL_INSPECTOR_DUMP_DIR=d,
               NCCL_INSPECTOR_DUMP_COLL_RING_SIZE="65536", NCCL_INSPECTOR_DUMP_P2P_RING_SIZE="65536")
    sh([os.path.join(build, "bin", "inspector-replay"), "--plugin",
        os.path.join(build, "lib", "libnccl-profiler-inspector.so"), "--synthetic", "--procs", "--quiet"] + args,
       env=env)


def shape_args(shape, ranks):
    nodes = ["--ranks", str(ranks), "--nodes", str(max(1, ranks // 8)), "--sizes", "64K:64K"]
    n = str(ranks - 1)
    if shape == "all-pairs":
        return nodes + ["--iters", n, "--colls", "AllReduce", "--p2p", "--p2p-pattern", "all"]
    if shape == "ring":
        return nodes + ["--iters", n, "--colls", "AllReduce", "--p2p"]
    if shape == "nodes":
        return nodes + ["--iters", n, "--colls", "AllReduce", "--p2p", "--p2p-pattern", "nodes"]
    if shape == "collectives":
        return nodes + ["--iters", str(2 * (ranks - 1)), "--colls", "AllReduce"]
    raise SystemExit("unknown shape %s" % shape)


def make_logs(build, shape, ranks, mb):
    if shape != "mixed":
        d = os.path.join(build, "bench-logs-%s-%d" % (shape, ranks))
        if not os.path.isdir(d) or not os.listdir(d):
            replay(build, d, shape_args(shape, ranks))
        return d
    # 8 ranks, collectives and P2P, 1 KiB to 64 MiB: more iterations until ~mb MB (copies of
    # the logs would be skipped as duplicates, and read by DuckDB only)
    d = os.path.join(build, "bench-logs")
    if os.path.isdir(d) and os.listdir(d) and logs_mb(d) >= mb:
        return d
    base = ["--ranks", "8", "--p2p"]
    replay(build, d, base + ["--iters", "300"])
    iters = int(300 * mb / logs_mb(d)) + 1
    replay(build, d, base + ["--iters", str(iters)])
    return d


def duckdb(build):
    d = os.path.join(build, "duckdb")
    if not os.path.isdir(os.path.join(d, "node_modules", "@duckdb", "node-api")):
        os.makedirs(d, exist_ok=True)
        sh(["npm", "install", "--silent", "--prefix", d, "@duckdb/node-api"])
    shutil.copy(os.path.join(ROOT, "tools", "bench", "duckdb_aggregate.mjs"), d)
    return os.path.join(d, "duckdb_aggregate.mjs")


def timed(cmd, own_clock=False):
    """(wall s, CPU s, peak MB) of one run: the process's, or, with own_clock, the wall and CPU
    times it prints (DuckDB's query alone, without node's start-up)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    t = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit("%s exited with %d" % (cmd[0], os.waitstatus_to_exitcode(status)))
    if own_clock:
        f = out.split()
        return float(f[0]), float(f[2]), ru.ru_maxrss / 1024.0
    return t, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--shape", default="mixed", choices=["mixed", "all-pairs", "ring", "nodes", "collectives"])
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--threads", help="comma-separated thread counts (default: 1 and every CPU)")
    ap.add_argument("--logs", help="read the logs in this directory (written by an earlier run)")
    ap.add_argument("--report", help="the inspector-report to time (default: BUILD's)")
    ap.add_argument("--baseline", help="another inspector-report (an earlier build), timed alternately "
                    "with the two: a change's gain against the same DuckDB runs")
    a = ap.parse_args()
    logs = a.logs or make_logs(a.build, a.shape, a.ranks, a.mb)
    mjs = duckdb(a.build)
    report = a.report or os.path.join(a.build, "bin", "inspector-report")
    mb = logs_mb(logs)
    ncpu = os.cpu_count() or 1
    threads = sorted({int(t) for t in a.threads.split(",")}) if a.threads else sorted({1, ncpu})
    print("%s: %d files, %.0f MB of logs; %d runs each, alternating; %d CPUs" % (
        logs, len(os.listdir(logs)), mb, a.runs, ncpu))
    for t in threads:
        duck, rep, base = [], [], []
        for _ in range(a.runs):
            duck.append(timed(["node", mjs, logs, str(t)], own_clock=True))
            rep.append(timed([report, "--threads", str(t), logs]))
            if a.baseline:
                base.append(timed([a.baseline, "--threads", str(t), logs]))
        dw, dc = statistics.median(x[0] for x in duck), statistics.median(x[1] for x in duck)
        rw, rc = statistics.median(x[0] for x in rep), statistics.median(x[1] for x in rep)
        print("%d thread%s: DuckDB %.3f s wall, %.3f s CPU (%.0f MB/s per core, %.0f MB peak); inspector-report "
              "%.3f s wall, %.3f s CPU (%.0f MB/s per core, %.0f MB peak): inspector-report at %.2fx DuckDB's "
              "speed per core (%.2fx in wall time)" % (
                  t, "" if t == 1 else "s", dw, dc, mb / dc, max(x[2] for x in duck), rw, rc, mb / rc,
                  max(x[2] for x in rep), dc / rc, dw / rw))
        if base:
            bw, bc = statistics.median(x[0] for x in base), statistics.median(x[1] for x in base)
            print("%d thread%s: baseline %.3f s wall, %.3f s CPU (%.0f MB/s per core, %.0f MB peak): %.2fx "
                  "DuckDB's speed per core; inspector-report at %.2fx the baseline's" % (
                      t, "" if t == 1 else "s", bw, bc, mb / bc, max(x[2] for x in base), dc / bc, bc / rc))


if __name__ == "__main__":
    sys.exit(main())

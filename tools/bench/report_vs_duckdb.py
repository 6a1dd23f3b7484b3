#!/usr/bin/env python3
"""inspector-report against DuckDB on the same logs, side by side in one run.

What a user would run instead of inspector-report is DuckDB (NVIDIA's exporter script uses
it): tools/bench/duckdb_aggregate.mjs does the same aggregation (count, median and p95 time,
median busbw per communicator, op and size) with the schema given, DuckDB's fastest way to read
these logs. inspector-report does that and everything else it does (clock alignment, lateness,
links, changes). Both read the same files, alternately, RUNS times each, on 1 thread and on every
CPU; the medians and their ratio are printed, with each one's peak memory. DuckDB's time is its
query's alone (node's start-up left out); inspector-report's is its whole process.

    tools/bench/report_vs_duckdb.py [--build build-bench] [--runs 5] [--mb 200]

Needs node and npm (DuckDB 1.x's @duckdb/node-api is installed into BUILD/duckdb on first
use) and a Release build of inspector-replay and inspector-report in BUILD.
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


def make_logs(build, mb):
    """A synthetic 8-rank job (collectives and P2P, 1 KiB to 64 MiB), copied until ~mb MB."""
    d = os.path.join(build, "bench-logs")
    if os.path.isdir(d) and sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) >= mb * 1e6:
        return d
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    env = dict(os.environ, NCCL_INSPECTOR_ENABLE="1", NCCL_INSPECTOR_DUMP_DIR=d,
               NCCL_INSPECTOR_DUMP_COLL_RING_SIZE="65536", NCCL_INSPECTOR_DUMP_P2P_RING_SIZE="65536")
    sh([os.path.join(build, "bin", "inspector-replay"), "--plugin",
        os.path.join(build, "lib", "libnccl-profiler-inspector.so"), "--synthetic", "--ranks", "8",
        "--procs", "--iters", "300", "--p2p", "--quiet"], env=env)
    logs = sorted(os.listdir(d))
    size = sum(os.path.getsize(os.path.join(d, f)) for f in logs)
    copies = 1
    while size * copies < mb * 1e6:
        for f in logs:
            shutil.copy(os.path.join(d, f), os.path.join(d, f[:-4] + "-copy%d.log" % copies))
        copies += 1
    return d


def duckdb(build):
    d = os.path.join(build, "duckdb")
    if not os.path.isdir(os.path.join(d, "node_modules", "@duckdb", "node-api")):
        os.makedirs(d, exist_ok=True)
        sh(["npm", "install", "--silent", "--prefix", d, "@duckdb/node-api"])
    shutil.copy(os.path.join(ROOT, "tools", "bench", "duckdb_aggregate.mjs"), d)
    return os.path.join(d, "duckdb_aggregate.mjs")


def timed(cmd, own_clock=False):
    """Seconds and peak memory (MB) of one run: wall time of the process, or, with own_clock,
    the time it prints first (DuckDB's query alone, without node's start-up)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    t = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit("%s exited with %d" % (cmd[0], os.waitstatus_to_exitcode(status)))
    return (float(out.split()[0]) if own_clock else t), ru.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mb", type=int, default=200)
    a = ap.parse_args()
    logs = make_logs(a.build, a.mb)
    mjs = duckdb(a.build)
    report = os.path.join(a.build, "bin", "inspector-report")
    mb = sum(os.path.getsize(os.path.join(logs, f)) for f in os.listdir(logs)) / 1e6
    ncpu = os.cpu_count() or 1
    print("%d files, %.0f MB of logs; %d runs each, alternating; %d CPUs" % (
        len(os.listdir(logs)), mb, a.runs, ncpu))
    for threads in sorted({1, ncpu}):
        duck, rep = [], []
        for _ in range(a.runs):
            duck.append(timed(["node", mjs, logs, str(threads)], own_clock=True))
            rep.append(timed([report, "--threads", str(threads), logs]))
        d = statistics.median(t for t, _ in duck)
        r = statistics.median(t for t, _ in rep)
        print("%d thread%s: DuckDB %.3f s (%.0f MB/s, %.0f MB peak), inspector-report %.3f s "
              "(%.0f MB/s, %.0f MB peak): inspector-report at %.2fx DuckDB's speed" % (
                  threads, "" if threads == 1 else "s", d, mb / d, max(m for _, m in duck), r,
                  mb / r, max(m for _, m in rep), d / r))


if __name__ == "__main__":
    sys.exit(main())

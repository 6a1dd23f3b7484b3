#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report on multi-node synthetic jobs with planted faults (inspector-replay
--synthetic --procs: one process per rank, hosts node-NNN, per-node GPU clock offsets), each
job's truth file saying what was planted; the report must name exactly what was planted and
nothing else:
  report_jobs.seeds-N-M   seeded runs N..M (20 in all over the four cases): 64 ranks on 8, 16
                          or 32 nodes, or 1,024 ranks on 64 or 128 nodes; per-node clock
                          offsets within +-5 ms; one late rank (200-800 us, jitter 50 us, other
                          ranks jittered by up to 5 us); one slow link between two neighbouring
                          nodes (P2P 4x slower). Checks: stragglers == [the planted rank, its
                          host], slow_links == [the planted node pair], no slow node; the clock
                          offsets found equal the planted ones up to one constant (within 2 us);
                          the residual is printed; records == truth lines
  report_jobs.clean       five seeds of the same jobs with nothing planted (offsets kept): no
                          straggler, no slow link or node, no change
  report_jobs.slow-node   both links of node 4 slow (--slow-link 3:4 --slow-link 4:5): the node
                          is named, not its two links
  report_jobs.degrade     ops interleaved over time (--order iters), transfers 3x slower from
                          the middle of the run on (--degrade 0.5:3): one CHANGE per group, at
                          the planted moment (within one time bin), busbw falling; no other
                          finding
"""
import json
import os
import random
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

SHAPES = [(64, 8), (64, 16), (64, 32), (1024, 128), (64, 8), (1024, 64), (64, 16), (64, 32)]


def report_json(a, path):
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    r = subprocess.run([exe, "--json", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300, universal_newlines=True)
    try:
        return r.returncode, json.loads(r.stdout), r.stderr
    except ValueError:
        return r.returncode, None, r.stdout + r.stderr


def plan(seed, faults=True):
    """The job of one seed: its replay arguments and what was planted."""
    rnd = random.Random(seed)
    ranks, nodes = SHAPES[seed % len(SHAPES)]
    p = {"ranks": ranks, "nodes": nodes, "late_rank": None, "late_us": None, "link": None}
    args = ["--ranks", str(ranks), "--nodes", str(nodes), "--seed", str(seed),
            "--colls", "AllReduce,AllGather", "--sizes", "1M:4M", "--iters", "4" if ranks > 64 else "6",
            "--p2p", "--p2p-pattern", "nodes", "--clock-offset-ms", "5"]
    if faults:
        p["late_rank"] = rnd.randrange(ranks)
        p["late_us"] = rnd.choice([200, 300, 500, 800])
        a = rnd.randrange(nodes)
        p["link"] = (a, (a + 1) % nodes)
        args += ["--late-rank", str(p["late_rank"]), "--late-us", str(p["late_us"]),
                 "--late-jitter-us", "50", "--slow-link", "%d:%d" % p["link"]]
    return args, p


def host(n):
    return "node-%03d" % n


def run_job(a, wd, args):
    os.makedirs(wd.dump)
    truth = os.path.join(wd.path, "truth.jsonl")
    cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=["--procs", "--quiet"] + args, truth=truth)
    r = harness.run(cmd, harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
    with open(truth) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    return r.rc, lines


def check_job(a, wd, seed, faults):
    args, p = plan(seed, faults)
    rc, truth = run_job(a, wd, args)
    problems = [] if rc == 0 else ["replay rc %s" % rc]
    rc, rep, err = report_json(a, wd.dump)
    if rc != 0 or rep is None:
        return ["report rc %d: %s" % (rc, err[-2000:])], ""
    if rep["inputs"]["records"] != len(truth):
        problems.append("%d records, truth has %d" % (rep["inputs"]["records"], len(truth)))
    got_s = [(s["rank"], s["hostname"]) for s in rep["stragglers"]]
    want_s = [] if p["late_rank"] is None else [
        (p["late_rank"], host(p["late_rank"] * p["nodes"] // p["ranks"]))]
    if got_s != want_s:
        problems.append("stragglers %s, planted %s" % (got_s, want_s))
    for s in rep["stragglers"]:
        if p["late_us"] and not (p["late_us"] - 10 <= s["median_late_us"] <= p["late_us"] + 60):
            problems.append("median lateness %.1f us, planted %d + U[0, 50]" % (
                s["median_late_us"], p["late_us"]))
    got_l = sorted(tuple(sorted((l["a"], l["b"]))) for l in rep["slow_links"])
    want_l = [] if p["link"] is None else [tuple(sorted(host(n) for n in p["link"]))]
    if got_l != want_l:
        problems.append("slow links %s, planted %s" % (got_l, want_l))
    if rep["slow_nodes"] or rep["changes"]:
        problems.append("unexpected: slow nodes %s, changes %s" % (rep["slow_nodes"], rep["changes"]))
    # clock offsets: found - planted is one constant for every process
    planted = {t["host"]: t["clock_offset_ns"] for t in truth}
    diffs = [c["offset_ns"] - planted[c["hostname"]] for c in rep["alignment"]["clocks"]]
    if not diffs or max(diffs) - min(diffs) > 2000:
        problems.append("offsets found - planted spread %.1f us" % (
            (max(diffs) - min(diffs)) / 1e3 if diffs else float("nan")))
    resid = rep["alignment"]["residual_p95_us"]
    summary = "seed %d: %d ranks / %d nodes, straggler %s, link %s, residual p95 %.2f us, offset " \
        "error spread %.2f us" % (seed, p["ranks"], p["nodes"], got_s, got_l, resid,
                                  (max(diffs) - min(diffs)) / 1e3 if diffs else -1)
    return problems, summary


def seeds_case(first, last):
    name = "report_jobs.seeds-%d-%d" % (first, last)

    def fn(a):
        out = []
        for seed in range(first, last + 1):
            with harness.Workdir(a.keep, "report-jobs") as wd:
                problems, summary = check_job(a, wd, seed, True)
                if problems:
                    wd.failed = True
                    return False, "FAIL %s: seed %d: %s" % (name, seed, "; ".join(problems))
                out.append(summary)
        return True, "OK %s:\n  %s" % (name, "\n  ".join(out))
    return harness.Case(name, fn, labels=["report"], timeout=300)


def clean_case():
    def fn(a):
        out = []
        for seed in range(101, 106):
            with harness.Workdir(a.keep, "report-jobs") as wd:
                problems, summary = check_job(a, wd, seed, False)
                if problems:
                    wd.failed = True
                    return False, "FAIL report_jobs.clean: seed %d: %s" % (seed, "; ".join(problems))
                out.append(summary)
        return True, "OK report_jobs.clean:\n  %s" % "\n  ".join(out)
    return harness.Case("report_jobs.clean", fn, labels=["report"], timeout=300)


def degrade_case():
    def fn(a):
        with harness.Workdir(a.keep, "report-jobs") as wd:
            args = ["--ranks", "4", "--colls", "AllReduce,AllGather", "--sizes", "4M:16M",
                    "--iters", "300", "--order", "iters", "--degrade", "0.5:3", "--seed", "4"]
            rc, truth = run_job(a, wd, args)
            rc2, rep, err = report_json(a, wd.dump)
            if rc or rc2 or rep is None:
                return False, "FAIL report_jobs.degrade: replay rc %s, report rc %s %s" % (rc, rc2, err)
            # the planted moment: the start of the first op at or after half the run, in run order
            ops = sorted({(t["start_ns"] - t.get("clock_offset_ns", 0), t["func"], t["sn"])
                          for t in truth if t["rank"] == 0})
            t_change = ops[(len(ops) + 1) // 2][0]
            problems = []
            groups = {(g["op"], g["bytes"]): g for c in rep["communicators"] for g in c["groups"]}
            found = {}
            for ch in rep["changes"]:
                found.setdefault((ch["op"], ch["bytes"]), []).append(ch)
            for key, g in sorted(groups.items()):
                chs = found.get(key, [])
                width = g["busbw_over_time"]["bin_ns"]
                if len(chs) != 1:
                    problems.append("%s: %d changes" % (key, len(chs)))
                    continue
                ch = chs[0]
                if abs(ch["t_ns"] - t_change) > 2 * width or not ch["after_gbs"] < ch["before_gbs"]:
                    problems.append("%s: change at %d (planted %d, bin %d ns) %.1f -> %.1f GB/s" % (
                        key, ch["t_ns"], t_change, width, ch["before_gbs"], ch["after_gbs"]))
            if rep["stragglers"] or rep["slow_links"]:
                problems.append("unexpected stragglers or links")
            if problems:
                wd.failed = True
                return False, "FAIL report_jobs.degrade: %s" % "; ".join(problems)
            return True, "OK report_jobs.degrade: %d groups, one change each at the planted moment" % \
                len(groups)
    return harness.Case("report_jobs.degrade", fn, labels=["report"], timeout=300)


def slow_node_case():
    def fn(a):
        with harness.Workdir(a.keep, "report-jobs") as wd:
            args = ["--ranks", "64", "--nodes", "8", "--seed", "8", "--colls", "AllReduce",
                    "--sizes", "1M:4M", "--iters", "6", "--p2p", "--p2p-pattern", "nodes",
                    "--clock-offset-ms", "5", "--slow-link", "3:4", "--slow-link", "4:5"]
            rc, truth = run_job(a, wd, args)
            rc2, rep, err = report_json(a, wd.dump)
            if rc or rc2 or rep is None:
                return False, "FAIL report_jobs.slow-node: replay rc %s, report rc %s %s" % (rc, rc2, err)
            nodes = [n["hostname"] for n in rep["slow_nodes"]]
            if nodes != ["node-004"] or rep["slow_links"] or rep["stragglers"]:
                wd.failed = True
                return False, "FAIL report_jobs.slow-node: slow nodes %s, links %s, stragglers %s" % (
                    nodes, rep["slow_links"], rep["stragglers"])
            return True, "OK report_jobs.slow-node: node-004 (both its links slow) named, not its links"
    return harness.Case("report_jobs.slow-node", fn, labels=["report"], timeout=120)


def cases():
    return [seeds_case(1, 5), seeds_case(6, 10), seeds_case(11, 15), seeds_case(16, 20),
            clean_case(), degrade_case(), slow_node_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

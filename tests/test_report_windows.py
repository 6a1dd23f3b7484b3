#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report's judgement over time, its P2P blame and its evidence (docs/report.md: "Late
ranks", "Slow links and slow nodes", "Evidence and confidence"), on synthetic jobs of 64 ranks on
8 nodes, one process per rank, per-node clock offsets within +-5 ms, several seeds each, planted
with inspector-replay's options (docs/CONTRACTS.md section 1); what was planted is read back from
the truth file, never from the generator's code:
  report_windows.model          the new planting options do what the contract says, in the truth
                                file: --late-fraction (whole iterations, their share), --late-from
                                (from op ceil(F x total) on), --late-in p2p (collectives on time),
                                --p2p-wait (a task ends at the later arrival + its transfer),
                                --p2p-comm (the exchange alone on its own communicator); their usage
                                errors exit 2 naming the option
  report_windows.intermittent   a rank late in a seeded 30% of the iterations (--late-fraction
                                0.3): named (it alone), late from the start, its late share within
                                0.10 of the share planted (the truth's), no link or node
  report_windows.onset          a rank late only from 0.5, 0.6 or 0.7 of the job on (--late-from):
                                named, not from the start, its onset within one window of the
                                planted moment, late in >= 90% of its collectives since
  report_windows.pipeline       a compute straggler (late in every op) whose pipeline Send/Recv run
                                on a communicator of their own and its peers wait for it
                                (--p2p-comm --p2p-wait): the rank named (on its collectives), no
                                link, no node
  report_windows.p2p-poster     a rank that posts its Send/Recv late, collectives on time (--late-in
                                p2p --p2p-wait): named as the rank (kind p2p), no link, no node
  report_windows.clean          the same jobs with nothing late (--p2p-wait, --p2p-comm, jitter):
                                no straggler, link, node, nor "not enough data"
  report_windows.few            6 collectives, a rank late in each: no STRAGGLER line, "not enough
                                data" with its counts (text and JSON)
  report_windows.many           240 collectives, a late rank and a slow link; a degrading job: each
                                finding states its evidence and a confidence (text, JSON, CSV)
"""
import collections
import csv
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

RANKS, NODES = 64, 8
BASE = ["--ranks", str(RANKS), "--nodes", str(NODES), "--clock-offset-ms", "5"]
LATE_US = 100.0  # the report's default --late-us


def host(rank):
    return "node-%03d" % (rank * NODES // RANKS)


def report(a, path, *extra):
    """(rc, JSON or None, text, stderr) of the report on path."""
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    r = subprocess.run([exe, "--json"] + list(extra) + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300, universal_newlines=True)
    t = subprocess.run([exe] + list(extra) + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300, universal_newlines=True)
    try:
        rep = json.loads(r.stdout)
    except ValueError:
        rep = None
    return r.returncode or t.returncode, rep, t.stdout, r.stderr + t.stderr


def run_job(a, wd, args, tag=""):
    """Replays a synthetic job (one process per rank) into its own dump; (rc, truth lines, dump)."""
    dump = os.path.join(wd.path, "dump" + tag)
    os.makedirs(dump)
    truth = os.path.join(wd.path, "truth%s.jsonl" % tag)
    cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=["--procs", "--quiet"] + BASE + args, truth=truth)
    r = harness.run(cmd, harness.make_env({}, dump_dir=dump), wd.cwd, a.timeout)
    lines = []
    if os.path.exists(truth):
        with open(truth) as f:
            lines = [json.loads(l) for l in f if l.strip()]
    return r.rc, lines, dump


def ops_of(truth):
    """The truth's ops in run order (section 3: lines come op by op): [[lines of one op]]; an
    exchange's Send and Recv lines are one op."""
    out, at = [], {}
    for t in truth:
        key = (t["comm"], "p2p" if t["kind"] == "p2p" else t["func"],
               t["sn"] - (1 if t["func"] == "Recv" else 0) if t["kind"] == "p2p" else t["sn"])
        if key not in at:
            at[key] = len(out)
            out.append([])
        out[at[key]].append(t)
    return out


def true_start(t):
    return t["start_ns"] - t["clock_offset_ns"]


def late_in(op, rank):
    """Whether rank arrived late to this op in the truth: its true start >= LATE_US after the
    median true start of the op's other ranks (Sends stand for a rank's arrival at an exchange)."""
    lines = [t for t in op if t["func"] != "Recv"]
    mine = [true_start(t) for t in lines if t["rank"] == rank]
    others = [true_start(t) for t in lines if t["rank"] != rank]
    return bool(mine) and mine[0] - statistics.median(others) >= LATE_US * 1000


def offset_shift(rep, truth):
    """C such that the report's aligned time = true time - C (offsets are found up to one constant)."""
    planted = {t["host"]: t["clock_offset_ns"] for t in truth}
    return statistics.median(c["offset_ns"] - planted[c["hostname"]] for c in rep["alignment"]["clocks"])


def named(rep):
    return sorted({(s["rank"], s["hostname"]) for s in rep["stragglers"]})


def no_links(rep):
    p = []
    if rep["slow_links"]:
        p.append("slow links %s" % [(l["a"], l["b"]) for l in rep["slow_links"]])
    if rep["slow_nodes"]:
        p.append("slow nodes %s" % [n["hostname"] for n in rep["slow_nodes"]])
    return p


def seeded(name, seeds, job, check, timeout=300):
    """A case: per seed, job(seed) -> (replay args, what was planted); check(rep, text, truth,
    planted) -> (problems, summary)."""
    def fn(a):
        out = []
        for seed in seeds:
            with harness.Workdir(a.keep, "report-windows") as wd:
                args, planted = job(seed)
                rc, truth, dump = run_job(a, wd, args)
                problems = [] if rc == 0 and truth else ["replay rc %s, %d truth lines" % (rc, len(truth))]
                rc, rep, text, err = report(a, dump)
                if rc != 0 or rep is None:
                    problems.append("report rc %d: %s" % (rc, err[-1500:]))
                else:
                    p, summary = check(rep, text, truth, planted)
                    problems += p
                if problems:
                    wd.failed = True
                    return False, "FAIL %s: seed %d (%s): %s\n%s" % (
                        name, seed, " ".join(args), "; ".join(problems),
                        "\n".join(l for l in text.splitlines() if l.startswith("  ")
                                  and not l.startswith("   "))[:4000])
                out.append("seed %d: %s" % (seed, summary))
        return True, "OK %s:\n  %s" % (name, "\n  ".join(out))
    return harness.Case(name, fn, labels=["report"], timeout=timeout)


def planted_rank(seed):
    rnd = random.Random(seed)
    return rnd, rnd.randrange(RANKS), rnd.choice([200, 300, 500])


def late_args(rank, us):
    return ["--late-rank", str(rank), "--late-us", str(us), "--late-jitter-us", "50"]


# ------------------------------------------------------------------------ intermittent

def intermittent_job(seed):
    rnd, rank, us = planted_rank(seed)
    return (["--seed", str(seed), "--colls", "AllReduce,AllGather", "--sizes", "1M:4M", "--iters", "60",
             "--order", "iters", "--p2p", "--p2p-pattern", "nodes", "--late-fraction", "0.3"] + late_args(rank, us),
            {"rank": rank, "us": us})


def intermittent_check(rep, text, truth, p):
    probs = []
    colls = [op for op in ops_of(truth) if op[0]["kind"] == "coll"]
    share = sum(late_in(op, p["rank"]) for op in colls) / float(len(colls))
    if named(rep) != [(p["rank"], host(p["rank"]))]:
        probs.append("named %s, planted rank %d late in %.0f%% of its collectives" % (
            named(rep), p["rank"], 100 * share))
        return probs, ""
    s = rep["stragglers"][0]
    got = s["evidence"]["late_share"]
    if s["kind"] != "collective" or abs(got - share) > 0.10 or not s["from_start"]:
        probs.append("%s straggler, late share %.3f, planted %.3f, from the start: %s" % (
            s["kind"], got, share, s["from_start"]))
    if not (p["us"] - 10 <= s["evidence"]["median_late_us"] <= p["us"] + 60):
        probs.append("median lateness when late %.1f us, planted %d + U[0, 50]" % (
            s["evidence"]["median_late_us"], p["us"]))
    probs += no_links(rep)
    return probs, "rank %d named, late share %.3f (planted %.3f), onset window %d, confidence %s" % (
        p["rank"], got, share, s["onset_window"], s["confidence"])


# ------------------------------------------------------------------------------ onset

def onset_job(seed):
    rnd, rank, us = planted_rank(seed)
    frm = [0.5, 0.6, 0.7][seed % 3]
    return (["--seed", str(seed), "--colls", "AllReduce,AllGather", "--sizes", "1M:4M", "--iters", "40",
             "--order", "iters", "--late-from", str(frm)] + late_args(rank, us),
            {"rank": rank, "us": us, "from": frm})


def onset_check(rep, text, truth, p):
    probs = []
    ops = ops_of(truth)
    first = math.ceil(p["from"] * len(ops))  # [C1]: ops from running index ceil(F x total) on
    t_planted = min(true_start(t) for t in ops[first])
    if named(rep) != [(p["rank"], host(p["rank"]))]:
        return ["named %s, planted rank %d from op %d of %d" % (named(rep), p["rank"], first, len(ops))], ""
    s = rep["stragglers"][0]
    onset = s["onset_ns"] + offset_shift(rep, truth)  # on the truth's time base
    if s["from_start"] or abs(onset - t_planted) > s["window_ns"]:
        probs.append("onset %s at %.6f s, planted %.6f s (window %.6f s)" % (
            "from the start" if s["from_start"] else "", onset / 1e9, t_planted / 1e9, s["window_ns"] / 1e9))
    if s["evidence"]["late_share"] < 0.9:
        probs.append("late in %.3f of its collectives since its onset" % s["evidence"]["late_share"])
    if "since +" not in [l for l in text.splitlines() if "STRAGGLER" in l][0]:
        probs.append("the STRAGGLER line does not say since when")
    probs += no_links(rep)
    return probs, "rank %d late from op %d: onset %+.2f windows from the planted moment, share since %.3f" % (
        p["rank"], first, (onset - t_planted) / s["window_ns"], s["evidence"]["late_share"])


# ---------------------------------------------------------------------- P2P blame

def pipeline_job(seed):
    rnd, rank, us = planted_rank(seed)
    return (["--seed", str(seed), "--colls", "AllReduce", "--sizes", "1M:4M", "--iters", "20", "--p2p",
             "--p2p-comm", "--p2p-wait"] + late_args(rank, us), {"rank": rank, "us": us})


def pipeline_check(rep, text, truth, p):
    probs = []
    want = [(p["rank"], host(p["rank"]))]
    if named(rep) != want:
        probs.append("named %s, planted %s" % (named(rep), want))
    kinds = sorted(s.get("kind", "?") for s in rep["stragglers"])
    if "collective" not in kinds:
        probs.append("not named on its collectives: %s" % kinds)
    probs += no_links(rep)
    return probs, "rank %d named (%s), no link or node" % (p["rank"], ", ".join(kinds))


def poster_job(seed):
    rnd, rank, us = planted_rank(seed)
    return (["--seed", str(seed), "--colls", "AllReduce", "--sizes", "1M:4M", "--iters", "20", "--p2p",
             "--late-in", "p2p", "--p2p-wait"] + late_args(rank, us), {"rank": rank, "us": us})


def poster_check(rep, text, truth, p):
    probs = []
    kinds = [s["kind"] for s in rep["stragglers"]]
    if named(rep) != [(p["rank"], host(p["rank"]))] or kinds != ["p2p"]:
        probs.append("named %s (%s), planted rank %d posting late" % (named(rep), kinds, p["rank"]))
    else:
        s = rep["stragglers"][0]
        if not (p["us"] - 10 <= s["evidence"]["median_late_us"] <= p["us"] + 60):
            probs.append("median lateness %.1f us, planted %d + U[0, 50]" % (s["evidence"]["median_late_us"], p["us"]))
        if not re.search(r"^  STRAGGLER \(P2P\): rank %d " % p["rank"], text, re.M):
            probs.append("no STRAGGLER (P2P) line for rank %d" % p["rank"])
    probs += no_links(rep)
    return probs, "rank %d named as a P2P poster, no link or node" % p["rank"]


# ------------------------------------------------------------------------------ clean

def clean_job(seed):
    extra = [["--p2p", "--p2p-wait"], ["--p2p", "--p2p-comm", "--p2p-wait"], ["--p2p", "--p2p-pattern", "nodes"]]
    return (["--seed", str(seed), "--colls", "AllReduce,AllGather", "--sizes", "1M:4M", "--iters", "20",
             "--order", "iters", "--late-jitter-us", "50"] + extra[seed % 3], {})


def clean_check(rep, text, truth, p):
    probs = no_links(rep)
    if rep["stragglers"] or rep["changes"]:
        probs.append("stragglers %s, changes %d" % (named(rep), len(rep["changes"])))
    few = rep.get("not_enough_data", {})
    if few.get("stragglers") or few.get("slow_links"):
        probs.append("not enough data: %s" % few)
    return probs, "nothing named"


# --------------------------------------------------------------------------- evidence

def few_job(seed):
    rnd, rank, us = planted_rank(seed)
    return (["--seed", str(seed), "--colls", "AllReduce", "--sizes", "1M:1M", "--iters", "6"] + late_args(rank, us),
            {"rank": rank})


def few_check(rep, text, truth, p):
    probs = []
    if rep["stragglers"] or "STRAGGLER" in text:
        probs.append("named on 6 collectives: %s" % named(rep))
    few = rep.get("not_enough_data", {}).get("stragglers", [])
    if [(s["rank"], s["hostname"]) for s in few] != [(p["rank"], host(p["rank"]))]:
        probs.append("not enough data for %s, planted rank %d" % ([s["rank"] for s in few], p["rank"]))
    elif (few[0]["evidence"]["ops"], few[0]["evidence"]["late_ops"], few[0]["confidence"]) != (6, 6, "not enough data"):
        probs.append("evidence %s, confidence %s" % (few[0]["evidence"], few[0]["confidence"]))
    line = re.search(r"^  not enough data: rank %d on %s .*started late in 6 of its 6 collectives.*$"
                     % (p["rank"], host(p["rank"])), text, re.M)
    if not line:
        probs.append("no 'not enough data' line with the counts")
    return probs, line.group(0).strip()[:110] + "..." if line else ""


def many_case():
    """A late rank and a slow link on 240 collectives, and a degrading job: every finding says
    its evidence and confidence, in the text, the JSON and the CSV tables."""
    def fn(a):
        problems, notes = [], []
        with harness.Workdir(a.keep, "report-windows") as wd:
            rank, link = 21, (2, 3)
            args = ["--seed", "9", "--colls", "AllReduce,AllGather", "--sizes", "1M:4M", "--iters", "60",
                    "--order", "iters", "--p2p", "--p2p-pattern", "nodes", "--slow-link", "%d:%d" % link] + \
                late_args(rank, 300)
            rc, truth, dump = run_job(a, wd, args)
            tables = os.path.join(wd.path, "tables")
            rc2, rep, text, err = report(a, dump, "--csv", tables)
            if rc or rc2 or rep is None:
                return False, "FAIL report_windows.many: replay rc %s, report rc %s %s" % (rc, rc2, err[-1500:])
            n_colls = sum(1 for t in truth if t["rank"] == rank and t["kind"] == "coll")
            s = rep["stragglers"]
            ev = s[0].get("evidence", {}) if s else {}
            if named(rep) != [(rank, host(rank))] or ev.get("ops") != n_colls or ev.get("late_ops") != n_colls or \
                    s[0].get("confidence") != "high":
                problems.append("stragglers %s, evidence %s, want rank %d late in %d of %d, high" % (
                    named(rep), ev, rank, n_colls, n_colls))
            line = [l for l in text.splitlines() if l.startswith("  STRAGGLER")]
            want = "evidence: late in %d of %d collectives" % (n_colls, n_colls)
            if len(line) != 1 or want not in line[0] or "confidence high" not in line[0]:
                problems.append("STRAGGLER line %s, want %r and 'confidence high'" % (line, want))
            links = rep["slow_links"]
            if [tuple(sorted((l["a"], l["b"]))) for l in links] != [(host(link[0] * 8), host(link[1] * 8))]:
                problems.append("slow links %s" % [(l["a"], l["b"]) for l in links])
            else:
                ev = links[0].get("evidence", {})
                if ev.get("samples") != sum(f["samples"] for f in links[0]["findings"]) or not ev.get("pairs") or \
                        ev["pairs_below"] != ev["pairs"] or links[0].get("confidence") != "high":
                    problems.append("slow link evidence %s, confidence %s" % (ev, links[0].get("confidence")))
                line = [l for l in text.splitlines() if l.startswith("  SLOW LINK")]
                if len(line) != 1 or "evidence: %s transfers" % ev.get("samples") not in line[0] or \
                        "confidence high" not in line[0]:
                    problems.append("SLOW LINK line %s" % line)
            with open(os.path.join(tables, "stragglers.csv"), newline="") as f:
                rows = list(csv.DictReader(f))
            if [(int(r["rank"]), r.get("evidence_ops"), r.get("confidence")) for r in rows] != \
                    [(rank, str(n_colls), "high")]:
                problems.append("stragglers.csv %s" % rows)
            notes.append("rank %d: late in %d of %d, high; link %s" % (rank, n_colls, n_colls,
                                                                      links[0].get("confidence") if links else "-"))
            # a change: 4 ranks, 300 iterations, transfers 3x slower from the middle on
            rc, truth, dump = run_job(a, wd, ["--seed", "4", "--colls", "AllReduce", "--sizes", "4M:16M",
                                              "--iters", "300", "--order", "iters", "--degrade", "0.5:3"], tag="-d")
            rc2, rep, text, err = report(a, dump)
            if rc or rc2 or rep is None:
                return False, "FAIL report_windows.many: degrade: rc %s %s %s" % (rc, rc2, err[-1500:])
            lines = [l for l in text.splitlines() if l.startswith("  CHANGE")]
            if len(rep["changes"]) != 2 or len(lines) != 2:
                problems.append("%d changes, %d CHANGE lines, want one per group (2)" % (
                    len(rep["changes"]), len(lines)))
            for c, l in zip(rep["changes"], lines):
                ev = c.get("evidence", {})
                ops = sum(1 for t in truth if t["bytes"] == c["bytes"])
                if ev.get("ops_before", 0) + ev.get("ops_after", 0) != ops or c.get("confidence") != "high" or \
                        "confidence high" not in l or "(%s ops) before" % ev.get("ops_before") not in l:
                    problems.append("change %s: evidence %s (%d ops in the logs), confidence %s; %s" % (
                        c["bytes"], ev, ops, c.get("confidence"), l))
            notes.append("%d changes, each with its bins and ops" % len(rep["changes"]))
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL report_windows.many: %s" % "; ".join(problems)
        return True, "OK report_windows.many: %s" % "; ".join(notes)
    return harness.Case("report_windows.many", fn, labels=["report"], timeout=300)


# ------------------------------------------------------------------------------ model

def model_case():
    """The planting options, checked in the truth file against CONTRACTS.md section 1."""
    def fn(a):
        problems, notes = [], []
        with harness.Workdir(a.keep, "report-windows") as wd:
            small = ["--colls", "AllReduce,AllGather", "--sizes", "1M:4M", "--iters", "40", "--order", "iters",
                     "--p2p", "--seed", "12"]
            # --late-fraction: late in whole iterations (every op of one, or none), in about F of them
            rc, truth, _ = run_job(a, wd, small + ["--late-rank", "5", "--late-fraction", "0.3"], tag="-f")
            ops = ops_of(truth)
            per_iter = len(ops) // 40
            iters = [{late_in(op, 5) for op in ops[i * per_iter:(i + 1) * per_iter]} for i in range(40)]
            share = sum(1 for s in iters if s == {True}) / 40.0
            if rc or any(len(s) != 1 for s in iters) or not 0.1 <= share <= 0.5:
                problems.append("--late-fraction 0.3: rc %s, iterations %s" % (rc, iters))
            notes.append("late in %.0f%% of the iterations, whole" % (100 * share))
            # --late-from: late exactly from op ceil(F x total) on
            rc, truth, _ = run_job(a, wd, small + ["--late-rank", "5", "--late-from", "0.5"], tag="-o")
            ops = ops_of(truth)
            got = [late_in(op, 5) for op in ops]
            first = math.ceil(0.5 * len(ops))
            if rc or got != [False] * first + [True] * (len(ops) - first):
                problems.append("--late-from 0.5: rc %s, late in ops %s" % (
                    rc, [i for i, x in enumerate(got) if x][:5]))
            # --late-in p2p --p2p-wait: collectives on time, exchanges late; a task ends at the later
            # arrival of its two ranks + its transfer (lat + bytes / bw) [C1]
            rc, truth, _ = run_job(a, wd, small + ["--late-rank", "5", "--late-us", "300", "--late-in", "p2p",
                                                   "--p2p-wait"], tag="-p")
            ops = ops_of(truth)
            bad = [i for i, op in enumerate(ops) if late_in(op, 5) != (op[0]["kind"] == "p2p")]
            arrive = {}
            for op in ops:
                if op[0]["kind"] == "p2p":
                    for t in op:
                        if t["func"] == "Send":
                            arrive[(op[0]["comm"], op[0]["sn"], t["rank"])] = true_start(t)
            waits = 0
            for op in ops:
                if op[0]["kind"] != "p2p":
                    continue
                sn = min(t["sn"] for t in op)
                for t in op:
                    peer_arrives = arrive[(t["comm"], sn, t["peer"])]
                    mine = true_start(t)
                    xfer = 10_000 + t["bytes"] / 100.0
                    if abs(t["exec_ns"] - (max(mine, peer_arrives) - mine + xfer)) > 2:
                        bad.append((t["rank"], t["func"], t["sn"], t["exec_ns"]))
                    waits += peer_arrives > mine
            if rc or bad or not waits:
                problems.append("--late-in p2p --p2p-wait: rc %s, %d ops off the model %s, %d waits" % (
                    rc, len(bad), bad[:3], waits))
            notes.append("%d P2P tasks waited for the late poster" % waits)
            # --p2p-comm: the exchange alone on a communicator of its own
            rc, truth, _ = run_job(a, wd, small + ["--p2p-comm"], tag="-c")
            kinds = collections.defaultdict(set)
            for t in truth:
                kinds[t["comm"]].add(t["kind"])
            if rc or sorted(sorted(k) for k in kinds.values()) != [["coll"], ["p2p"]]:
                problems.append("--p2p-comm: rc %s, kinds per communicator %s" % (rc, dict(kinds)))
            # usage errors
            base = [a.replay, "--plugin", a.plugin, "--synthetic", "--ranks", "8"]
            for extra, opt in ((["--late-rank", "1", "--late-fraction", "0"], "late-fraction"),
                               (["--late-rank", "1", "--late-fraction", "1.5"], "late-fraction"),
                               (["--late-rank", "1", "--late-from", "1"], "late-from"),
                               (["--late-fraction", "0.5"], "late-fraction"),
                               (["--late-rank", "1", "--late-in", "some"], "late-in"),
                               (["--late-rank", "1", "--late-in", "p2p"], "late-in"),
                               (["--p2p-wait"], "p2p-wait"), (["--p2p-comm"], "p2p-comm")):
                r = harness.run(base + extra, harness.make_env({}), wd.cwd, a.timeout)
                first = r.stderr.splitlines()[0] if r.stderr else ""
                if r.rc != 2 or "--" + opt not in first:
                    problems.append("%s: rc %s, %r" % (" ".join(extra), r.rc, first))
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL report_windows.model: %s" % "; ".join(problems)
        return True, "OK report_windows.model: %s" % "; ".join(notes)
    return harness.Case("report_windows.model", fn, labels=["report", "synthetic"], timeout=120)


def cases():
    return [model_case(),
            seeded("report_windows.intermittent", [1, 2, 3, 4, 5], intermittent_job, intermittent_check),
            seeded("report_windows.onset", [5, 6, 7], onset_job, onset_check),
            seeded("report_windows.pipeline", [8, 9, 10], pipeline_job, pipeline_check),
            seeded("report_windows.p2p-poster", [11, 12, 13], poster_job, poster_check),
            seeded("report_windows.clean", [14, 15, 16], clean_job, clean_check),
            seeded("report_windows.few", [17, 18], few_job, few_check),
            many_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

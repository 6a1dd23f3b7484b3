#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report on jobs whose GPU clocks drift (each node's clock runs at its own rate, as
NTP-disciplined hosts do between corrections, tens of ppm apart). The synthetic jobs come from
inspector-replay --synthetic --procs: 64 ranks on 8 nodes (hosts node-NNN), per-node offsets
within +-5 ms, per-node rates within +-F ppm (--clock-drift-ppm F, from the run's first op on),
120 AllReduce ops spread over a long run (--op-gap-ms); the truth file says what was planted.
Every job: the drift found per process equals the planted rate of its node up to one common
rate (within 0.5 ppm), the offsets up to one constant (within 2 us), the residual p95 is below
1 us, and the lateness threshold used is --late-us (100 us): alignment.late_threshold_us and
the text's "lateness threshold 100.0 us (--late-us)".
  report_drift.late-50ppm   seeds 1-4: 50 ppm over 60 s, one rank 1.25 ms late in every op
                            (jitter 50 us): that rank named, exactly, median lateness within 10%
  report_drift.late-20ppm   seeds 11-15: 20 ppm over 30 s, one rank 200-800 us late: named
  report_drift.2ppm-30min   seeds 21-23: 2 ppm over 30 minutes, one rank 300 us late: named;
                            seeds 24-26: one rank 60-80 us late (below the threshold): no
                            straggler, and the latest rank (JSON and text) is the planted one
  report_drift.clean        seeds 31-35: 50 ppm over 60 s, nothing planted: nothing named
  report_drift.ntp-step     logs written here: 8 processes (one rank each, 400 AllReduce over
                            100 s, rates within +-20 ppm), process 3's clock stepped +300 us
                            at 55 s (an NTP step), rank 5 150 us late: rank 5 alone named,
                            process 3 modelled piecewise, residual p95 below 1 us, threshold
                            100 us
  report_drift.models       the model each clock gets (alignment.clocks[].model in --json): the
                            same logs without the step, every end spread by U[0, 2 us]; clocks
                            that do not drift: every clock "constant", drift 0, none with a rate;
                            clocks at constant rates (-20 to +20 ppm, their median 0): every clock
                            "rate" (a line, not windows: none piecewise), each at its planted rate
  report_drift.raised       the same logs without the step, every end spread by U[0, 150 us]:
                            the threshold used is 3 x the residual p95 (above 100 us), and the
                            JSON (late_threshold_from) and the text say it was raised
  report_drift.generator    inspector-replay's planted drift: records equal the truth file;
                            clock_drift_ppm is one value per node, within +-F, a function of
                            --seed and the node alone (the same with 8 ranks as with 16); an
                            on-time rank's start moves against node 0's by exactly its rate
                            difference x the time since the run's first op
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
import logcheck  # noqa: E402

RANKS, NODES = 64, 8
LATE_US = 100.0  # the report's default --late-us
DRIFT_TOL_PPM = 0.5
OFFSET_TOL_NS = 2000


def report(a, path, json_out=True):
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    r = subprocess.run([exe] + (["--json"] if json_out else []) + [path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300, universal_newlines=True)
    if not json_out:
        return r.returncode, r.stdout, r.stderr
    try:
        return r.returncode, json.loads(r.stdout), r.stderr
    except ValueError:
        return r.returncode, None, r.stdout + r.stderr


def host(n):
    return "node-%03d" % n


def job_args(seed, drift_ppm, seconds, late_rank=None, late_us=None, jitter_us=50):
    """120 AllReduce of 1 MiB, one every seconds / 120 s, on 64 ranks of 8 nodes."""
    args = ["--ranks", str(RANKS), "--nodes", str(NODES), "--seed", str(seed), "--colls", "AllReduce",
            "--sizes", "1M:1M", "--iters", "120", "--op-gap-ms", "%g" % (seconds * 1000.0 / 120),
            "--clock-offset-ms", "5", "--clock-drift-ppm", "%g" % drift_ppm]
    if late_rank is not None:
        args += ["--late-rank", str(late_rank), "--late-us", "%g" % late_us, "--late-jitter-us", str(jitter_us)]
    return args


def run_job(a, wd, args):
    os.makedirs(wd.dump)
    truth = os.path.join(wd.path, "truth.jsonl")
    cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=["--procs", "--quiet"] + args, truth=truth)
    r = harness.run(cmd, harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
    lines = []
    if os.path.exists(truth):
        with open(truth) as f:
            lines = [json.loads(l) for l in f if l.strip()]
    return r.rc, lines


def check_clocks(rep, truth):
    """Drift and offsets found against the planted ones, each up to one common value; the
    residual; the threshold used. Returns (problems, summary)."""
    problems = []
    al = rep["alignment"]
    planted = {t["host"]: (t["clock_offset_ns"], t.get("clock_drift_ppm", 0.0)) for t in truth}
    dd = [c.get("drift_ppm", 0) - planted[c["hostname"]][1] for c in al["clocks"]]
    do = [c["offset_ns"] - planted[c["hostname"]][0] for c in al["clocks"]]
    if len(dd) != RANKS or max(dd) - min(dd) > DRIFT_TOL_PPM:
        problems.append("drift found - planted spreads %.3f ppm over %d clocks (tolerance %.1f)" % (
            max(dd) - min(dd) if dd else float("nan"), len(dd), DRIFT_TOL_PPM))
    if not do or max(do) - min(do) > OFFSET_TOL_NS:
        problems.append("offsets found - planted spread %.2f us" % ((max(do) - min(do)) / 1e3 if do else -1))
    if not al["residual_p95_us"] < 1.0:
        problems.append("residual p95 %.2f us" % al["residual_p95_us"])
    if al.get("late_threshold_us") != LATE_US or al.get("late_threshold_from") != "late_us" or \
            rep["options"]["late_us"] != LATE_US:
        problems.append("threshold used %s us (from %s), --late-us %s" % (
            al.get("late_threshold_us"), al.get("late_threshold_from"), rep["options"]["late_us"]))
    summary = "drift error spread %.3f ppm, offset error spread %.2f us, residual p95 %.3f us" % (
        max(dd) - min(dd) if dd else -1, (max(do) - min(do)) / 1e3 if do else -1, al["residual_p95_us"])
    return problems, summary


def check_text(a, wd, want_latest=None):
    rc, out, err = report(a, wd.dump, json_out=False)
    problems = []
    if rc != 0:
        problems.append("text report rc %d: %s" % (rc, err[-500:]))
    if "  lateness threshold 100.0 us (--late-us)\n" not in out:
        problems.append("text: no 'lateness threshold 100.0 us (--late-us)' line")
    if want_latest is not None and "latest rank (not a straggler): rank %d starts" % want_latest not in out:
        problems.append("text: latest rank is not rank %d: %s" % (
            want_latest, [l for l in out.splitlines() if "latest rank" in l]))
    return problems


def check_job(a, wd, args, late_rank, late_us, jitter_us, named=True):
    """One job: replay, report, check. Returns (problems, summary)."""
    rc, truth = run_job(a, wd, args)
    problems = [] if rc == 0 and truth else ["replay rc %s, %d truth lines" % (rc, len(truth))]
    if problems:
        return problems, ""
    rc, rep, err = report(a, wd.dump)
    if rc != 0 or rep is None:
        return ["report rc %d: %s" % (rc, err[-2000:])], ""
    if rep["inputs"]["records"] != len(truth):
        problems.append("%d records, truth has %d" % (rep["inputs"]["records"], len(truth)))
    got = [(s["rank"], s["hostname"]) for s in rep["stragglers"]]
    want = [(late_rank, host(late_rank * NODES // RANKS))] if late_rank is not None and named else []
    if got != want:
        problems.append("stragglers %s, planted %s" % (got, want))
    if rep["slow_links"] or rep["slow_nodes"] or rep["changes"]:
        problems.append("unexpected: links %s, nodes %s, changes %s" % (
            rep["slow_links"], rep["slow_nodes"], rep["changes"]))
    mid = None if late_us is None else late_us + jitter_us / 2.0  # U[0, jitter] on top
    for s in rep["stragglers"]:
        if abs(s["median_late_us"] - mid) > 0.1 * late_us:
            problems.append("median lateness %.1f us, planted %g + U[0, %g]" % (
                s["median_late_us"], late_us, jitter_us))
    latest = None
    if late_rank is not None and not named:
        ranks = rep["communicators"][0]["ranks"]
        latest = max(ranks, key=lambda r: r["median_late_us"])["rank"]
        if latest != late_rank:
            problems.append("latest rank %d, planted %d" % (latest, late_rank))
    p, summary = check_clocks(rep, truth)
    problems += p
    problems += check_text(a, wd, late_rank if late_rank is not None and not named else None)
    return problems, "straggler %s, %s" % (got, summary)


def seeds_case(name, seeds, drift_ppm, seconds, late=lambda rnd: None, named=True, jitter_us=50):
    def fn(a):
        out = []
        for seed in seeds:
            rnd = random.Random(seed)
            late_us = late(rnd)
            late_rank = rnd.randrange(RANKS) if late_us is not None else None
            args = job_args(seed, drift_ppm, seconds, late_rank, late_us, jitter_us)
            with harness.Workdir(a.keep, "report-drift") as wd:
                problems, summary = check_job(a, wd, args, late_rank, late_us, jitter_us, named)
                if problems:
                    wd.failed = True
                    return False, "FAIL %s: seed %d (%s): %s" % (name, seed, " ".join(args), "; ".join(problems))
                out.append("seed %d: %s" % (seed, summary))
        return True, "OK %s:\n  %s" % (name, "\n  ".join(out))
    return harness.Case(name, fn, labels=["report"], timeout=300)


def two_ppm_case():
    named = seeds_case("report_drift.2ppm-30min", range(21, 24), 2, 1800, late=lambda rnd: 300)
    latest = seeds_case("report_drift.2ppm-30min", range(24, 27), 2, 1800, late=lambda rnd: 60, named=False,
                        jitter_us=20)

    def fn(a):
        ok, m1 = named.fn(a)
        if not ok:
            return ok, m1
        ok, m2 = latest.fn(a)
        return ok, m1 + "\n" + m2 if ok else m2
    return harness.Case("report_drift.2ppm-30min", fn, labels=["report"], timeout=300)


# ---------------------------------------------------------------------------
# An NTP step: logs written here, in the plugin's format (docs/CONTRACTS.md section 2)
# ---------------------------------------------------------------------------

def write_step_logs(d, seed=5, step=True, end_noise_ns=0, ppm=None):
    """8 processes of one rank each on 8 hosts; 400 AllReduce, one every 250 ms; rank 5 arrives
    150 us late, the others within 3 us; every kernel ends 200 us after the last arrival (+ U[0,
    end_noise_ns] per rank). Each process's clock: offset within +-5 ms, rate within +-20 ppm
    (or ppm[process]), and with step, process 3's steps +300 us at 55 s (inside a window of the
    report's fit, not at its edge). Returns the list of (offset, ppm) planted."""
    rnd = random.Random(seed)
    base = 1_700_000_000_000_000_000
    n, ops, gap = 8, 400, 250_000_000
    clocks = [(rnd.uniform(-5e6, 5e6), rnd.uniform(-20, 20)) for _ in range(n)]
    if ppm is not None:
        clocks = [(off, ppm[p]) for p, (off, _) in enumerate(clocks)]

    def local(p, t):
        off, ppm = clocks[p]
        jump = 300_000 if step and p == 3 and t >= 55_000_000_000 else 0
        return base + int(round(t * (1 + ppm * 1e-6) + off + jump))

    files = [open(os.path.join(d, "host-%d-pid%d.log" % (p, 1000 + p)), "w") for p in range(n)]
    for k in range(ops):
        t0 = k * gap
        arrive = [t0 + (150_000 if p == 5 else 0) + rnd.randrange(3000) for p in range(n)]
        stop = max(arrive) + 200_000
        for p in range(n):
            s, e = local(p, arrive[p]), local(p, stop + rnd.uniform(0, end_noise_ns))
            rec = {"header": {"id": "0x1234", "comm_name": "world", "rank": p, "n_ranks": n, "nnodes": n},
                   "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "x",
                                "rec_mechanism": "nccl_profiler_interface",
                                "dump_timestamp_us": (base + t0) // 1000, "hostname": "host-%d" % p,
                                "pid": 1000 + p},
                   "coll_perf": {"coll": "AllReduce", "coll_sn": k, "coll_msg_size_bytes": 1048576,
                                 "coll_exec_time_us": (e - s) // 1000, "coll_timing_source": "kernel_gpu",
                                 "coll_algobw_gbs": 5.0, "coll_busbw_gbs": 8.75, "coll_exec_time_ns": e - s,
                                 "coll_start_ts_ns": s, "coll_datatype": "ncclFloat32", "coll_count": 262144,
                                 "coll_nchannels": 8, "coll_stale_channels": 0, "coll_algo": "RING",
                                 "coll_proto": "SIMPLE"}}
            files[p].write(json.dumps(rec) + "\n")
    for f in files:
        f.close()
    return clocks


def ntp_step_case():
    def fn(a):
        with harness.Workdir(a.keep, "report-drift") as wd:
            os.makedirs(wd.dump)
            clocks = write_step_logs(wd.dump)
            rc, rep, err = report(a, wd.dump)
            if rc != 0 or rep is None:
                wd.failed = True
                return False, "FAIL report_drift.ntp-step: report rc %d: %s" % (rc, err[-2000:])
            problems = []
            got = [(s["rank"], s["hostname"]) for s in rep["stragglers"]]
            if got != [(5, "host-5")]:
                problems.append("stragglers %s, planted [(5, 'host-5')]" % got)
            for s in rep["stragglers"]:
                if not 150 <= s["median_late_us"] <= 153:
                    problems.append("median lateness %.1f us, planted 150 + U[0, 3]" % s["median_late_us"])
            al = rep["alignment"]
            models = {c["hostname"]: c.get("model") for c in al["clocks"]}
            if models.get("host-3") != "piecewise":
                problems.append("host-3 (stepped) modelled %s" % models.get("host-3"))
            if not al["residual_p95_us"] < 1.0:
                problems.append("residual p95 %.2f us" % al["residual_p95_us"])
            if al.get("late_threshold_us") != LATE_US or al.get("late_threshold_from") != "late_us":
                problems.append("threshold used %s us (%s)" % (al.get("late_threshold_us"),
                                                                al.get("late_threshold_from")))
            # a step is no rate: the stepped clock's rate is its own too
            dd = [c.get("drift_ppm", 0) - clocks[int(c["hostname"][5:])][1] for c in al["clocks"]]
            if max(dd) - min(dd) > DRIFT_TOL_PPM:
                problems.append("drift found - planted spreads %.3f ppm" % (max(dd) - min(dd)))
            if problems:
                wd.failed = True
                return False, "FAIL report_drift.ntp-step: %s" % "; ".join(problems)
            return True, "OK report_drift.ntp-step: rank 5 named (%.1f us), host-3 piecewise, residual p95 " \
                "%.3f us, drift error spread %.3f ppm" % (rep["stragglers"][0]["median_late_us"],
                                                          al["residual_p95_us"], max(dd) - min(dd))
    return harness.Case("report_drift.ntp-step", fn, labels=["report"], timeout=120)


def models_case():
    """Whether a clock needs a rate is judged on the data: a richer model only where it fits
    clearly better (docs/report.md "Clock alignment"), so no drift keeps constant offsets and
    a constant rate a line, whatever the noise of the ends."""
    def fn(a):
        out, problems = [], []
        rates = [-20, -12, -6, -2, 2, 6, 12, 20]  # their median 0: each clock's rate is its own
        for what, ppm, want in (("no drift", [0] * 8, "constant"), ("constant rates", rates, "rate")):
            with harness.Workdir(a.keep, "report-drift") as wd:
                os.makedirs(wd.dump)
                write_step_logs(wd.dump, step=False, end_noise_ns=2000, ppm=ppm)
                rc, rep, err = report(a, wd.dump)
                if rc != 0 or rep is None:
                    wd.failed = True
                    return False, "FAIL report_drift.models: %s: report rc %d: %s" % (what, rc, err[-2000:])
                al = rep["alignment"]
                models = {c["hostname"]: c["model"] for c in al["clocks"]}
                drift = {c["hostname"]: c["drift_ppm"] for c in al["clocks"]}
                bad = {h: m for h, m in sorted(models.items()) if m != want}
                n_rate = 0 if want == "constant" else len(ppm)
                if len(models) != len(ppm) or bad:
                    problems.append("%s: clocks modelled %s, not %s" % (what, bad or models, want))
                if (al["clocks_with_rate"], al["clocks_piecewise"]) != (n_rate, 0):
                    problems.append("%s: %d clocks with a rate, %d piecewise; %d and 0 expected" % (
                        what, al["clocks_with_rate"], al["clocks_piecewise"], n_rate))
                off = {h: abs(d - ppm[int(h[5:])]) for h, d in drift.items()}
                if len(off) != len(ppm) or max(off.values()) > DRIFT_TOL_PPM:
                    problems.append("%s: drift found - planted %s ppm" % (what, off))
                if problems:
                    wd.failed = True
                out.append("%s: %d clocks %s" % (what, len(models), want))
        if problems:
            return False, "FAIL report_drift.models: %s" % "; ".join(problems)
        return True, "OK report_drift.models: %s" % "; ".join(out)
    return harness.Case("report_drift.models", fn, labels=["report"], timeout=120)


def raised_case():
    """Ends spread by U[0, 150 us] (clocks that cannot be aligned finer): the threshold used is
    3 x the residual p95, above --late-us, and both outputs say it was raised and why."""
    def fn(a):
        with harness.Workdir(a.keep, "report-drift") as wd:
            os.makedirs(wd.dump)
            write_step_logs(wd.dump, step=False, end_noise_ns=150_000)
            rc, rep, err = report(a, wd.dump)
            rc2, text, err2 = report(a, wd.dump, json_out=False)
            if rc or rc2 or rep is None:
                wd.failed = True
                return False, "FAIL report_drift.raised: report rc %d / %d: %s" % (rc, rc2, (err + err2)[-2000:])
            problems = []
            al = rep["alignment"]
            thr, p95 = al.get("late_threshold_us"), al["residual_p95_us"]
            if rep["options"]["late_us"] != LATE_US or al.get("late_threshold_from") != "residual_p95" or \
                    thr is None or not 3 * p95 > LATE_US or abs(thr - 3 * p95) > 1e-3 * thr:
                problems.append("threshold used %s us (from %s), residual p95 %.3f us, --late-us %s" % (
                    thr, al.get("late_threshold_from"), p95, rep["options"]["late_us"]))
            want = "  lateness threshold %.1f us: --late-us 100.0 us raised to 3 x the residual p95" % (thr or 0)
            if want not in text:
                problems.append("text: no %r line: %s" % (want, [l for l in text.splitlines() if "threshold" in l]))
            if problems:
                wd.failed = True
                return False, "FAIL report_drift.raised: %s" % "; ".join(problems)
            return True, "OK report_drift.raised: residual p95 %.2f us, threshold used %.2f us, said" % (p95, thr)
    return harness.Case("report_drift.raised", fn, labels=["report"], timeout=120)


# ---------------------------------------------------------------------------
# The generator's planted drift (tools/replay/synth.c, --clock-drift-ppm)
# ---------------------------------------------------------------------------

def generator_case():
    F = 40.0

    def replay(a, wd, tag, ranks):
        d = os.path.join(wd.path, "dump" + tag)
        os.makedirs(d)
        truth = os.path.join(wd.path, "truth%s.jsonl" % tag)
        args = ["--ranks", str(ranks), "--nodes", "8", "--seed", "7", "--colls", "AllReduce",
                "--sizes", "64K:64K", "--iters", "50", "--op-gap-ms", "100", "--clock-offset-ms", "2",
                "--clock-drift-ppm", "%g" % F]
        cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=["--procs", "--quiet"] + args, truth=truth)
        r = harness.run(cmd, harness.make_env({}, dump_dir=d), wd.cwd, a.timeout)
        lines = []
        if os.path.exists(truth):
            with open(truth) as f:
                lines = [json.loads(l) for l in f if l.strip()]
        return r.rc, d, lines

    def fn(a):
        problems = []
        with harness.Workdir(a.keep, "report-drift") as wd:
            rc, d, truth = replay(a, wd, "16", 16)
            rc8, _, truth8 = replay(a, wd, "8", 8)
            if rc or rc8 or not truth or not truth8:
                wd.failed = True
                return False, "FAIL report_drift.generator: replay rc %s / %s" % (rc, rc8)
            # records equal the truth, start and exec
            errs = logcheck.Errors()
            files = logcheck.read_dump_dir(d, errs)
            problems += errs.items
            want = {(t["rank"], t["sn"]): (t["start_ns"], t["exec_ns"]) for t in truth}
            got = {}
            for lines in files.values():
                for line in lines:
                    if line.kind == "coll_perf":
                        p = line.obj["coll_perf"]
                        got[(line.obj["header"]["rank"], p["coll_sn"])] = (p["coll_start_ts_ns"],
                                                                            p["coll_exec_time_ns"])
            if got != want:
                bad = [k for k in want if got.get(k) != want[k]][:3]
                problems.append("records differ from the truth (%d records, %d truth lines), e.g. %s" % (
                    len(got), len(want), [(k, got.get(k), want[k]) for k in bad]))
            # one rate per node, within +-F, a function of seed and node alone
            ppm = {}
            for t in truth:
                ppm.setdefault(t["node"], set()).add(t.get("clock_drift_ppm"))
            ppm8 = {}
            for t in truth8:
                ppm8.setdefault(t["node"], set()).add(t.get("clock_drift_ppm"))
            if any(len(v) != 1 or None in v or not -F <= min(v) <= F for v in ppm.values()) or len(ppm) != 8:
                problems.append("clock_drift_ppm per node: %s" % ppm)
            elif ppm != ppm8:
                problems.append("rates differ with 8 ranks: %s against %s" % (ppm8, ppm))
            elif len({min(v) for v in ppm.values()}) < 8:
                problems.append("nodes share rates: %s" % ppm)
            else:
                # rank 2 (node 1) against rank 0 (node 0), both on time: their starts differ by
                # the offsets' difference + (ppm1 - ppm0) x 1e-6 x (time since the first op)
                r = {(t["rank"], t["sn"]): t for t in truth}
                p0, p1 = min(ppm[0]), min(ppm[1])
                o0, o1 = r[(0, 0)]["clock_offset_ns"], r[(2, 0)]["clock_offset_ns"]
                first = r[(0, 0)]["start_ns"] - o0  # node 0's clock at the first op: the time base
                worst = 0
                for sn in range(50):
                    el = (r[(0, sn)]["start_ns"] - o0 - first) / (1 + p0 * 1e-6)  # true time since then
                    want_d = o1 - o0 + (p1 - p0) * 1e-6 * el
                    worst = max(worst, abs(r[(2, sn)]["start_ns"] - r[(0, sn)]["start_ns"] - want_d))
                if worst > 2:
                    problems.append("node 1's starts against node 0's off the planted rates by %.1f ns" % worst)
            if problems:
                wd.failed = True
                return False, "FAIL report_drift.generator: %s" % "; ".join(problems)
            return True, "OK report_drift.generator: records equal the truth, rates %s" % (
                sorted(round(min(v), 3) for v in ppm.values()))
    return harness.Case("report_drift.generator", fn, labels=["report"], timeout=120)


def cases():
    return [
        seeds_case("report_drift.late-50ppm", range(1, 5), 50, 60, late=lambda rnd: 1250),
        seeds_case("report_drift.late-20ppm", range(11, 16), 20, 30, late=lambda rnd: rnd.choice([200, 300, 500, 800])),
        two_ppm_case(),
        seeds_case("report_drift.clean", range(31, 36), 50, 60),
        ntp_step_case(),
        models_case(),
        raised_case(),
        generator_case(),
    ]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

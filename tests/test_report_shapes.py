#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report on jobs laid out like LLM training (tests/lib/report_planted.py: tensor-parallel
communicators of a whole node, 2-rank pipeline pairs, data-parallel and world communicators,
per-host clocks with offsets, drift and steps), written in the plugin's format and compared with
what was planted:
  report_shapes.read-order   three jobs of several communicator shapes (tp + pipeline P2P +
                             world under drift; tp + dp + pair collectives, no world; all-pairs
                             P2P, two sizes, a clock step): text, --json, --csv, --html and
                             --trace byte-identical on 1 thread in name order and reversed, on 2
                             threads and on 4 threads reversed; two more jobs (tp, pairs, dp, world;
                             all-pairs and a step) whose lines are cut into runs and dealt into 12
                             files at random, 3 deals on 1, 2 and 4 threads: byte-identical
  report_shapes.tp-drift     seeded jobs: 4 or 8 nodes of 8 ranks, tp on every node, pipeline
                             pairs (P2P, and in half of them a pair AllReduce too), dp or world or
                             both, 0-50 ppm of drift; a rank 150 us late in its collectives: named
                             in each communicator it is late in (world, its tp, its dp) and nowhere
                             else, median lateness within 10%, lateness threshold --late-us
                             (100 us), every clock's rate the planted one (within 0.5 ppm, up to
                             one common rate); the same jobs with nothing late: nothing named,
                             threshold 100 us
  report_shapes.steps        seeded jobs (4 nodes, tp, pipeline pairs, world, 0-20 ppm) where
                             one host's clock steps by +-1 ms, +-20 ms or +1 s at 20-80% of the
                             job, a rank 150 us late: that rank named (world and tp) and nothing
                             else, threshold 100 us, the stepped host's clocks piecewise, and the
                             text prints each of them with its step (size within 1 us + 50 ppm, where
                             within 2 iterations)
  report_shapes.one-way-link all-pairs P2P on 4 nodes, one direction of a link x2 or x4 slower: that
                             direction named, one way (the text's arrow too), its ratio the planted
                             one, nothing else; both directions of a link slowed: one link, both ways
  report_shapes.missing-log  a rank 150 us late (world, tp; dp in one) whose log is missing: named as a
                             likely straggler with no log in each communicator it is late in (measured
                             against the whole tp or dp communicators, world through the job's one
                             missing process), lateness within 15 us (50 with 30% of jitter in the
                             transfer times), in the text (no "no straggler found"), --json and the
                             page; "31 of the 32 ranks seen (no log from rank r)"; the same jobs with
                             it on time, with and without jitter: nothing named
  report_shapes.changes      clean jobs of many groups (10 sizes on tp, dp and pipeline pairs, every
                             transfer's time x exp(N(0, 0.3))): no CHANGE; the dp transfers twice as
                             long from half the job on: one change in each dp group, at the planted
                             moment (within 2 iterations), and nowhere else
  report_shapes.page         the page of a job with a straggler and a link slow one way: the link
                             drawn node by node (its direction outlined, the way back x1), the heat
                             maps' rows labelled "node-001 r8-r15" and each cell with its rank, and
                             in headless Chromium at 1,400 px no horizontal scroll and the
                             stragglers table within it (measured only when chromium is installed)
"""
import json
import os
import random
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import report_planted  # noqa: E402

LATE_US = 100.0  # the report's default --late-us


def exe(a):
    return os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")


def report(a, path, *extra):
    r = subprocess.run([exe(a), "--json"] + list(extra) + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120, universal_newlines=True)
    try:
        return r.returncode, json.loads(r.stdout), r.stderr
    except ValueError:
        return r.returncode, None, r.stdout + r.stderr


def read_order_case():
    jobs = [(1, dict(drift_ppm=20, late=5)),
            (2, dict(nodes=8, drift_ppm=20, late=11, dp=True, pp_colls=True, world=False)),
            (3, dict(drift_ppm=10, a2a=True, groups=2, step=(1, -2_000_000, 0.4), late=9))]
    shuffled = [(4, dict(drift_ppm=20, late=5, pp_colls=True, dp=True, iters=40)),
                (5, dict(drift_ppm=10, a2a=True, step=(2, 3_000_000, 0.5), late=17, iters=40))]

    # Under ThreadSanitizer (INS_TEST_SANITIZER=thread: tests/CMakeLists.txt), which runs the
    # report about 6x slower, the jobs are a third as long and the one-thread reversal (no
    # threads: nothing for it to see; the other builds run it) is left out: the threads still
    # read the same shapes of files.
    tsan = os.environ.get("INS_TEST_SANITIZER") == "thread"
    orders = [("2 threads", 2, False), ("4 threads, reversed", 4, True)]
    if not tsan:
        orders.insert(0, ("1 thread, reversed", 1, True))

    def fn(a):
        problems = []
        for seed, kw in jobs:
            with harness.Workdir(a.keep, "report-shapes") as wd:
                os.makedirs(wd.dump)
                paths = report_planted.Job(seed, **dict(kw, iters=40) if tsan else kw).write(wd.dump)
                out = os.path.join(wd.path, "out")
                ref, err = harness.report_outputs(exe(a), out, paths, threads=1)
                if ref is None:
                    wd.failed = True
                    return False, "FAIL report_shapes.read-order: job %d: %s" % (seed, err)
                for what, threads, rev in orders:
                    ps = paths[::-1] if rev else paths
                    got, err = harness.report_outputs(exe(a), out, ps, threads=threads)
                    if got is None:
                        problems.append("job %d, %s: %s" % (seed, what, err))
                        continue
                    diff = sorted(k for k in set(ref) | set(got) if ref.get(k) != got.get(k))
                    if diff:
                        problems.append("job %d (%s), %s: %s differ" % (seed, kw, what, diff))
                if problems:
                    wd.failed = True
                    return False, "FAIL report_shapes.read-order: " + "; ".join(problems)
        # the same lines dealt into other files: every rank's log cut into pieces and the pieces
        # shuffled across files, so that no op's records come in the same order twice
        for seed, kw in shuffled:
            with harness.Workdir(a.keep, "report-shapes") as wd:
                os.makedirs(wd.dump)
                job = report_planted.Job(seed, **kw)
                out = os.path.join(wd.path, "out")
                ref = None
                for deal, threads in ((1, 1), (2, 2), (3, 4)):
                    paths = deal_lines(job, wd.dump, deal)
                    got, err = harness.report_outputs(exe(a), out, paths, threads=threads)
                    if got is None:
                        problems.append("job %d, deal %d: %s" % (seed, deal, err))
                        break
                    if ref is None:
                        ref = got
                        continue
                    diff = sorted(k for k in set(ref) | set(got) if ref.get(k) != got.get(k))
                    if diff:
                        problems.append("job %d (%s), lines dealt anew (%d), %d threads: %s differ" % (
                            seed, kw, deal, threads, diff))
                if problems:
                    wd.failed = True
                    return False, "FAIL report_shapes.read-order: " + "; ".join(problems)
        return True, "OK report_shapes.read-order: %d jobs, every output byte-identical in both file orders and " \
            "on 1, 2 and 4 threads; %d more with their lines dealt into files 3 ways" % (len(jobs), len(shuffled))
    return harness.Case("report_shapes.read-order", fn, labels=["report", "threads"], timeout=120)


def deal_lines(job, d, seed, nfiles=12):
    """Writes job's lines into nfiles files under d (the same names whatever the seed, every
    earlier file removed): each rank's lines in runs of 1-40 (a run keeps its order), the runs
    dealt to the files at random and shuffled there. Every line names its process, so the report
    must give the same answer for any such deal. Returns the paths in name order."""
    for n in os.listdir(d):
        os.remove(os.path.join(d, n))
    rnd = random.Random(seed)
    runs = []
    for r in sorted(job.lines):
        ls = job.lines[r]
        i = 0
        while i < len(ls):
            k = rnd.randint(1, 40)
            runs.append(ls[i:i + k])
            i += k
    rnd.shuffle(runs)
    files = [[] for _ in range(nfiles)]
    for run in runs:
        files[rnd.randrange(nfiles)].extend(run)
    paths = []
    for i, ls in enumerate(files):
        p = os.path.join(d, "part-%02d.log" % i)
        with open(p, "w") as f:
            f.writelines(json.dumps(o, separators=(",", ":")) + "\n" for o in ls)
        paths.append(p)
    return paths


def tp_plan(seed):
    """A job's shape from its seed: nodes, drift, which communicators."""
    rnd = random.Random(seed)
    kw = dict(nodes=rnd.choice([4, 8]), drift_ppm=rnd.choice([0, 5, 10, 20, 50]), pp_colls=rnd.random() < 0.5,
              dp=rnd.random() < 0.5, world=rnd.random() < 0.7)
    if not kw["world"]:
        kw["dp"] = True
    return kw, rnd.randrange(kw["nodes"] * 8)


def late_in(job, r):
    """[(communicator name, rank in it)] of every communicator a late rank r is late in."""
    want = [("tp", r % job.gpn)]
    if job.world:
        want.append(("world", r))
    if job.dp:
        want.append(("dp", job.node(r)))
    return sorted(want)


def check_tp_job(a, wd, seed, late):
    kw, late_rank = tp_plan(seed)
    job = report_planted.Job(seed, late=late_rank if late else None, **kw)
    job.write(wd.dump)
    rc, rep, err = report(a, wd.dump)
    if rc != 0 or rep is None:
        return ["report rc %d: %s" % (rc, err[-1000:])], ""
    problems = []
    got = sorted((s["comm_name"], s["rank"]) for s in rep["stragglers"])
    want = late_in(job, late_rank) if late else []
    if got != want:
        problems.append("stragglers %s, planted %s" % (got, want))
    for s in rep["stragglers"]:
        if abs(s["median_late_us"] - 151.5) > 15:
            problems.append("%s rank %d: median lateness %.1f us, planted 150 + U[0, 3]" % (
                s["comm_name"], s["rank"], s["median_late_us"]))
    if rep["not_enough_data"]["stragglers"]:
        problems.append("not enough data: %s" % rep["not_enough_data"]["stragglers"])
    al = rep["alignment"]
    if al["late_threshold_us"] != LATE_US or al["late_threshold_from"] != "late_us":
        problems.append("threshold %s us (from %s), residual p95 %.3f us" % (
            al["late_threshold_us"], al["late_threshold_from"], al["residual_p95_us"]))
    dd = [c.get("drift_ppm", 0) - job.clocks[int(c["hostname"][5:])][1] for c in al["clocks"]]
    if len(dd) != job.n or max(dd) - min(dd) > 0.5:
        problems.append("drift found - planted spreads %.3f ppm over %d clocks" % (
            max(dd) - min(dd) if dd else -1, len(dd)))
    return problems, "seed %d %s: %s, residual p95 %.3f us" % (seed, kw, got, al["residual_p95_us"])


def tp_drift_case():
    def fn(a):
        out = []
        for seed, late in [(s, True) for s in range(1, 7)] + [(s, False) for s in range(21, 24)]:
            with harness.Workdir(a.keep, "report-shapes") as wd:
                os.makedirs(wd.dump)
                problems, summary = check_tp_job(a, wd, seed, late)
                if problems:
                    wd.failed = True
                    return False, "FAIL report_shapes.tp-drift: seed %d%s: %s" % (
                        seed, "" if late else " (clean)", "; ".join(problems))
                out.append(summary)
        return True, "OK report_shapes.tp-drift:\n  " + "\n  ".join(out)
    return harness.Case("report_shapes.tp-drift", fn, labels=["report"], timeout=120)


def steps_case():
    def one(a, wd, seed):
        rnd = random.Random(seed)
        # -1 s is not planted: after a backward step as long as many ops, their times repeat the
        # times before it, and a model keyed on a clock's own time cannot tell them apart
        # (docs/report.md, "Clock alignment")
        size = rnd.choice([1_000_000, -1_000_000, 20_000_000, -20_000_000, 1_000_000_000])
        step = (rnd.randrange(4), size, rnd.uniform(0.2, 0.8))
        late = rnd.randrange(32)
        job = report_planted.Job(seed, late=late, drift_ppm=rnd.choice([0, 10, 20]), step=step, iters=160)
        job.write(wd.dump)
        rc, rep, err = report(a, wd.dump)
        r2 = subprocess.run([exe(a), wd.dump], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                            universal_newlines=True)
        if rc or r2.returncode or rep is None:
            return ["report rc %d / %d: %s" % (rc, r2.returncode, (err + r2.stderr)[-1000:])], ""
        problems = []
        got = sorted((s["comm_name"], s["rank"]) for s in rep["stragglers"])
        want = sorted([("world", late), ("tp", late % 8)])
        if got != want:
            problems.append("stragglers %s, planted %s" % (got, want))
        al = rep["alignment"]
        if al["late_threshold_us"] != LATE_US:
            problems.append("threshold %s us" % al["late_threshold_us"])
        stepped = [c for c in al["clocks"] if c["hostname"] == report_planted.host(step[0])]
        if len(stepped) != 8 or any(c["model"] != "piecewise" for c in stepped):
            problems.append("stepped host's clocks modelled %s" % sorted({c["model"] for c in stepped}))
        # the text: each stepped clock with its step, the size planted, where planted
        t_step = step[2] * job.iters * job.gap - (int(al["reference_ns"]) - report_planted.BASE)
        steps = [l for l in r2.stdout.splitlines() if l.startswith("    clock %s " % report_planted.host(step[0]))]
        for l in steps:
            m = re.search(r"step ([-+][0-9.]+) ms at \+([0-9.]+) s", l)
            if not m or abs(float(m.group(1)) * 1e6 - size) > 1000 + 50e-6 * abs(size) or abs(float(m.group(2)) * 1e9 - t_step) > 2 * job.gap:
                problems.append("text: %r, planted %+.3f ms at +%.3f s" % (l, size / 1e6, t_step / 1e9))
        if len(steps) != 8:
            problems.append("text: %d lines of the stepped host's clocks" % len(steps))
        return problems, "seed %d: step %+g ms at %.0f%% of the job on host %d: %s" % (
            seed, size / 1e6, 100 * step[2], step[0], got)

    def fn(a):
        out = []
        for seed in range(1, 9):
            with harness.Workdir(a.keep, "report-shapes") as wd:
                os.makedirs(wd.dump)
                problems, summary = one(a, wd, seed)
                if problems:
                    wd.failed = True
                    return False, "FAIL report_shapes.steps: seed %d: %s" % (seed, "; ".join(problems))
                out.append(summary)
        return True, "OK report_shapes.steps:\n  " + "\n  ".join(out)
    return harness.Case("report_shapes.steps", fn, labels=["report"], timeout=120)


def one_way_case():
    """All-pairs P2P between 4 nodes (each rank Sends to the same local rank of every other
    node), one direction of one link slowed (x2: folded with the other way it read x0.75,
    above the slow line); both directions of another (a link slow both ways is told once)."""
    plans = [(7, (2, 1), 2.0), (8, (1, 3), 4.0), (9, [(0, 3), (3, 0)], 2.0)]

    def fn(a):
        out = []
        for seed, dirs, slow in plans:
            with harness.Workdir(a.keep, "report-shapes") as wd:
                os.makedirs(wd.dump)
                job = report_planted.Job(seed, a2a=True, slow_dir=dirs, slow=slow, iters=30, tp_ops=1)
                job.write(wd.dump)
                rc, rep, err = report(a, wd.dump)
                if rc or rep is None:
                    wd.failed = True
                    return False, "FAIL report_shapes.one-way-link: seed %d: rc %d %s" % (seed, rc, err[-1000:])
                got = [(l["a"], l["b"], l["one_way"]) for l in rep["slow_links"]]
                two = isinstance(dirs, list)
                f, t = dirs[0] if two else dirs
                want = [(report_planted.host(min(f, t)), report_planted.host(max(f, t)), False)] if two else \
                    [(report_planted.host(f), report_planted.host(t), True)]
                problems = []
                if got != want or rep["slow_nodes"] or rep["not_enough_data"]["slow_links"]:
                    problems.append("slow links %s, slow nodes %s, not enough data %s; planted %s" % (
                        got, rep["slow_nodes"], rep["not_enough_data"]["slow_links"], want))
                for l in rep["slow_links"]:
                    if abs(l["worst_ratio"] - 1 / slow) > 0.05:
                        problems.append("worst ratio %.3f, planted %.3f" % (l["worst_ratio"], 1 / slow))
                r2 = subprocess.run([exe(a), wd.dump], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                                    universal_newlines=True)
                arrow = "%s %s %s" % (want[0][0], "->" if not two else "<->", want[0][1])
                if ("SLOW LINK: " + arrow) not in r2.stdout:
                    problems.append("text has no line 'SLOW LINK: %s'" % arrow)
                if problems:
                    wd.failed = True
                    return False, "FAIL report_shapes.one-way-link: seed %d: %s" % (seed, "; ".join(problems))
                out.append("seed %d, %s x%g: %s" % (seed, dirs, slow, got))
        return True, "OK report_shapes.one-way-link:\n  " + "\n  ".join(out)
    return harness.Case("report_shapes.one-way-link", fn, labels=["report"], timeout=120)


def missing_log_case():
    """A rank 150 us late in its collectives that wrote no log: the others wait for it."""
    plans = [(11, 5, True, {}), (12, 22, True, dict(dp=True, drift_ppm=10)), (13, 30, True, dict(nodes=8)),
             (14, 9, False, {}), (15, 17, False, dict(dp=True)),
             # transfer times that vary (x exp(N(0, 0.3))): a quarter of a whole communicator's ops
             # wait 100 us beyond its median too, which alone must name nobody
             (16, 13, True, dict(dp=True, jitter=0.3)), (17, 13, False, dict(dp=True, jitter=0.3)),
             (18, 2, False, dict(jitter=0.3))]

    def fn(a):
        out = []
        for seed, rank, late, kw in plans:
            with harness.Workdir(a.keep, "report-shapes") as wd:
                os.makedirs(wd.dump)
                job = report_planted.Job(seed, late=rank if late else None, missing=rank, iters=40, **kw)
                job.write(wd.dump)
                rc, rep, err = report(a, wd.dump, "--html", os.path.join(wd.path, "page.html"))
                r2 = subprocess.run([exe(a), wd.dump], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                                    universal_newlines=True)
                if rc or r2.returncode or rep is None:
                    wd.failed = True
                    return False, "FAIL report_shapes.missing-log: seed %d: rc %d %s" % (seed, rc, err[-1000:])
                with open(os.path.join(wd.path, "page.html")) as f:
                    page = f.read()
                problems = []
                got = sorted((m["comm_name"], m["rank"]) for m in rep.get("missing_stragglers", []))
                want = late_in(job, rank) if late else []
                if got != want or rep["stragglers"]:
                    problems.append("missing stragglers %s, stragglers %s; planted %s" % (
                        got, [(s["comm_name"], s["rank"]) for s in rep["stragglers"]], want))
                for m in rep.get("missing_stragglers", []):
                    if abs(m["median_late_us"] - 150) > (50 if kw.get("jitter") else 15):
                        problems.append("%s rank %d: %.1f us late, planted 150" % (
                            m["comm_name"], m["rank"], m["median_late_us"]))
                text = r2.stdout
                header = "%d of the %d ranks seen (no log from rank %d)" % (job.n - 1, job.n, rank)
                if header not in text:
                    problems.append("text: no header '%s'" % header)
                named = re.findall(r"^  LIKELY STRAGGLER \(no log\): rank (\d+) on \"(\w+)\"", text, re.M)
                if sorted((c, int(r)) for r, c in named) != want:
                    problems.append("text names %s" % named)
                if late and "no straggler, slow link or change found" in text:
                    problems.append("text says no straggler was found")
                if late != ("Likely stragglers with <b>no log</b>" in page) or \
                        ('<td class="n warn">%d of %d</td>' % (job.n - 1, job.n)) not in page:
                    problems.append("page: no-log table %s, seen cell %s" % (
                        "Likely stragglers with <b>no log</b>" in page, "%d of %d" % (job.n - 1, job.n) in page))
                if problems:
                    wd.failed = True
                    return False, "FAIL report_shapes.missing-log: seed %d (rank %d%s, %s): %s" % (
                        seed, rank, " late" if late else "", kw, "; ".join(problems))
                out.append("seed %d, rank %d%s %s: %s" % (seed, rank, " late" if late else "", kw,
                                                         [(m["comm_name"], m["rank"], m["median_late_us"])
                                                          for m in rep["missing_stragglers"]]))
        return True, "OK report_shapes.missing-log:\n  " + "\n  ".join(out)
    return harness.Case("report_shapes.missing-log", fn, labels=["report"], timeout=120)


def changes_case():
    """Bandwidth changes under noise: clean jobs of many groups (tp, dp, pipeline pairs with their
    AllReduce, 10 sizes each, every transfer x exp(N(0, 0.3))) show none; a planted change (the
    dp transfers twice as long from half the job on) is found in every dp group and nowhere else."""
    def fn(a):
        out = []
        for seed in range(31, 34):
            with harness.Workdir(a.keep, "report-shapes") as wd:
                os.makedirs(wd.dump)
                job = report_planted.Job(seed, groups=10, iters=30, dp=True, pp_colls=True, drift_ppm=10, jitter=0.3)
                job.write(wd.dump)
                rc, rep, err = report(a, wd.dump)
                r2 = subprocess.run([exe(a), wd.dump], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                                    universal_newlines=True)
                if rc or rep is None:
                    wd.failed = True
                    return False, "FAIL report_shapes.changes: seed %d: rc %d %s" % (seed, rc, err[-1000:])
                lines = [l for l in r2.stdout.splitlines() if l.startswith("  CHANGE")]
                if rep["changes"] or lines:
                    wd.failed = True
                    return False, "FAIL report_shapes.changes: clean seed %d: %d changes, e.g. %s" % (
                        seed, len(rep["changes"]), lines[:2])
                out.append("clean seed %d: %d groups, no change" % (
                    seed, sum(len(c["groups"]) for c in rep["communicators"])))
        with harness.Workdir(a.keep, "report-shapes") as wd:
            os.makedirs(wd.dump)
            job = report_planted.Job(36, groups=2, iters=80, dp=True, drift_ppm=10, jitter=0.2, change=("dp", 2.0, 0.5))
            job.write(wd.dump)
            rc, rep, err = report(a, wd.dump)
            if rc or rep is None:
                wd.failed = True
                return False, "FAIL report_shapes.changes: planted: rc %d %s" % (rc, err[-1000:])
            names = {c["id"]: c["name"] for c in rep["communicators"]}
            got = sorted((ch["comm"], ch["bytes"]) for ch in rep["changes"])
            want = sorted(("0x%x" % (0x5000 + i), 1 << (20 + g)) for i in range(job.gpn) for g in range(2))
            problems = []
            if got != want:
                problems.append("changes in %s, planted in every dp group %s" % (
                    [(names.get(c), b) for c, b in got], want))
            t_planted = report_planted.BASE + 0.5 * job.iters * job.gap
            for ch in rep["changes"]:
                if not ch["after_gbs"] < 0.6 * ch["before_gbs"] or abs(ch["t_ns"] - t_planted) > 2 * job.gap:
                    problems.append("%s %d: %.2f -> %.2f GB/s at %+.3f s from the planted moment" % (
                        ch["comm"], ch["bytes"], ch["before_gbs"], ch["after_gbs"], (ch["t_ns"] - t_planted) / 1e9))
            if problems:
                wd.failed = True
                return False, "FAIL report_shapes.changes: planted: %s" % "; ".join(problems[:6])
            out.append("planted: %d changes, one in each dp group" % len(got))
        return True, "OK report_shapes.changes:\n  " + "\n  ".join(out)
    return harness.Case("report_shapes.changes", fn, labels=["report"], timeout=120)


# The page measured in the browser: a script appended to a copy of the page writes the document's
# width and the right edge of every table under the "Stragglers" heading into <body> attributes,
# which --dump-dom returns.
MEASURE = ("<script>(function(){var r=[];var h=document.getElementById('stragglers');"
           "for(var e=h&&h.nextElementSibling;e&&e.tagName!=='H3';e=e.nextElementSibling)"
           "if(e.tagName==='TABLE')r.push(Math.round(e.getBoundingClientRect().right));"
           "document.body.setAttribute('data-page-w',document.documentElement.scrollWidth);"
           "document.body.setAttribute('data-strag-right',r.join(','));})();</script>")


def browser_widths(wd, html, width):
    """(page scroll width, [right edge of each stragglers table]) in headless Chromium at `width`
    px, or None when no chromium is installed."""
    import test_report_views as views
    exe = views.chromium_exe()
    if not exe:
        return None
    with open(html, encoding="utf-8") as f:
        page = f.read()
    m = os.path.join(wd.path, "measure.html")
    with open(m, "w", encoding="utf-8") as f:
        f.write(page.replace("</body>", MEASURE + "</body>"))
    r = views.chromium(exe, wd, ["--dump-dom", "--window-size=%d,1200" % width, "file://" + m])
    pw = re.search(r'data-page-w="(\d+)"', r.stdout)
    sr = re.search(r'data-strag-right="([\d,]*)"', r.stdout)
    if not pw or not sr:
        return -1, []
    return int(pw.group(1)), [int(x) for x in sr.group(1).split(",") if x]


def page_case():
    """The HTML page of a job with a straggler and a link slow one way: the stragglers table fits
    1,400 px (headless Chromium, when installed), the slow link drawn node by node, heat-map
    rows labelled with their ranks, and a Send line no longer hides its Recv of equal values
    (later runs as rings and dashed lines)."""
    def fn(a):
        with harness.Workdir(a.keep, "report-shapes") as wd:
            os.makedirs(wd.dump)
            job = report_planted.Job(21, late=13, a2a=True, slow_dir=(1, 2), slow=3.0, iters=30, tp_ops=1)
            job.write(wd.dump)
            html = os.path.join(wd.path, "page.html")
            rc, rep, err = report(a, wd.dump, "--html", html)
            if rc or rep is None:
                wd.failed = True
                return False, "FAIL report_shapes.page: rc %d %s" % (rc, err[-1000:])
            with open(html, encoding="utf-8") as f:
                page = f.read()
            problems = []
            # the slow link, node by node: a matrix figure per group it is slow in, the planted
            # direction outlined (and only it), the way back not slow
            figs = re.findall(r"<figure><figcaption>[^<]*, node by node</figcaption>.*?</figure>", page, re.S)
            slow = [re.findall(r'<rect [^>]*class="strag"[^>]*data-tip="([^":]*):', x) for x in figs]
            back = [re.findall(r'data-tip="node-002 &rarr; node-001: x([0-9.]+) the median link"', x) for x in figs]
            if not figs or any(s != ["node-001 &rarr; node-002"] for s in slow) or \
                    any(len(b) != 1 or abs(float(b[0]) - 1) > 0.1 for b in back):
                problems.append("matrices: %d, outlined %s, the way back %s" % (len(figs), slow, back))
            # heat maps of world (32 ranks, 8 a node): each row labelled with its host and ranks
            i = page.find('<h2><span data-tip="0x1000">world')
            i = i if i >= 0 else page.find("<h2>world")
            sec = page[i:page.find("</section>", i)] if i >= 0 else ""
            maps = re.findall(r'<svg class="chart heat[^"]*".*?</svg>', sec, re.S)
            want = ["node-%03d r%d\u2013r%d" % (h, 8 * h, 8 * h + 7) for h in range(4)]
            for m in maps:
                rows = [t for t in re.findall(r'text-anchor="end">([^<]*)</text>', m) if t.startswith("node-")]
                cells = [int(t) for t in re.findall(r'<text class="rk"[^>]*>(\d+)</text>', m)]
                if rows != want or cells != list(range(32)):
                    problems.append("heat map rows %s (want %s), ranks in cells %s" % (rows, want, cells[:8]))
            if len(maps) != 2:
                problems.append("%d heat maps of world, want 2" % len(maps))
            # bandwidth charts: runs of equal values (a Send and its Recv) both visible: the first
            # run's points are dots, every later run's rings, each run's line dashed its own way
            p2p_charts = 0
            for fig in re.findall(r"<figure><figcaption>Bus bandwidth by message size.*?</figure>", page, re.S):
                dots = set(re.findall(r'<circle class="pt" [^>]*data-tip="([A-Za-z]+) ', fig))
                rings = set(re.findall(r'<circle class="pt ring" [^>]*data-tip="([A-Za-z]+) ', fig))
                dashes = re.findall(r'<polyline class="line" stroke="[^"]+"((?: stroke-dasharray="[^"]+")?)', fig)
                if len(dots) > 1 or dots & rings or len(set(dashes)) != len(dashes):
                    problems.append("a bandwidth chart draws runs alike: dots %s, rings %s, dashes %s"
                                    % (sorted(dots), sorted(rings), dashes))
                p2p_charts += dots | rings == {"Send", "Recv"}
            if not p2p_charts:
                problems.append("no bandwidth chart with both Send and Recv")
            # the stragglers table within 1,400 px: no horizontal scroll
            got = browser_widths(wd, html, 1400)
            browser = "no chromium: widths not measured"
            if got is not None:
                pw, rights = got
                browser = "page %d px wide, stragglers table to %s px" % (pw, rights)
                if pw > 1400 or not rights or max(rights) > 1400:
                    problems.append("at 1,400 px: " + browser)
            if problems:
                wd.failed = True
                return False, "FAIL report_shapes.page: " + "; ".join(problems)
            return True, "OK report_shapes.page: %d link matrices, heat-map rows %s; %s" % (len(figs), want, browser)
    return harness.Case("report_shapes.page", fn, labels=["report", "browser"], timeout=120)


def cases():
    return [read_order_case(), tp_drift_case(), steps_case(), one_way_case(), missing_log_case(), changes_case(),
            page_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

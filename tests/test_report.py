#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report on synthetic jobs whose truth is known (the report binary sits next to
inspector-replay):
  report.straggler     8 ranks (one process each), rank 3 arrives 250 us late to every
                       collective: the report names rank 3 as the STRAGGLER, ~250 us late,
                       and counts every record the truth file lists
  report.no-straggler  the same without a late rank: no STRAGGLER line
  report.drops         a dump whose dump_stats say records were dropped: the report's header
                       gives that number
  report.stale         torch-1735 (NCCL 2.28.9 sent stale timestamps on some channels of 24
                       ops): the report counts the records the oracle gives stale channels
  report.sampled       torch-1735 with one group in 3 timed: the report says so, with the timed
                       share computed from the trace (groups ended, ceil(groups / 3) timed)
  report.gpu-straggler the records of a live run on 2 x H200 (tests/data/straggler:
                       tools/validate/scale.py, rank 1 sleeping 200 us before each AllReduce):
                       the report names rank 1 and no other, with the share of ops it was late
                       in and its median lateness on aligned clocks as tests/lib/report_oracle.py
                       computes them from the logs
  report.nvidia        NVIDIA's own Inspector plugin's logs (tests/data/nvidia-inspector): read
                       whole, per-group counts and median times as computed here, the same
                       collectives as our plugin's logs of the same workload, no lateness claimed
  report.chunks        one log read in 4 KB chunks by two threads (lines cut anywhere): the same
                       JSON as read whole, a planted bad line named at its true line number
  report.excluded      kernel_cpu timing and busbw above the ceiling planted in the straggler
                       logs: counted under their reasons, left out of the figures
  report.csv           --csv tables read back: the same as --json says (a comm name with a
                       comma and quotes)
  report.fixtures      every log recorded on 2 x H200 in tests/data read whole, none rejected
  report.usage         bad usage exits 2 naming the option; a wrong or empty path exits 1
  report.tree          the straggler job's logs spread over a tree as a multi-node job lays
                       them out (node folders, one level deeper, some gzipped, some renamed
                       .jsonl, a stray non-log file beside them): the same report as on the flat
                       directory, every record counted
"""
import collections
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import oracle  # noqa: E402
import report_oracle  # noqa: E402
import test_sampling  # noqa: E402  (group numbering from a trace)

SYN = ["--ranks", "8", "--procs", "--iters", "3", "--sizes", "64K:4M", "--seed", "3"]


def report(a, path):
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    r = subprocess.run([exe, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60, universal_newlines=True)
    return r.returncode, r.stdout + r.stderr


def synthetic_case(name, late):
    def fn(a):
        with harness.Workdir(a.keep, "report") as wd:
            os.makedirs(wd.dump)
            truth = os.path.join(wd.path, "truth.jsonl")
            extra = ["--late-rank", "3", "--late-us", "250"] if late else []
            cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=SYN + extra, truth=truth)
            r = harness.run(cmd, harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
            problems = [] if r.rc == 0 else ["replay failed: rc %s" % r.rc]
            with open(truth) as f:
                n_truth = sum(1 for l in f if l.strip())
            rc, out = report(a, wd.dump)
            if rc != 0:
                problems.append("report rc %d" % rc)
            m = re.search(r"(\d+) records \((\d+) collective", out)
            if not m or int(m.group(1)) != n_truth:
                problems.append("report counts %s records, truth has %d" %
                                (m.group(1) if m else "?", n_truth))
            s = re.search(r"STRAGGLER: rank (\d+) .*?median ([\d.]+) us after", out)
            if late and (not s or s.group(1) != "3" or abs(float(s.group(2)) - 250) > 5):
                problems.append("expected rank 3 named STRAGGLER ~250 us late")
            if not late and s:
                problems.append("a STRAGGLER was named in a job without one")
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n%s" % (name, "; ".join(problems), out)
            return True, "OK %s: %s" % (name, (s.group(0) if s else "no straggler named"))
    return harness.Case(name, fn, labels=["report"], timeout=120)


def drops_case():
    def fn(a):
        with harness.Workdir(a.keep, "report") as wd:
            os.makedirs(wd.dump)
            env = harness.make_env({"NCCL_INSPECTOR_DUMP_THREAD_ENABLE": "0",
                                    "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE": "16"}, dump_dir=wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture("2.28.9/ar")])
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            dropped = 0
            for fn_ in os.listdir(wd.dump):
                last = {}
                with open(os.path.join(wd.dump, fn_)) as f:
                    for l in f:
                        o = json.loads(l)
                        if "dump_stats" in o:
                            h = o["header"]
                            last[(h["id"], h["rank"])] = o["dump_stats"]["coll_dropped_total"]
                dropped += sum(last.values())
            rc, out = report(a, wd.dump)
            m = re.search(r"records \(.*?\), (\d+) dropped", out)
            ok = r.rc == 0 and rc == 0 and dropped > 0 and m and int(m.group(1)) == dropped
            if not ok:
                wd.failed = True
                return False, "FAIL report.drops: dump_stats say %d dropped\n%s" % (dropped, out)
            return True, "OK report.drops: %d dropped" % dropped
    return harness.Case("report.drops", fn, labels=["report"], timeout=60)


def torch_case(name, env_extra, check):
    def fn(a):
        trace = os.path.abspath(harness.fixture("2.28.9/torch-1735"))
        with harness.Workdir(a.keep, "report") as wd:
            os.makedirs(wd.dump)
            env = harness.make_env(env_extra, dump_dir=wd.dump)
            r = harness.run(harness.replay_cmd(a.replay, a.plugin, [trace], abi="trace"), env,
                            wd.cwd, a.timeout)
            rc, out = report(a, wd.dump)
            problem = "replay rc %s, report rc %s" % (r.rc, rc) if r.rc or rc else check(trace, out)
            if problem:
                wd.failed = True
                return False, "FAIL %s: %s\n%s" % (name, problem, out)
            return True, "OK %s: %s" % (name, out.splitlines()[1].strip())
    return harness.Case(name, fn, labels=["report"], timeout=60)


def check_stale(trace, out):
    _, recs = oracle.expected_records(trace)
    want = sum(1 for r in recs if r["perf"][r["kind"] + "_stale_channels"])
    m = re.search(r"excluded from every figure below: (\d+) timed from only some of their channels", out)
    if len(re.findall(r"stale", out.split("\n\n")[0])) > 1:
        return "the header says the stale channels' count more than once"
    if not want or not m or int(m.group(1)) != want:
        return "expected a line counting %d records with stale channels" % want
    return None


def check_sampled(trace, out):
    _, groups = test_sampling.group_numbers(test_sampling.trace_lines(trace), True)
    share = 100.0 * test_sampling.timed_groups(groups, 3, 1) / groups
    want = "sampled timing: runs of 1 group(s), one run in 3; timed share %.1f%% to %.1f%%" % (
        share, share)
    return None if want in out else "expected the line %r" % want


def report_json(a, path, extra=()):
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    r = subprocess.run([exe, "--json"] + list(extra) + [path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, universal_newlines=True)
    try:
        return r.returncode, json.loads(r.stdout), r.stderr
    except ValueError:
        return r.returncode, None, r.stdout + r.stderr


def gpu_straggler_case():
    """The live 2 x H200 run with rank 1 made late: the report's straggler and its lateness
    equal what report_oracle computes from the logs (aligned clocks, median of the others)."""
    def fn(a):
        d = os.path.join(harness.DATA, "straggler")
        want, resid_us, _ = report_oracle.stragglers(report_oracle.read_logs(d))
        rc, rep, err = report_json(a, d)
        got = [(s["comm"], s["rank"], s["median_late_us"], s["late_share"])
               for s in (rep or {}).get("stragglers", [])]
        ok = rc == 0 and len(want) == 1 and want[0][1] == 1 and len(got) == 1 and \
            got[0][:2] == want[0][:2] and abs(got[0][2] - want[0][2]) < 0.01 and \
            abs(got[0][3] - want[0][3]) < 1e-6
        if not ok:
            return False, "FAIL report.gpu-straggler: oracle %s, report %s (rc %d)\n%s" % (
                want, got, rc, err)
        return True, "OK report.gpu-straggler: rank 1, median %.1f us late in %.0f%% (residual " \
            "p95 %.2f us)" % (got[0][2], 100 * got[0][3], resid_us)
    return harness.Case("report.gpu-straggler", fn, labels=["report"], timeout=60)


def nvidia_case():
    """NVIDIA's Inspector logs (whole us only, no start times): every record read, each group's
    count and median time (lower nearest rank of the us times) as computed here, the same
    collectives per op and size as our plugin's logs of the same workload, no lateness claimed."""
    def fn(a):
        import shutil
        d = os.path.join(harness.DATA, "nvidia-inspector")
        problems, colls = [], {}
        for who in ("nvidia", "ours"):
            with harness.Workdir(a.keep, "report") as wd:
                os.makedirs(wd.dump)
                for f in os.listdir(d):
                    if f.startswith(who + "-"):
                        shutil.copy(os.path.join(d, f), wd.dump)
                recs = report_oracle.read_logs(wd.dump)
                rc, rep, err = report_json(a, wd.dump)
            if rc or rep is None:
                return False, "FAIL report.nvidia: %s: report rc %d %s" % (who, rc, err)
            if rep["inputs"]["records"] != len(recs):
                problems.append("%s: %d records read, the logs hold %d" % (
                    who, rep["inputs"]["records"], len(recs)))
            want = collections.defaultdict(list)
            for r in recs:
                want[(r["comm"], r["kind"], r["op"], r["bytes"])].append(r)
            got = {(c["id"], g["kind"], g["op"], g["bytes"]): g
                   for c in rep["communicators"] for g in c["groups"]}
            if set(got) != set(want):
                problems.append("%s: groups %s, logs %s" % (who, sorted(got), sorted(want)))
            for k, v in sorted(want.items()):
                g = got.get(k)
                t = sorted(r["exec"] or 1000 * r["exec_us"] for r in v)
                if not g or g["records"] != len(v) or \
                        abs(g["time_us"]["p50"] - t[len(t) // 2] / 1e3) > 1e-3 * max(1, t[len(t) // 2] / 1e3):
                    problems.append("%s %s: %s, want %d records, p50 %.3f us" % (
                        who, k, g and (g["records"], g.get("time_us")), len(v), t[len(t) // 2] / 1e3))
            colls[who] = collections.Counter((r["op"], r["bytes"]) for r in recs if r["kind"] == "coll")
            if who == "nvidia" and (rep["alignment"]["available"] or rep["stragglers"]):
                problems.append("nvidia: alignment or stragglers claimed without start times")
        if colls["nvidia"] != colls["ours"]:
            problems.append("collectives per op and size: NVIDIA %s, ours %s" % (
                sorted(colls["nvidia"].items()), sorted(colls["ours"].items())))
        if problems:
            return False, "FAIL report.nvidia: %s" % "; ".join(problems[:10])
        return True, "OK report.nvidia: NVIDIA's logs read whole, %d collectives, the same as ours" % \
            sum(colls["nvidia"].values())
    return harness.Case("report.nvidia", fn, labels=["report"], timeout=60)


def chunks_case():
    """One log read in many chunks by several threads (INSPECTOR_REPORT_CHUNK_BYTES splits it
    every few KB, lines cut anywhere): the same JSON as read whole, and a planted bad line named
    at its true line number."""
    def fn(a):
        exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
        with harness.Workdir(a.keep, "report") as wd:
            os.makedirs(wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=SYN + ["--late-rank", "3", "--p2p"])
            r = harness.run(cmd, harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
            one = os.path.join(wd.path, "all.log")
            n = 0
            with open(one, "w") as fo:
                for f in sorted(os.listdir(wd.dump)):
                    with open(os.path.join(wd.dump, f)) as fi:
                        for line in fi:
                            fo.write(line)
                            n += 1
                            if n == 300:
                                fo.write("{not json\n")
                                n += 1
            outs = []
            for chunk in ("0", "4093"):
                env = dict(os.environ, INSPECTOR_REPORT_CHUNK_BYTES=chunk)
                p = subprocess.run([exe, "--json", "--threads", "2", one], env=env, timeout=120,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
                outs.append((p.returncode, p.stdout, p.stderr))
            problems = [] if r.rc == 0 else ["replay rc %s" % r.rc]
            for rc, out, err in outs:
                if rc or "all.log:301: rejected" not in err:
                    problems.append("rc %d, no all.log:301 message: %s" % (rc, err[-500:]))
            if outs[0][1] != outs[1][1]:
                problems.append("the report read in chunks differs from the report read whole")
            if problems:
                wd.failed = True
                return False, "FAIL report.chunks: %s" % "; ".join(problems)
            return True, "OK report.chunks: %d lines in %d-byte chunks: the same report, line 301 " \
                "named" % (n, 4093)
    return harness.Case("report.chunks", fn, labels=["report", "threads"], timeout=180)


def excluded_case():
    """Untrustworthy records never pass silently: the straggler logs with every 7th record's
    timing source made kernel_cpu and every 11th (not 7th) busbw raised to 1200 GB/s: the
    report counts exactly those under their reasons, each group keeps the rest, its median
    time is the kept records' (lower nearest rank); with --max-busbw 2000 none is above."""
    def fn(a):
        import gzip
        d = os.path.join(harness.DATA, "straggler")
        with harness.Workdir(a.keep, "report") as wd:
            os.makedirs(wd.dump)
            planted = collections.Counter()
            kept = collections.defaultdict(list)
            for f in sorted(os.listdir(d)):
                with gzip.open(os.path.join(d, f), "rt") as fi, \
                        open(os.path.join(wd.dump, f[:-3]), "w") as fo:
                    for line in fi:
                        o = json.loads(line)
                        p = o.get("coll_perf")
                        if p is not None:
                            if p["coll_sn"] % 7 == 0:
                                p["coll_timing_source"] = "kernel_cpu"
                                planted["timing_not_kernel_gpu"] += 1
                            elif p["coll_sn"] % 11 == 0:
                                p["coll_busbw_gbs"] = 1200.0
                                planted["busbw_above_ceiling"] += 1
                            else:
                                kept[(p["coll"], p["coll_msg_size_bytes"])].append(p["coll_exec_time_ns"])
                        fo.write(json.dumps(o) + "\n")
            rc, rep, err = report_json(a, wd.dump)
            rc2, rep2, err2 = report_json(a, wd.dump, ["--max-busbw", "2000"])
        problems = []
        if rc or rep is None or rc2 or rep2 is None:
            return False, "FAIL report.excluded: rc %d / %d: %s %s" % (rc, rc2, err, err2)
        ex = rep["inputs"]["excluded"]
        if ex["timing_not_kernel_gpu"] != planted["timing_not_kernel_gpu"] or \
                ex["busbw_above_ceiling"] != planted["busbw_above_ceiling"] or ex["stale_channels"]:
            problems.append("excluded %s, planted %s" % (ex, dict(planted)))
        if rep2["inputs"]["excluded"]["busbw_above_ceiling"] != 0:
            problems.append("--max-busbw 2000 still excludes %s" % rep2["inputs"]["excluded"])
        for g in rep["communicators"][0]["groups"]:
            v = sorted(kept[(g["op"], g["bytes"])])
            if g["kept"] != len(v) or abs(g["time_us"]["p50"] - v[len(v) // 2] / 1e3) > 1e-6:
                problems.append("%s %d: kept %d p50 %s, want %d, %.3f" % (
                    g["op"], g["bytes"], g["kept"], g["time_us"]["p50"], len(v), v[len(v) // 2] / 1e3))
        if problems:
            return False, "FAIL report.excluded: %s" % "; ".join(problems)
        return True, "OK report.excluded: %s left out and counted" % dict(planted)
    return harness.Case("report.excluded", fn, labels=["report"], timeout=60)


def csv_case():
    """--csv DIR: every table, read back with Python's csv module, says what --json says."""
    def fn(a):
        import csv
        exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
        with harness.Workdir(a.keep, "report") as wd:
            os.makedirs(wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=SYN + ["--late-rank", "3", "--comm-name",
                                                                          'dp, "main"'])
            harness.run(cmd, harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
            tables = os.path.join(wd.path, "tables")
            r = subprocess.run([exe, "--json", "--csv", tables, wd.dump], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60, universal_newlines=True)
            rep = json.loads(r.stdout) if r.returncode == 0 else None
            rows = {}
            for t in ("groups", "ranks", "stragglers", "links", "changes", "clocks"):
                path = os.path.join(tables, t + ".csv")
                rows[t] = list(csv.DictReader(open(path, newline=""))) if os.path.exists(path) else None
        problems = []
        if rep is None or any(v is None for v in rows.values()):
            return False, "FAIL report.csv: rc %d, tables %s" % (r.returncode, sorted(k for k, v in rows.items() if v))
        groups = [g for c in rep["communicators"] for g in c["groups"]]
        if len(rows["groups"]) != len(groups):
            problems.append("%d group rows, %d groups" % (len(rows["groups"]), len(groups)))
        for row, g in zip(rows["groups"], groups):
            if row["op"] != g["op"] or int(row["bytes"]) != g["bytes"] or int(row["records"]) != g["records"] or \
                    abs(float(row["time_p50_us"]) - g["time_us"]["p50"]) > 1e-3 or row["comm_name"] != 'dp, "main"':
                problems.append("group row %s against %s" % (row, g))
        st = [(int(x["rank"]), x["hostname"], x["comm_name"]) for x in rows["stragglers"]]
        if st != [(s["rank"], s["hostname"], s["comm_name"]) for s in rep["stragglers"]] or len(st) != 1:
            problems.append("stragglers.csv %s, JSON %s" % (st, rep["stragglers"]))
        if len(rows["clocks"]) != len(rep["alignment"]["clocks"]) or len(rows["ranks"]) != 8:
            problems.append("%d clock rows, %d rank rows" % (len(rows["clocks"]), len(rows["ranks"])))
        if problems:
            return False, "FAIL report.csv: %s" % "; ".join(problems[:5])
        return True, "OK report.csv: %d groups, %d stragglers, %d clocks, a comm name with a comma and quotes" % (
            len(groups), len(st), len(rows["clocks"]))
    return harness.Case("report.csv", fn, labels=["report"], timeout=120)


def fixtures_case():
    """Every log recorded on 2 x H200 in tests/data (live runs, the straggler, CUDA graphs,
    NVIDIA's plugin and ours): the report reads every record (counted here), rejects none, and
    counts the replay traces beside them as lines that are not records."""
    def fn(a):
        import glob
        problems, total = [], 0
        dirs = sorted({os.path.dirname(f) for f in glob.glob(os.path.join(harness.DATA, "*", "*.log.gz"))})
        for d in dirs:
            want = len(report_oracle.read_logs(d))
            rc, rep, err = report_json(a, d)
            got = rep["inputs"] if rep else {}
            # (live/ also holds the callback traces, *.trace.jsonl.gz: JSON lines of another
            # shape, counted as not records)
            traces = sum(1 for f in glob.glob(os.path.join(d, "*.trace.jsonl.gz"))
                         for _ in __import__("gzip").open(f, "rt"))
            if rc or got.get("records") != want or got.get("lines_rejected") or \
                    got.get("lines_not_records") != traces:
                problems.append("%s: rc %d, %s, want %d records" % (os.path.basename(d), rc, got, want))
            total += want
        if problems or not dirs:
            return False, "FAIL report.fixtures: %s" % "; ".join(problems)
        return True, "OK report.fixtures: %d records in %d folders, all read" % (total, len(dirs))
    return harness.Case("report.fixtures", fn, labels=["report"], timeout=120)


def usage_case():
    """Bad usage exits 2 naming what is wrong; a wrong or empty path exits 1 saying so."""
    def fn(a):
        exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
        problems = []
        with harness.Workdir(a.keep, "report") as wd:
            empty = os.path.join(wd.path, "empty")
            os.makedirs(empty)
            for args, rc_want, text in [([], 2, "usage:"), (["--bogus", "x"], 2, "--bogus"),
                                        (["--late-share", "7", "x"], 2, "--late-share"),
                                        (["--threads", "0", "x"], 2, "--threads"),
                                        ([os.path.join(wd.path, "nowhere")], 1, "No such file"),
                                        ([empty], 1, "no .log or .jsonl files"),
                                        (["--help"], 0, "STRAGGLER")]:
                r = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=30, universal_newlines=True)
                if r.returncode != rc_want or text not in r.stdout + r.stderr:
                    problems.append("%s: rc %d, %r" % (args, r.returncode, (r.stdout + r.stderr)[-200:]))
        if problems:
            return False, "FAIL report.usage: %s" % "; ".join(problems)
        return True, "OK report.usage: 7 command lines, exit status and message as documented"
    return harness.Case("report.usage", fn, labels=["report"], timeout=60)


def tree_case():
    def fn(a):
        import gzip
        import shutil
        with harness.Workdir(a.keep, "report") as wd:
            os.makedirs(wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=SYN + ["--late-rank", "3"])
            r = harness.run(cmd, harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
            problems = [] if r.rc == 0 else ["replay failed: rc %s" % r.rc]
            logs = sorted(f for f in os.listdir(wd.dump) if f.endswith(".log"))
            tree = os.path.join(wd.path, "job")
            for i, f in enumerate(logs):
                d = os.path.join(tree, "node%02d" % (i % 3), "logs" if i % 2 else "")
                os.makedirs(d, exist_ok=True)
                src = os.path.join(wd.dump, f)
                if i % 4 == 0:
                    with open(src, "rb") as fi, gzip.open(os.path.join(d, f + ".gz"), "wb") as fo:
                        shutil.copyfileobj(fi, fo)
                elif i % 4 == 1:
                    shutil.copy(src, os.path.join(d, f[:-4] + ".jsonl"))
                else:
                    shutil.copy(src, os.path.join(d, f))
            with open(os.path.join(tree, "node00", "notes.txt"), "w") as f:
                f.write("not a log\n")
            rc1, flat = report(a, wd.dump)
            rc2, nested = report(a, tree)
            if rc1 != 0 or rc2 != 0:
                problems.append("report rc %d (flat) and %d (tree)" % (rc1, rc2))
            # everything but the file count of the header line must be the same
            strip = lambda out: [l for l in out.splitlines() if not l.startswith("Inspector report")]
            if strip(flat) != strip(nested):
                problems.append("the tree's report differs from the flat directory's")
            m1 = re.search(r"(\d+) files?, (\d+) records", flat)
            m2 = re.search(r"(\d+) files?, (\d+) records", nested)
            if not (m1 and m2 and m1.groups() == m2.groups() and int(m2.group(1)) == len(logs)):
                problems.append("headers: %s / %s, %d logs" % (m1 and m1.group(0), m2 and m2.group(0),
                                                               len(logs)))
            if problems:
                wd.failed = True
                return False, "FAIL report.tree: %s\n--- flat\n%s\n--- tree\n%s" % (
                    "; ".join(problems), flat, nested)
            return True, "OK report.tree: %s from %d files in 3 node folders" % (m2.group(0), len(logs))
    return harness.Case("report.tree", fn, labels=["report"], timeout=120)


def cases():
    return [synthetic_case("report.straggler", True), synthetic_case("report.no-straggler", False),
            tree_case(), chunks_case(), excluded_case(), csv_case(), fixtures_case(), usage_case(),
            drops_case(), nvidia_case(), torch_case("report.stale", {}, check_stale),
            torch_case("report.sampled", {"NCCL_INSPECTOR_SAMPLE_GROUPS": "3"}, check_sampled),
            gpu_straggler_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

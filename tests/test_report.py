#!/usr/bin/env python3
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
                       the report names rank 1, with the share of ops it was last in and its
                       median lateness computed here from the records' start timestamps
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
import harness  # noqa: E402
import oracle  # noqa: E402
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
    m = re.search(r"(\d+) records timed without channels whose GPU timestamps were stale", out)
    if not want or not m or int(m.group(1)) != want:
        return "expected a line counting %d records with stale channels" % want
    return None


def check_sampled(trace, out):
    _, groups = test_sampling.group_numbers(test_sampling.trace_lines(trace), True)
    share = 100.0 * test_sampling.timed_groups(groups, 3, 1) / groups
    want = "sampled timing: runs of 1 group(s), one run in 3; timed share %.1f%% to %.1f%%" % (
        share, share)
    return None if want in out else "expected the line %r" % want


def gpu_straggler_case():
    def fn(a):
        import gzip
        import glob
        d = os.path.join(harness.DATA, "straggler")
        starts = {}
        with harness.Workdir(a.keep, "report") as wd:
            os.makedirs(wd.dump)
            for f in sorted(glob.glob(os.path.join(d, "*.log.gz"))):
                with gzip.open(f, "rt") as fi, \
                        open(os.path.join(wd.dump, os.path.basename(f)[:-3]), "w") as fo:
                    for line in fi:
                        fo.write(line)
                        o = json.loads(line)
                        if "coll_perf" in o:
                            p = o["coll_perf"]
                            starts.setdefault((o["header"]["id"], p["coll"], p["coll_sn"]), {})[
                                o["header"]["rank"]] = p["coll_start_ts_ns"]
            ops = [v for v in starts.values() if len(v) >= 2]
            last = collections.Counter(max(v, key=lambda r: (v[r], r)) for v in ops)
            worst = max(sorted(last), key=lambda r: last[r])
            late = sorted(v[worst] - min(v.values()) for v in ops)
            want = "rank %d starts last in %.0f%% of the %d collectives seen on several ranks, " \
                   "median %.1f us" % (worst, 100.0 * last[worst] / len(ops), len(ops),
                                       late[len(late) // 2] / 1e3)
            rc, out = report(a, wd.dump)
            if rc or "STRAGGLER: " + want not in out or worst != 1:
                wd.failed = True
                return False, "FAIL report.gpu-straggler: expected %r (rank 1)\n%s" % (want, out)
            return True, "OK report.gpu-straggler: " + want
    return harness.Case("report.gpu-straggler", fn, labels=["report"], timeout=60)


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
            tree_case(),
            drops_case(), torch_case("report.stale", {}, check_stale),
            torch_case("report.sampled", {"NCCL_INSPECTOR_SAMPLE_GROUPS": "3"}, check_sampled),
            gpu_straggler_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

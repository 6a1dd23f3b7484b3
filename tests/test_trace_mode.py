#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trace mode (NCCL_INSPECTOR_TRACE_DIR): the plugin also writes every callback it receives.
  trace.<fixture>[.threads]  replay the fixture with trace mode on (on the recorded threads
                             with .threads); the records are the oracle's; the trace written
                             parses, holds one line per callback delivered, and the oracle
                             computed from it expects the same records; replaying it gives
                             exactly the records the first run wrote (every perf field)
  trace.unwritable           a trace directory that cannot be created: one NCCL WARN, trace
                             mode off, the records still right
  trace.graph                the same for a CUDA-graph-captured loop (tests/data/graph)
  trace.live                 the traces written in trace mode by a live run on 2 x H200
                             (tests/data/live: PyTorch workload, NCCL 2.28.9), replayed: exactly
                             the records the plugin wrote during that run (every perf field)
"""
import glob
import gzip
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402
import oracle  # noqa: E402


def perf_set(d):
    out = []
    for f in sorted(glob.glob(os.path.join(d, "*.log"))):
        with open(f) as fh:
            for line in fh:
                o = json.loads(line)
                for k in ("coll_perf", "p2p_perf"):
                    if k in o:
                        out.append((o["header"]["id"], o["header"]["rank"],
                                    json.dumps(o[k], sort_keys=True)))
    return sorted(out)


def expected_keys(trace, cfg):
    _, recs = oracle.expected_records(trace, cfg)
    return sorted((r["kind"], r["sn"], r["perf"][r["kind"]], json.dumps(r["perf"], sort_keys=True))
                  for r in recs)


def case(name, fixture, threads=False):
    def fn(a):
        src = harness.fixture(fixture)
        with harness.Workdir(a.keep, "trace") as wd:
            d1, d2, td = (os.path.join(wd.path, x) for x in ("logs1", "logs2", "trace"))
            env = harness.make_env({"NCCL_INSPECTOR_TRACE_DIR": td}, dump_dir=d1)
            cmd = harness.replay_cmd(a.replay, a.plugin, [src], abi="trace", threads=threads)
            r1 = harness.run(cmd, env, wd.cwd, a.timeout)
            problems = ["first replay rc %s" % r1.rc] if r1.rc else []
            problems += harness.sanitizer_reports(r1.stderr)
            exp = harness.fixture_expectation([src], harness.RunConfig(env))
            errors, _ = logcheck.check_dump(d1, exp, window=r1.window, pids={r1.pid})
            problems += errors.items[:5]
            traces = glob.glob(os.path.join(td, "*.trace.jsonl"))
            if len(traces) != 1:
                problems.append("expected one trace file, found %s" % traces)
            else:
                with open(traces[0]) as f:
                    lines = [json.loads(l) for l in f]      # every line parses
                with gzip.open(src, "rt") as f:
                    orig = [json.loads(l) for l in f]
                # every Coll/P2p/KernelCh start the fixture has, the trace has (mask 70)
                for t in (2, 4, 64):
                    n1 = sum(1 for o in orig if o["cb"] == "start" and o["type"] == t)
                    n2 = sum(1 for o in lines if o["cb"] == "start" and o["type"] == t)
                    if n1 != n2:
                        problems.append("type %d: %d starts in the fixture, %d in the trace" % (t, n1, n2))
                cfg = oracle.Config()
                if expected_keys(src, cfg) != expected_keys(traces[0], cfg):
                    problems.append("the oracle expects other records from the trace")
                env2 = harness.make_env({}, dump_dir=d2)
                r2 = harness.run(harness.replay_cmd(a.replay, a.plugin, [traces[0]], abi="trace"),
                                 env2, wd.cwd, a.timeout)
                if r2.rc:
                    problems.append("second replay rc %s" % r2.rc)
                p1, p2 = perf_set(d1), perf_set(d2)
                if not p1 or p1 != p2:
                    problems.append("records differ: %d live, %d from the trace" % (len(p1), len(p2)))
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s" % (name, "\n  ".join(problems))
            return True, "OK %s: %d records, replayed identically from the trace" % (name, len(p1))
    labels = ["trace", "threads"] if threads else ["trace"]
    return harness.Case(name, fn, labels=labels, timeout=120)


def unwritable(a):
    with harness.Workdir(a.keep, "trace") as wd:
        blocker = os.path.join(wd.path, "file")
        open(blocker, "w").close()
        env = harness.make_env({"NCCL_INSPECTOR_TRACE_DIR": os.path.join(blocker, "t")},
                               dump_dir=os.path.join(wd.path, "logs"))
        src = harness.fixture("2.28.9/ar")
        r = harness.run(harness.replay_cmd(a.replay, a.plugin, [src]), env, wd.cwd, a.timeout)
        warns = [l for l in r.stderr.splitlines() if "NCCL WARN" in l and "TRACE_DIR" in l]
        exp = harness.fixture_expectation([src], harness.RunConfig(env))
        errors, _ = logcheck.check_dump(os.path.join(wd.path, "logs"), exp, window=r.window,
                                        pids={r.pid})
        if r.rc or len(warns) != 1 or errors.items:
            wd.failed = True
            return False, "FAIL trace.unwritable: rc %s, %d warnings, %s" % (r.rc, len(warns), errors.items[:3])
        return True, "OK trace.unwritable: " + warns[0].strip()


LIVE_SETS = {
    # tests/data/live: the PyTorch validation workload in trace mode
    "live": [("live/live-r0.trace.jsonl.gz", "live/live-r0.log.gz"),
             ("live/live-r1.trace.jsonl.gz", "live/live-r1.log.gz")],
    # a CUDA-graph-captured loop (tools/validate/graph.py) in trace mode: NCCL 2.28.9 starts
    # the Group and Coll events of each graph replay on another thread, with new seq numbers
    "graph": [("nccl-2.28.9-h200x2/graph-r0.jsonl.gz", "graph/graph-r0.log.gz"),
              ("nccl-2.28.9-h200x2/graph-r1.jsonl.gz", "graph/graph-r1.log.gz")],
}


def live_case(name):
    """Each trace a live run wrote, replayed: exactly the records that run wrote."""
    def fn(a):
        problems, n = [], 0
        with harness.Workdir(a.keep, "trace") as wd:
            for trace, log in LIVE_SETS[name]:
                t = os.path.join(harness.DATA, trace)
                base = os.path.basename(log)[:-len(".log.gz")]
                out = os.path.join(wd.path, base)
                env = harness.make_env({}, dump_dir=out)
                r = harness.run(harness.replay_cmd(a.replay, a.plugin, [t], abi="trace"), env,
                                wd.cwd, a.timeout)
                if r.rc:
                    problems.append("%s: replay rc %s" % (base, r.rc))
                live_dir = os.path.join(wd.path, base + "-live")
                os.makedirs(live_dir)
                with gzip.open(os.path.join(harness.DATA, log), "rt") as fi, \
                        open(os.path.join(live_dir, base + ".log"), "w") as fo:
                    fo.write(fi.read())
                p_live, p_rep = perf_set(live_dir), perf_set(out)
                n += len(p_live)
                if not p_live or p_live != p_rep:
                    problems.append("%s: %d live records, %d replayed, equal: %s"
                                    % (base, len(p_live), len(p_rep), p_live == p_rep))
            if problems or not n:
                wd.failed = True
                return False, "FAIL trace.%s: %s" % (name, "; ".join(problems) or "no live data")
        return True, "OK trace.%s: %d live records reproduced by replaying their traces" % (name, n)
    return harness.Case("trace." + name, fn, labels=["trace"], timeout=120)


def cases():
    out = [case("trace.%s" % f.replace("/", "."), f)
           for f in ("2.28.9/ar", "2.28.9/sr", "2.28.9/torch-1735", "2.28.9/agg", "2.27.7/sr",
                     "2.30.7/ar", "2.28.9/vsmall-r1")]
    out += [case("trace.%s.threads" % f.replace("/", "."), f, threads=True)
            for f in ("2.28.9/threads", "2.28.9/sr")]
    out.append(harness.Case("trace.unwritable", unwritable, labels=["trace"], timeout=60))
    out += [live_case(name) for name in sorted(LIVE_SETS)]
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

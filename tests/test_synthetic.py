#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Synthetic traffic (inspector-replay --synthetic, CONTRACTS.md sections 1 and 3): the replay
writes a truth file (one line per op per rank); every truth line that passes the plugin's
filters must match exactly one record (start_ts_ns, exec_time_ns/us, sizes, sn, count,
datatype, nchannels, peer, bandwidths, header), and nothing else may be written.  With
--late-rank R --late-us U, rank R's records start U us after the others' for the same op.
  synth.8ranks[.procs]   8 ranks, rank 3 200 us late, every size (min size 0); in one process
                         and one process per rank
  synth.8ranks.minsize   the same with the default 8192-byte filter
  synth.p2p              4 ranks on 2 nodes, 2 communicators named, ring exchange, rank 1 late
  synth.abi4             the v4 table
"""
import collections
import os
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402

MIN0 = {"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0"}


def late_problems(files, late_rank, late_us):
    """Rank `late_rank` starts each op late_us after the median of the others' starts."""
    starts = collections.defaultdict(dict)   # (comm, kind, func, sn) -> rank -> start ns
    for lines in files.values():
        for line in lines:
            if line.kind not in ("coll_perf", "p2p_perf"):
                continue
            k = line.kind[:-5]
            p = line.obj[line.kind]
            key = (line.obj["header"]["id"], k, p.get(k), p.get(k + "_sn"))
            starts[key][line.obj["header"]["rank"]] = p.get(k + "_start_ts_ns")
    problems, checked = [], 0
    for key, by_rank in sorted(starts.items()):
        if late_rank not in by_rank or len(by_rank) < 2:
            continue
        others = [v for r, v in by_rank.items() if r != late_rank]
        d = by_rank[late_rank] - statistics.median(others)
        checked += 1
        if abs(d - late_us * 1000) > max(0.1 * late_us * 1000, 2000):
            problems.append("%s %s %s sn %s: late rank %d starts %.1f us after the others, "
                            "expected about %.1f" % (key[0], key[1], key[2], key[3], late_rank,
                                                     d / 1000, late_us))
    if not checked:
        problems.append("no op with records from rank %d and another rank" % late_rank)
    return problems, checked


def synth_case(name, synth_args, env_extra, procs=False, abi=None, late=None, labels=(),
               timeout=120):
    def fn(a):
        with harness.Workdir(a.keep, "synth") as wd:
            os.makedirs(wd.dump)
            truth = os.path.join(wd.path, "truth.jsonl")
            env = harness.make_env(env_extra, dump_dir=wd.dump)
            cfg = harness.RunConfig(env)
            cmd = harness.replay_cmd(a.replay, a.plugin, abi=abi, procs=procs,
                                     synthetic=synth_args, truth=truth)
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            problems = []
            note = ""
            if r.timed_out or r.rc != 0:
                problems.append("replay failed: rc %s" % r.rc)
            problems += harness.sanitizer_reports(r.stderr)
            if not os.path.exists(truth) or os.path.getsize(truth) == 0:
                problems.append("no truth file written")
                exp_n = found_n = 0
            else:
                ctxs, recs, tprobs = harness.truth_expectation(truth, cfg)
                problems += tprobs
                exp = logcheck.Expectation(recs, ctxs)
                errors, summary = logcheck.check_dump(wd.dump, exp, window=r.window,
                                                      pids=None if procs else {r.pid})
                problems += errors.items
                exp_n, found_n = summary["expected"], summary["found"]
                if not recs:
                    problems.append("the truth file expects no record at all")
                if late is not None:
                    files = logcheck.read_dump_dir(wd.dump, logcheck.Errors())
                    lp, n_late = late_problems(files, *late)
                    problems += lp
                    note = "; rank %d %s us late in all %d ops" % (late[0], late[1], n_late)
            if problems:
                wd.failed = True
                errs = logcheck.Errors()
                errs.items = problems
                return False, "FAIL %s: %d problems (records expected %d, found %d)\n%s\n" \
                              "  repro: %s\n  stderr:\n%s" % (
                                  name, len(problems), exp_n, found_n, errs.render(),
                                  harness.shell_line(cmd, env_extra), harness._tail(r.stderr))
            return True, "OK %s: records expected %d, found %d%s" % (name, exp_n, found_n, note)
    return harness.Case(name, fn, labels=["synthetic"] + list(labels), timeout=timeout)


def cases():
    late8 = ["--ranks", "8", "--late-rank", "3", "--late-us", "200"]
    return [
        synth_case("synth.8ranks", late8, MIN0, late=(3, 200)),
        synth_case("synth.8ranks.procs", late8, MIN0, procs=True, late=(3, 200),
                   labels=["threads"]),
        synth_case("synth.8ranks.minsize", late8, {}, late=(3, 200)),
        synth_case("synth.p2p", ["--ranks", "4", "--nodes", "2", "--comms", "2", "--p2p",
                                 "--iters", "5", "--comm-name", "tp grp", "--late-rank", "1",
                                 "--late-us", "50"], MIN0, late=(1, 50)),
        synth_case("synth.abi4", ["--ranks", "2", "--iters", "5", "--p2p"], MIN0, abi="4"),
    ]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

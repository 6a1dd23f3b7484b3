#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hand-made edge-case traces (tests/data/edge, written by make_edge_traces.py), checked
against the oracle with kernel timing required (default) and not (REQUIRE_KERNEL_TIMING=0):
  late_channel   a channel starting after its sibling stopped and after a later op completed
  channels       channel ids 40/63, P2p on 16/17/63, send to self, p2p_sn gaps, comm id with
                 leading zeros, a comm name needing JSON escapes, 4 ranks on 2 nodes
  no_ptimer      zero start/stop pTimers, no state-22 record, a channel that never comes
  no_kernel      a stopped collective without kernel events (collective_cpu when allowed)
  garbage_nch    nChannels 224 and 0 with two channels' kernel events [RCCL]: recorded from
                 the channels that came (also verbose: their channel ids), nothing lost
  garbage_nch_late  nChannels 224 and a channel that starts after the op's other channel
                 stopped and after the next op began: it still belongs to the first op, and
                 the next op keeps its own channels
  dda            CollApi events with no Coll or kernel event (RCCL's DDA path): no record
The .quiet cases also require a clean teardown: no WARN, and no INFO about ops left in flight,
untimed, overtaken or refused kernel events (none of these traces' ops may end up there).
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402
from harness import fixture_case  # noqa: E402

REQ = "NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING"
EDGES = ["late_channel", "late_channel_v4", "channels", "no_ptimer", "no_kernel", "garbage_nch",
         "garbage_nch_late", "dda"]
# What the plugin says at teardown about ops that did not end as records (not its start-up
# line about hang detection, "an op in flight for over N s").
NOT_RECORDED = re.compile(r"in flight at teardown|no GPU kernel timing|never received every kernel event|"
                          r"kernel events refused", re.I)


def quiet_teardown_case(name, edge, env_extra=None, **kw):
    """The oracle's records, and a teardown that reports nothing lost or odd."""
    def fn(a):
        path = harness.fixture("edge/" + edge)
        with harness.Workdir(a.keep, "edge") as wd:
            os.makedirs(wd.dump)
            env = harness.make_env(env_extra, dump_dir=wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, [path], **kw)
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            problems = []
            if r.timed_out or r.rc != 0:
                problems.append("replay failed: rc %s" % r.rc)
            exp = harness.fixture_expectation([path], harness.RunConfig(env))
            errors, summary = logcheck.check_dump(wd.dump, exp, window=r.window, pids={r.pid})
            problems += errors.items
            problems += harness.sanitizer_reports(r.stderr)
            problems += ["unexpected WARN: %s" % l for l in r.warn_lines()]
            problems += ["teardown reports ops not recorded: %s" % l
                         for l in r.stderr.splitlines() if NOT_RECORDED.search(l)]
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n  repro: %s\n  stderr:\n%s" % (
                    name, "\n  ".join(problems[:20]),
                    harness.shell_line(cmd, dict(env_extra or {}, NCCL_INSPECTOR_ENABLE="1",
                                                 NCCL_INSPECTOR_DUMP_DIR=wd.dump)),
                    harness._tail(r.stderr))
            return True, "OK %s: records expected %d, found %d, clean teardown" % (
                name, summary["expected"], summary["found"])
    return harness.Case(name, fn, labels=["edge"], timeout=60)


def cases():
    out = []
    for e in EDGES:
        out.append(fixture_case("edge.%s" % e, ["edge/" + e], labels=["edge"], abi="trace"))
        out.append(fixture_case("edge.%s.default-abi" % e, ["edge/" + e], labels=["edge"]))
        out.append(fixture_case("edge.%s.nokernreq" % e, ["edge/" + e], labels=["edge"],
                                abi="trace", env_extra={REQ: "0"}))
    out.append(fixture_case("edge.channels.minsize.0", ["edge/channels"], labels=["edge"],
                            abi="trace", env_extra={"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0"}))
    out.append(fixture_case("edge.late_channel.threads", ["edge/late_channel"],
                            labels=["edge", "threads"], threads=True))
    out.append(fixture_case("edge.garbage_nch.verbose", ["edge/garbage_nch"], labels=["edge"],
                            abi="trace", env_extra={"NCCL_INSPECTOR_DUMP_VERBOSE": "1"}))
    out.append(fixture_case("edge.garbage_nch.threads", ["edge/garbage_nch"],
                            labels=["edge", "threads"], threads=True))
    for e in ("garbage_nch", "garbage_nch_late", "dda"):
        out.append(quiet_teardown_case("edge.%s.quiet" % e, e, abi="trace"))
        out.append(quiet_teardown_case("edge.%s.quiet.nokernreq" % e, e, {REQ: "0"},
                                       abi="trace"))
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

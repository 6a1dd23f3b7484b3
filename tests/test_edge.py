#!/usr/bin/env python3
"""Hand-made edge-case traces (tests/data/edge, written by make_edge_traces.py), checked
against the oracle with kernel timing required (default) and not (REQUIRE_KERNEL_TIMING=0):
  late_channel   a channel starting after its sibling stopped and after a later op completed
  channels       channel ids 40/63, P2p on 16/17/63, send to self, p2p_sn gaps, comm id with
                 leading zeros, a comm name needing JSON escapes, 4 ranks on 2 nodes
  no_ptimer      zero start/stop pTimers, no state-22 record, a channel that never comes
  no_kernel      a stopped collective without kernel events (collective_cpu when allowed)
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import fixture_case  # noqa: E402

REQ = "NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING"
EDGES = ["late_channel", "late_channel_v4", "channels", "no_ptimer", "no_kernel"]


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
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

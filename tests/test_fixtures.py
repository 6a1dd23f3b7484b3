#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every recorded fixture replayed through the plugin, checked record by record against the
oracle (tests/lib/oracle.py, default configuration: min size 8192, P2P on, kernel timing required).

Cases:
  trace.<ver>.<name>     --abi trace: each trace through the ABI it was recorded with (v4/v5/v6)
  default.<ver>.<name>   the replay's default ABI (the newest the plugin exports)
  threads.<name>         --threads: each recorded thread on its own thread, concurrently
  abi4.<name>, abi5.<name>  2.28.9 traces driven through the older tables
  torch-pair[.procs|.threads]  the two PyTorch processes in one process / two processes
  repeat.<name>          --repeat: init..finalize several times in one process
  bounds.ar4m-p2p-b2b    a busy GPU-truth recording (tests/data/gpu-truth), NCCL's proxy thread far
                         behind: the records the oracle's, and beside them bound lines (ops left
                         out, bracketed: core/judge.h) of the right shape, none for an op with a
                         record, and dump_stats' *_bounded_total
Run alone: test_fixtures.py [--case NAME] [--replay BIN --plugin SO]; --list shows the cases.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
from harness import fixture_case  # noqa: E402

FIXTURES = [
    "2.28.9/ar", "2.28.9/ag", "2.28.9/rs", "2.28.9/bc", "2.28.9/reduce", "2.28.9/sr",
    "2.28.9/tree", "2.28.9/ll128", "2.28.9/agg", "2.28.9/threads", "2.28.9/ar_full",
    "2.28.9/torch-1735", "2.28.9/torch-1736", "2.28.9/alltoall",
    "2.27.7/ar", "2.27.7/sr", "2.30.7/ar", "2.30.7/sr", "2.30.7/ce_ag",
    # recorded by this project on 2 x H200 (tests/data/README.md, "Recorded by Inspector")
    "2.28.9/vsmall-r0", "2.28.9/vsmall-r1", "2.28.9/va2a-r0", "2.28.9/va2a-r1",
    "2.28.9/graph-r0", "2.28.9/graph-r1",
]
BIG = ["2.28.9/vfull-r0", "2.28.9/vfull-r1"]   # ~107k lines each: --abi trace only
TORCH = ["2.28.9/torch-1735", "2.28.9/torch-1736"]


def cases():
    out = []
    for f in FIXTURES:
        tag = f.replace("/", ".")
        out.append(fixture_case("trace." + tag, [f], labels=["fixtures"], abi="trace"))
        out.append(fixture_case("default." + tag, [f], labels=["fixtures"]))
    for f in BIG:
        out.append(fixture_case("trace." + f.replace("/", "."), [f], labels=["fixtures"],
                                abi="trace", timeout=240))
    out.append(fixture_case("threads.vsmall", ["2.28.9/vsmall-r1"], labels=["fixtures", "threads"],
                            threads=True, timeout=120))
    for f in ("ar", "agg", "threads", "sr", "graph-r0", "alltoall"):
        out.append(fixture_case("threads." + f, ["2.28.9/" + f], labels=["fixtures", "threads"],
                                threads=True, timeout=120))
    out.append(fixture_case("torch-pair", TORCH, labels=["fixtures"]))
    out.append(fixture_case("torch-pair.threads", TORCH, labels=["fixtures", "threads"],
                            threads=True, timeout=120))
    out.append(fixture_case("torch-pair.procs", TORCH, labels=["fixtures", "threads"],
                            procs=True, timeout=120))
    for f in ("ar", "sr", "torch-1735"):
        out.append(fixture_case("abi4." + f, ["2.28.9/" + f], labels=["fixtures"], abi="4"))
        out.append(fixture_case("abi5." + f, ["2.28.9/" + f], labels=["fixtures"], abi="5"))
    out.append(fixture_case("repeat.ar", ["2.28.9/ar"], labels=["fixtures"], repeat=3))
    busy = os.path.join(harness.DATA, "gpu-truth", "ar4m-p2p-b2b", "trace.jsonl.gz")

    def bounds(a):
        ok, msg = harness.replay_and_check(a, [busy], label="bounds.ar4m-p2p-b2b")
        if ok and "bound lines" not in msg:  # a recording with 191 ops left out: bounds expected
            return False, "FAIL bounds.ar4m-p2p-b2b: no bound lines (%s)" % msg
        return ok, msg
    out.append(harness.Case("bounds.ar4m-p2p-b2b", bounds, labels=["fixtures"], timeout=90))
    out.append(fixture_case("repeat.sr.threads", ["2.28.9/sr"], labels=["fixtures", "threads"],
                            repeat=2, threads=True, timeout=120))
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

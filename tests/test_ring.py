#!/usr/bin/env python3
"""Ring overflow.  NCCL_INSPECTOR_DUMP_THREAD_ENABLE=0 (no dump thread: the rings are drained
only at communicator finalize) with a ring of 16 records: each communicator context writes
exactly the first 16 records of that kind to complete, in completion order; its dump_stats
count the rest as dropped (expected - 16); an `NCCL WARN` reports the drops (at least one line
matching /drop/, at most one per context that dropped).
  ring.coll16.ar        NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=16 on ar (64 records per context)
  ring.coll16.torch     on torch-1735: context 1 drops 8 collectives, context 2 (6) drops none;
                        P2P records (their own ring) all kept
  ring.p2p16.sr         NCCL_INSPECTOR_DUMP_P2P_RING_SIZE=16 on sr (128 per context)
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import fixture_case  # noqa: E402

OFF = {"NCCL_INSPECTOR_DUMP_THREAD_ENABLE": "0"}


def cases():
    return [
        fixture_case("ring.coll16.ar", ["2.28.9/ar"], labels=["ring"], ring={"coll": 16},
                     check_order=True, expect_warn=[r"drop"], warn_max=2,
                     env_extra=dict(OFF, NCCL_INSPECTOR_DUMP_COLL_RING_SIZE="16")),
        fixture_case("ring.coll16.torch", ["2.28.9/torch-1735"], labels=["ring"],
                     ring={"coll": 16}, check_order=True, expect_warn=[r"drop"], warn_max=1,
                     env_extra=dict(OFF, NCCL_INSPECTOR_DUMP_COLL_RING_SIZE="16")),
        fixture_case("ring.p2p16.sr", ["2.28.9/sr"], labels=["ring"], ring={"p2p": 16},
                     check_order=True, expect_warn=[r"drop"], warn_max=2,
                     env_extra=dict(OFF, NCCL_INSPECTOR_DUMP_P2P_RING_SIZE="16")),
    ]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

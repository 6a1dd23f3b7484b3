#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Ring overflow.  NCCL_INSPECTOR_DUMP_THREAD_ENABLE=0 (no dump thread: the rings are drained
only at communicator finalize) with a ring of 16 records: each communicator context writes
exactly the first 16 records of that kind to complete, in completion order; its dump_stats
count the rest as dropped (expected - 16); one `NCCL WARN` line says records are being dropped
and why (the dump thread is off), and one at exit gives the process's total, computed here from
the trace (its records per context less the 16 kept).
  ring.coll16.ar        NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=16 on ar (64 records per context)
  ring.coll16.torch     on torch-1735: context 1 drops 8 collectives, context 2 (6) drops none;
                        P2P records (their own ring) all kept
  ring.p2p16.sr         NCCL_INSPECTOR_DUMP_P2P_RING_SIZE=16 on sr (128 per context)
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
from harness import fixture_case  # noqa: E402

OFF = {"NCCL_INSPECTOR_DUMP_THREAD_ENABLE": "0"}
WHY = r"is dropping records .*the dump thread is off"


def total(n):
    return r"Inspector: %d records were dropped in all" % n


def cases():
    return [
        fixture_case("ring.coll16.ar", ["2.28.9/ar"], labels=["ring"], ring={"coll": 16},
                     check_order=True, expect_warn=[WHY, total(2 * (64 - 16))], warn_max=1,
                     env_extra=dict(OFF, NCCL_INSPECTOR_DUMP_COLL_RING_SIZE="16")),
        fixture_case("ring.coll16.torch", ["2.28.9/torch-1735"], labels=["ring"],
                     ring={"coll": 16}, check_order=True, expect_warn=[WHY, total(24 - 16)],
                     warn_max=1,
                     env_extra=dict(OFF, NCCL_INSPECTOR_DUMP_COLL_RING_SIZE="16")),
        fixture_case("ring.p2p16.sr", ["2.28.9/sr"], labels=["ring"], ring={"p2p": 16},
                     check_order=True, expect_warn=[WHY, total(2 * (128 - 16))], warn_max=1,
                     env_extra=dict(OFF, NCCL_INSPECTOR_DUMP_P2P_RING_SIZE="16")),
    ]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

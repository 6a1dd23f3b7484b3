#!/usr/bin/env python3
"""Malformed configuration values: the replay succeeds, its stderr has an `NCCL WARN` line
naming the variable and the value, and the output equals the default-configuration output
(the oracle with the defaults: min size 8192, P2P on, kernel timing required, not verbose,
write at finalize, rings big enough).
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import fixture_case  # noqa: E402

BAD = [
    ("minsize.abc", "2.28.9/ar", {"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "abc"}),
    ("minsize.-1", "2.28.9/ar", {"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "-1"}),
    ("minsize.12abc", "2.28.9/ag", {"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "12abc"}),
    ("interval.-5x", "2.28.9/ar", {"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS": "-5x"}),
    ("interval.1e3", "2.28.9/sr", {"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS": "1e3"}),
    ("p2p.maybe", "2.28.9/sr", {"NCCL_INSPECTOR_ENABLE_P2P": "maybe"}),
    ("p2p.maybe.torch", "2.28.9/torch-1735", {"NCCL_INSPECTOR_ENABLE_P2P": "maybe"}),
    ("require.perhaps", "2.28.9/ar", {"NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING": "perhaps"}),
    ("verbose.loud", "2.28.9/ar", {"NCCL_INSPECTOR_DUMP_VERBOSE": "loud"}),
    ("ring.lots", "2.28.9/ar", {"NCCL_INSPECTOR_DUMP_COLL_RING_SIZE": "lots",
                                "NCCL_INSPECTOR_DUMP_THREAD_ENABLE": "0"}),
    ("all-at-once", "2.28.9/torch-1736", {"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "abc",
                                          "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS": "-5x",
                                          "NCCL_INSPECTOR_ENABLE_P2P": "maybe"}),
]


def cases():
    return [fixture_case("bad." + name, [trace], labels=["config"], env_extra=env)
            for name, trace, env in BAD]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

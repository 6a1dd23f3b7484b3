#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NCCL_INSPECTOR_DUMP_VERBOSE=1: every perf record also carries event_trace_sn and
event_trace_ts (CONTRACTS.md section 2) whose kernel_events are exactly the op's channels in
the trace (shared channels of grouped ops, P2P channels 16+, ids 40/63 included); per channel
kernel_start < kernel_record < kernel_stop (sequence numbers strictly, host timestamps <=);
the op's start before its kernels' starts and before its stop; sequence numbers 1-based;
timestamps within the run.  All other fields as without verbose.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
from harness import fixture_case  # noqa: E402

V = {"NCCL_INSPECTOR_DUMP_VERBOSE": "1"}


def cases():
    out = []
    for f in ("2.28.9/ar", "2.28.9/agg", "2.28.9/sr", "2.27.7/sr", "2.30.7/ar", "edge/channels",
              "edge/late_channel"):
        out.append(fixture_case("verbose." + f.replace("/", "."), [f], labels=["verbose"],
                                env_extra=V, abi="trace"))
    out.append(fixture_case("verbose.torch-pair.minsize.0",
                            ["2.28.9/torch-1735", "2.28.9/torch-1736"], labels=["verbose"],
                            env_extra=dict(V, NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES="0")))
    out.append(fixture_case("verbose.threads.threads", ["2.28.9/threads"],
                            labels=["verbose", "threads"], env_extra=V, threads=True,
                            timeout=120))
    out.append(fixture_case("verbose.interval.0.agg", ["2.28.9/agg"],
                            labels=["verbose", "threads"],
                            env_extra=dict(V, NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS="0")))
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

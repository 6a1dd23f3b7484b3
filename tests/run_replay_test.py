#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Replay trace(s) through the plugin and check the dump against the oracle (used by ctest).

    run_replay_test.py --replay BIN --plugin SO --trace FILE [--trace FILE2 ...]
        [--abi trace|4|5|6] [--threads] [--procs] [--repeat N]
        [--env K=V ...] [--ring coll=16] [--check-order]
        [--expect-warn REGEX ...] [--warn-max N] [--keep] [--timeout S]

Makes a fresh temporary dump directory, sets NCCL_INSPECTOR_ENABLE=1 and
NCCL_INSPECTOR_DUMP_DIR (the rest of NCCL_INSPECTOR_* is scrubbed from the inherited
environment, then --env applies), runs inspector-replay, and checks every line of every
*.log file with tests/lib/logcheck.py against tests/lib/oracle.py, configured as the environment
implies (NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES, NCCL_INSPECTOR_ENABLE_P2P,
NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING, NCCL_INSPECTOR_DUMP_VERBOSE; invalid values mean the
default, and a `NCCL WARN` naming the variable and value is then required).

--ring KIND=N   the plugin keeps only N records of KIND per communicator context (e.g. the
                dump thread is off and NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=N): the first N to
                complete are written, dump_stats must count the rest as dropped.
--check-order   records of each context must appear in completion order.
--expect-warn   a regex that must match at least one (at most --warn-max) `NCCL WARN` line.

Exit 0 and one summary line on success; 1 with the mismatches otherwise.
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402


def main(argv=None):
    ap = harness.common_args(__doc__.splitlines()[0])
    ap.add_argument("--trace", action="append", required=True)
    ap.add_argument("--abi", choices=["trace", "4", "5", "6"])
    ap.add_argument("--threads", action="store_true")
    ap.add_argument("--procs", action="store_true")
    ap.add_argument("--repeat", type=int)
    ap.add_argument("--env", action="append", default=[], metavar="K=V")
    ap.add_argument("--ring", action="append", default=[], metavar="KIND=N")
    ap.add_argument("--check-order", action="store_true")
    ap.add_argument("--expect-warn", action="append", default=[], metavar="REGEX")
    ap.add_argument("--warn-max", type=int)
    a = ap.parse_args(argv)
    harness.check_binaries(a)
    env = {}
    for kv in a.env:
        if "=" not in kv:
            ap.error("--env wants K=V, got %r" % kv)
        k, v = kv.split("=", 1)
        env[k] = v
    ring = {}
    for kv in a.ring:
        k, _, v = kv.partition("=")
        if k not in ("coll", "p2p") or not v.isdigit():
            ap.error("--ring wants coll=N or p2p=N, got %r" % kv)
        ring[k] = int(v)
    for t in a.trace:
        if not os.path.exists(t):
            ap.error("no such trace: %s" % t)
    ok, msg = harness.replay_and_check(
        a, a.trace, env_extra=env, abi=a.abi, threads=a.threads, procs=a.procs,
        repeat=a.repeat, ring=ring or None, check_order=a.check_order,
        expect_warn=a.expect_warn, warn_max=a.warn_max)
    print(msg, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Dump interval: -1 (default, write at finalize), 0 (continuous) and 1000 us all lose
nothing: the same record set as the oracle's, each record exactly once, dump_stats totals
consistent across the several dumps of a context and in file order.
With -1 (and unset) each context is dumped once, at its finalize (single-dump cases).

Cases interval.<v>.<fixture> and, with the dump thread racing the replay's threads,
interval.<v>.<fixture>.threads (label threads).

exit.<v>.<fixture>: the same trace with its `finalize` lines removed (a job that never destroys
its communicators, as PyTorch jobs often do): every record still lands, written at process exit.
"""
import gzip
import os
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
from harness import fixture_case  # noqa: E402

VAR = "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS"


def exit_case(v, fixture):
    """Replay `fixture` without its finalize lines: the records must be written at exit."""
    def fn(a):
        src = harness.fixture(fixture)
        with tempfile.TemporaryDirectory(prefix="inspector-exit-") as tmp:
            stripped = os.path.join(tmp, os.path.basename(src).replace(".gz", ""))
            with gzip.open(src, "rt") as fi, open(stripped, "w") as fo:
                fo.writelines(l for l in fi if '"cb":"finalize"' not in l)
            return harness.replay_and_check(a, [stripped], label="exit.%s.%s" % (v, fixture),
                                            env_extra={VAR: v})
    return harness.Case("exit.%s.%s" % (v, fixture.replace("2.28.9/", "")), fn,
                        labels=["intervals"], timeout=90)


def cases():
    out = [exit_case(v, "2.28.9/" + f) for v in ("-1", "1000") for f in ("ar", "torch-1735")]
    for v in ("-1", "0", "1000"):
        for f in ("ar", "sr"):
            out.append(fixture_case("interval.%s.%s" % (v, f), ["2.28.9/" + f],
                                    labels=["intervals", "threads"], env_extra={VAR: v}))
    # -1 writes only at communicator teardown: one dump per context (these fixtures' contexts
    # hold far fewer records than a ring)
    for f in ("ar", "torch-1735"):
        out.append(fixture_case("interval.-1.%s.single-dump" % f, ["2.28.9/" + f],
                                labels=["intervals"], env_extra={VAR: "-1"}, single_dump=True))
        out.append(fixture_case("interval.unset.%s.single-dump" % f, ["2.28.9/" + f],
                                labels=["intervals"], single_dump=True))
    for v in ("0", "1000"):
        out.append(fixture_case("interval.%s.threads" % v, ["2.28.9/threads"],
                                labels=["intervals", "threads"], env_extra={VAR: v},
                                threads=True, timeout=120))
        out.append(fixture_case("interval.%s.torch-pair.threads" % v,
                                ["2.28.9/torch-1735", "2.28.9/torch-1736"],
                                labels=["intervals", "threads"], env_extra={VAR: v},
                                threads=True, timeout=120))
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

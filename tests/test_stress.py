#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Races between the dump thread, communicator finalize and the replayed threads: the
concurrent cases replayed many times, three replays at once (to add preemption), each dump
checked in full against the oracle (record set, fields, dump_stats sums and file order).
  stress.interval0.threads       threads fixture, --threads, dump interval 0, x30 (10 rounds of 3)
  stress.interval1000.torch      torch pair, --threads, interval 1000 us, x30 (10 rounds of 3)
  stress.interval0.sr.verbose    sr fixture, --threads, interval 0, verbose, x30 (10 rounds of 3)
"""
import os
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

ROUNDS = 10
PARALLEL = 3
INTERVAL = "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS"


def stress_case(name, traces, env_extra):
    def fn(a):
        paths = [harness.fixture(t) for t in traces]
        failures = []
        runs = 0
        for rnd in range(ROUNDS):
            results = [None] * PARALLEL

            def one(i):
                results[i] = harness.replay_and_check(a, paths, env_extra=env_extra,
                                                      threads=True, label="%s#%d.%d"
                                                      % (name, rnd, i))
            ts = [threading.Thread(target=one, args=(i,)) for i in range(PARALLEL)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            runs += PARALLEL
            failures += [msg for ok, msg in results if not ok]
            if failures:
                break
        if failures:
            return False, "FAIL %s: %d of %d runs failed; first:\n%s" % (
                name, len(failures), runs, failures[0])
        return True, "OK %s: %d runs" % (name, runs)
    return harness.Case(name, fn, labels=["stress", "threads"], timeout=240)


def cases():
    return [
        stress_case("stress.interval0.threads", ["2.28.9/threads"], {INTERVAL: "0"}),
        stress_case("stress.interval1000.torch", ["2.28.9/torch-1735", "2.28.9/torch-1736"],
                    {INTERVAL: "1000"}),
        stress_case("stress.interval0.sr.verbose", ["2.28.9/sr"],
                    {INTERVAL: "0", "NCCL_INSPECTOR_DUMP_VERBOSE": "1"}),
    ]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Ops left out as `unverified` are rare on a quiet host: every recording of tests/data made
on a quiet host (nccl-*/: the shared fixtures and this project's own; live/: a trace-mode
run) replayed through the plugin with its default settings, each through the ABI it was
recorded with; a recording fails when more than 1% of the ops it reported (dump_stats:
records + untimed + dropped, over its communicator contexts) are counted `unverified`.

Not here: tests/data/gpu-truth. Those runs were made to put NCCL's proxy thread hundreds of
works behind the GPU (ops back to back, a busy CPU, the old trace mode slowing the proxy),
where NCCL hands most ops another op's timestamps and leaving them out is right;
test_gpu_truth.py holds them against CUPTI (none written wrong, the ops NCCL gave right
written).

Cases:
  quiet-recordings  all of them in one replay each (about 2 s)
Run alone: test_unverified.py [--replay BIN --plugin SO]; --list shows the cases.
"""
import glob
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

MAX_SHARE = 0.01


def recordings():
    return (sorted(glob.glob(os.path.join(harness.DATA, "nccl-*", "*.jsonl.gz"))) +
            sorted(glob.glob(os.path.join(harness.DATA, "live", "*.trace.jsonl.gz"))))


def last_stats(dump):
    """The last dump_stats of each communicator context (comm id, rank) in the dump."""
    last = {}
    for f in sorted(glob.glob(os.path.join(dump, "*.log"))):
        with open(f) as fh:
            for line in fh:
                if '"dump_stats"' not in line:
                    continue
                j = json.loads(line)
                last[(j["header"]["id"], j["header"]["rank"])] = j["dump_stats"]
    return last


def counts(stats):
    """(ops reported, of those unverified), summed over contexts and kinds."""
    ops = unverified = 0
    for s in stats.values():
        for k in ("coll", "p2p"):
            ops += s[k + "_records_total"] + s[k + "_untimed_total"] + s[k + "_dropped_total"]
            unverified += s[k + "_untimed"]["unverified"]
    return ops, unverified


def quiet_recordings(a):
    problems, rows = [], []
    for trace in recordings():
        name = os.path.relpath(trace, harness.DATA)
        with harness.Workdir(a.keep, tag="unverified") as wd:
            os.makedirs(wd.dump)
            env = harness.make_env(dump_dir=wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, [trace], abi="trace") + ["--quiet"]
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            bad = harness.sanitizer_reports(r.stderr)
            if r.timed_out or r.rc != 0:
                bad.append("replay failed: rc %s%s" % (r.rc, " (timed out)" if r.timed_out else ""))
            ops, unverified = counts(last_stats(wd.dump))
            if not ops:
                bad.append("no op reported in dump_stats")
            elif unverified > MAX_SHARE * ops:
                bad.append("%d of %d ops unverified (%.1f%%, at most %.0f%%)"
                           % (unverified, ops, 100.0 * unverified / ops, 100 * MAX_SHARE))
            if bad:
                wd.failed = True
                problems += ["%s: %s" % (name, b) for b in bad]
            rows.append("%-45s %6d ops %5d unverified" % (name, ops, unverified))
    table = "\n".join(rows)
    if problems:
        return False, "FAIL quiet-recordings:\n%s\n%s" % ("\n".join(problems), table)
    return True, "OK quiet-recordings: %d recordings\n%s" % (len(rows), table)


def cases():
    return [harness.Case("quiet-recordings", quiet_recordings, labels=["fixtures"], timeout=120)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

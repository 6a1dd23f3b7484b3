#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The alert rules (prometheus/inspector-rules.yml) with Prometheus's own promtool (Debian's
prometheus package, installed by .ci/run; the cases skip with a note when it is absent):
  rules.check    `promtool check rules` accepts the file
  rules.test     `promtool test rules tests/prometheus/inspector-rules.test.yml`: each alert
                 fires where planted with the labels naming it, not before its for:, and
                 nothing fires for a clean job, one slow op, a short burst of drops, an op
                 just over the hang threshold once, or pairs within a node
  rules.mutants  the unit tests catch each realistic mistake in the rules (a for: too short
                 for one slow op, node pairs within a node in the median, 2-rank
                 communicators, the late rank's sign, a threshold): every mutant fails them
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

RULES = os.path.join(HERE, "..", "prometheus", "inspector-rules.yml")
UNIT = os.path.join(HERE, "prometheus", "inspector-rules.test.yml")
PROMTOOL = shutil.which("promtool")

# (what the mistake is, text in the rules, its replacement)
MUTANTS = [
    ("NcclRankLate's for: shorter than R + a dump: one late op fires it",
     "            and on (cluster, slurm_job_id, comm_id) (nccl:comm_ranks:count5m >= 3)\n"
     "        for: 10m", "            and on (cluster, slurm_job_id, comm_id) (nccl:comm_ranks:count5m >= 3)\n"
     "        for: 3m"),
    ("NcclSlowLink's for: shorter than R: one slow transfer fires it",
     "(nccl:p2p_node_pairs:count5m >= 3)\n        for: 10m", "(nccl:p2p_node_pairs:count5m >= 3)\n        for: 3m"),
    ("NcclRecordsLost's for: shorter than R: one burst of drops fires it",
     "nccl:alert_threshold:records_lost_share\n        for: 10m",
     "nccl:alert_threshold:records_lost_share\n        for: 2m"),
    ("NcclHang without for:: one op just over the threshold fires it",
     "nccl:alert_threshold:hang_seconds\n        for: 1m", "nccl:alert_threshold:hang_seconds\n        for: 0m"),
    ("pairs within a node kept in the median of the node pairs",
     "              unless on (cluster, slurm_job_id, node, peer_node)\n"
     "            label_replace(nccl:rank_node:info, \"peer_node\", \"$1\", \"node\", \"(.*)\"))",
     "            )"),
    ("2-rank communicators judged", "(nccl:comm_ranks:count5m >= 3)", "(nccl:comm_ranks:count5m >= 2)"),
    ("the late share's sign reversed (the longest kernels taken as late)",
     "          nccl:comm_collective_mean_seconds:median5m\n            - on (cluster, slurm_job_id, comm_id) group_right\n"
     "          nccl:rank_collective_mean_seconds:rate5m",
     "          nccl:rank_collective_mean_seconds:rate5m\n            - on (cluster, slurm_job_id, comm_id) group_left\n"
     "          nccl:comm_collective_mean_seconds:median5m"),
    ("the late-share threshold a quarter: others waiting 15% of their time for a rank missed",
     "expr: vector(0.1)", "expr: vector(0.25)"),
    ("the slow-link threshold above the fast pairs' ratio", "expr: vector(0.5)", "expr: vector(1.5)"),
    ("the hang threshold of seconds read as minutes", "expr: vector(300)", "expr: vector(18000)"),
    ("records lost over the kept records only (no reason in the denominator)",
     "+ sum without (reason) (rate(nccl_collectives_untimed_total[5m])),",
     "+ 0 * sum without (reason) (rate(nccl_collectives_untimed_total[5m])) + 1e9,"),
]


def promtool(*args):
    return subprocess.run([PROMTOOL] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)


def skipped(name):
    return True, "OK %s: skipped (promtool not installed)" % name


def check(a):
    if not PROMTOOL:
        return skipped("rules.check")
    r = promtool("check", "rules", RULES)
    if r.returncode or "SUCCESS" not in r.stdout:
        return False, "FAIL rules.check: %s" % r.stdout[-2000:]
    return True, "OK rules.check: %s" % r.stdout.strip().splitlines()[-1].strip()


def unit(a):
    if not PROMTOOL:
        return skipped("rules.test")
    r = promtool("test", "rules", UNIT)
    if r.returncode or "SUCCESS" not in r.stdout:
        return False, "FAIL rules.test: %s" % r.stdout[-4000:]
    return True, "OK rules.test: promtool test rules passes"


def mutants(a):
    """Each mutant of the rules, in a scratch copy of the layout (the unit file names the rules
    by a relative path), must fail the unit tests."""
    if not PROMTOOL:
        return skipped("rules.mutants")
    with open(RULES) as f:
        rules = f.read()
    with open(UNIT) as f:
        unit_text = f.read()
    survived = []
    tmp = tempfile.mkdtemp(prefix="inspector-rules-")
    try:
        os.makedirs(os.path.join(tmp, "prometheus"))
        os.makedirs(os.path.join(tmp, "tests", "prometheus"))
        unit_copy = os.path.join(tmp, "tests", "prometheus", "inspector-rules.test.yml")
        with open(unit_copy, "w") as f:
            f.write(unit_text)
        for what, old, new in MUTANTS:
            if rules.count(old) != 1:
                return False, "FAIL rules.mutants: the text of mutant %r is not in the rules once" % what
            with open(os.path.join(tmp, "prometheus", "inspector-rules.yml"), "w") as f:
                f.write(rules.replace(old, new))
            r = promtool("test", "rules", unit_copy)
            if r.returncode == 0:
                survived.append(what)
        # and the unmutated copy passes (so a failure above is the mutant's)
        with open(os.path.join(tmp, "prometheus", "inspector-rules.yml"), "w") as f:
            f.write(rules)
        if promtool("test", "rules", unit_copy).returncode:
            return False, "FAIL rules.mutants: the scratch copy fails unmutated"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if survived:
        return False, "FAIL rules.mutants: the unit tests miss: %s" % "; ".join(survived)
    return True, "OK rules.mutants: all %d mutants fail the unit tests" % len(MUTANTS)


def cases():
    return [harness.Case("rules.check", check, labels=["prom"], timeout=60),
            harness.Case("rules.test", unit, labels=["prom"], timeout=60),
            harness.Case("rules.mutants", mutants, labels=["prom"], timeout=120)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0], needs_binaries=False))

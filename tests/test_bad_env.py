#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Malformed configuration values: the replay succeeds, its stderr has an `NCCL WARN` line
naming the variable and the value, and the output equals the default-configuration output
(the oracle with the defaults: min size 8192, P2P on, kernel timing required, not verbose,
write at finalize, rings big enough).
Misspelled settings (typo.*): one `NCCL WARN` line names the unknown variable and the
closest setting (src/core/env.c); the output is the default one. Values with blanks around
them (blank.*) are the value. Another SDK's OTEL_* variables get no warning (otel.foreign).
The name lists (names.*): env.c's lists equal the names the sources read.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
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
    # hang detection's threshold: malformed, so the default (300 s), which no op of a
    # replay reaches: no hang line (logcheck knows none); the raised and lowered values are
    # held in C (unit_hang.env), where no real time passes
    ("hang.abc", "2.28.9/ar", {"NCCL_INSPECTOR_HANG_SECONDS": "abc"}),
    ("hang.-1", "2.28.9/ar", {"NCCL_INSPECTOR_HANG_SECONDS": "-1"}),
    ("hang.1e3", "2.28.9/sr", {"NCCL_INSPECTOR_HANG_SECONDS": "1e3"}),
    ("hang.nan", "2.28.9/ar", {"NCCL_INSPECTOR_HANG_SECONDS": "nan"}),
    ("hang.0x10", "2.28.9/ar", {"NCCL_INSPECTOR_HANG_SECONDS": "0x10"}),
    ("bounds.mixed", "2.28.9/ar", {"NCCL_INSPECTOR_BOUNDS": "mixed"}),
    ("all-at-once", "2.28.9/torch-1736", {"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "abc",
                                          "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS": "-5x",
                                          "NCCL_INSPECTOR_ENABLE_P2P": "maybe"}),
]

# (name, variable, value, the setting the warning must suggest)
TYPOS = [
    ("enabled", "NCCL_INSPECTOR_ENABLED", "1", "NCCL_INSPECTOR_ENABLE"),
    ("prom-dumps", "NCCL_INSPECTOR_PROM_DUMPS", "1", "NCCL_INSPECTOR_PROM_DUMP"),
    ("min-size", "NCCL_INSPECTOR_DUMP_MIN_SIZE", "1", "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES"),
    ("otel-endpoint", "OTEL_EXPORTER_OTLP_ENDPIONT", "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ("otel-interval", "OTEL_METRICS_EXPORT_INTERVAL", "1000", "OTEL_METRIC_EXPORT_INTERVAL"),
    # the endpoint is OTel's variable: the tail names it, not the nearest spelling (OTLP_EXPORT)
    ("otlp-endpoint", "NCCL_INSPECTOR_OTLP_ENDPOINT", "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ("otlp-headers", "NCCL_INSPECTOR_OTLP_HEADERS", "a=b", "OTEL_EXPORTER_OTLP_HEADERS"),
    # a setting's name followed by more words: no suggestion (not ENABLE_P2P)
    ("enable-warn", "NCCL_INSPECTOR_ENABLE_WARN", "1", None),
]


def typo_case(name, var, value, hint):
    pat = r"%s is not a setting Inspector knows, and is ignored: did you mean %s\?" % (var, hint)
    if hint is None:
        pat = r"%s is not a setting Inspector knows, and is ignored \(docs/reference.md" % var
    return fixture_case("typo." + name, ["2.28.9/ar"], labels=["config"], env_extra={var: value},
                        expect_warn=[pat], warn_max=1)


def names_case():
    """env.c's lists against the names the sources read (a getenv or env_* call with a
    literal, anywhere in src/ but env.c)."""
    def fn(a):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
        env_c = open(os.path.join(root, "core", "env.c")).read()
        listed = set(re.findall(r'"((?:NCCL_INSPECTOR|OTEL)_[A-Z0-9_]+)"', env_c.split("k_otel_foreign")[0]))
        read = set()
        for d, _, files in os.walk(root):
            for f in files:
                if f.endswith(".c") and f != "env.c":
                    text = open(os.path.join(d, f)).read()
                    read |= set(re.findall(r'"((?:NCCL_INSPECTOR|OTEL)_[A-Z0-9_]+)"', text))
        problems = ["read but not listed in env.c: %s" % n for n in sorted(read - listed)]
        problems += ["listed in env.c but read nowhere: %s" % n for n in sorted(listed - read)]
        if problems:
            return False, "FAIL names.env-lists:\n  " + "\n  ".join(problems)
        return True, "OK names.env-lists: %d names" % len(listed)
    return harness.Case("names.env-lists", fn, labels=["config"], timeout=30)


def cases():
    out = [fixture_case("bad." + name, [trace], labels=["config"], env_extra=env)
           for name, trace, env in BAD]
    out += [typo_case(*t) for t in TYPOS]
    out.append(fixture_case("blank.enable-p2p", ["2.28.9/sr"], labels=["config"],
                            env_extra={"NCCL_INSPECTOR_ENABLE_P2P": " 0 "},
                            forbid_warn=[r"ENABLE_P2P"]))
    out.append(fixture_case("otel.foreign", ["2.28.9/ar"], labels=["config"],
                            env_extra={"OTEL_TRACES_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "none",
                                       "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9",
                                       "OTEL_SERVICE_NAME": "job"},
                            forbid_warn=[r"not a setting"]))
    out.append(names_case())
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

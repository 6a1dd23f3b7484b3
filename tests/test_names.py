#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Any byte string from NCCL or the environment gives valid output.

Communicator names, cluster names and environment values are bytes, not necessarily UTF-8. The
expected text is computed here independently, by Python's own UTF-8 decoder (invalid sequences
become U+FFFD by Unicode's recommended practice) and cut to the longest prefix of whole
characters that fits the plugin's limit (127 bytes for a communicator name, 255 for a label value).
  names.json.invalid     a name with invalid bytes (a stray continuation byte, a cut 3-byte
                         sequence, an overlong form, a surrogate, FF): every log line decodes as
                         strict UTF-8 JSON, and comm_name is the expected text
  names.json.long        a valid name of 200 bytes in 2-byte characters: cut between characters
  names.json.control     quotes, backslashes and control characters in a name
  names.prom             Prometheus mode with such a name and a 300-byte cluster name: every
                         file passes `promtool check metrics` (when installed), and its labels
                         decode to the expected text
  names.trace            trace mode: the trace's init line parses and holds the expected name
  names.warn             an environment value with invalid bytes and an escape sequence: the
                         WARN naming it is valid UTF-8, holds no control byte, and shows the
                         value's length, not the value (only a plain word is echoed:
                         src/core/redact.h)
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

COMM_NAME_MAX = 127   # src/core/comm.h: char name[128]
LABEL_VALUE_MAX = 255  # src/sink/prom/prom.c: label values of 256 bytes with the NUL

INVALID = b"ok \x80 cut \xe2\x82 overlong \xc0\xaf surrogate \xed\xa0\x80 ff \xff end \xf0\x9f\x98"
LONG = "\u00e9".encode() * 100
CONTROL = b'q"uote back\\slash tab\tnewline\nbell\x07 del\x7f'


def expected_text(raw, limit):
    """Python's decoding of raw, cut to whole characters within `limit` bytes."""
    text = raw.decode("utf-8", errors="replace")
    out, n = [], 0
    for ch in text:
        k = len(ch.encode("utf-8"))
        if n + k > limit:
            break
        out.append(ch)
        n += k
    return "".join(out)


def run_bytes(a, wd, env_extra, args, extra_bytes_env=None, no_finalize=False):
    """The replay with an environment that may hold bytes; returns (rc, stderr bytes, repro)."""
    env = {os.fsencode(k): os.fsencode(v) for k, v in harness.make_env(env_extra).items()}
    for k, v in (extra_bytes_env or {}).items():
        env[k] = v
    cmd = [os.fsencode(c) if isinstance(c, str) else c for c in
           [a.replay, "--plugin", a.plugin, "--logger-dies"] + (["--no-finalize"] if no_finalize
                                                                else []) + args]
    p = subprocess.run(cmd, env=env, cwd=wd.cwd, capture_output=True, timeout=a.timeout)
    return p.returncode, p.stderr, repr(cmd)


def synthetic(name):
    return ["--synthetic", "--ranks", "2", "--iters", "3", "--sizes", "64K:64K",
            "--comm-name", name]


def strict_json_lines(path, problems):
    out = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                out.append(json.loads(raw.decode("utf-8", errors="strict")))
            except ValueError as e:
                problems.append("%s:%d: %s" % (os.path.basename(path), n, e))
    return out


def json_case(name, raw):
    def fn(a):
        with harness.Workdir(a.keep, "names") as wd:
            dump = os.path.join(wd.path, "dump")
            rc, err, repro = run_bytes(a, wd, {"NCCL_INSPECTOR_DUMP_DIR": dump}, synthetic(raw))
            problems = [] if rc == 0 else ["replay rc %s: %s\n%s" % (rc, repro, err[-2000:])]
            want = expected_text(raw, COMM_NAME_MAX)
            lines = []
            for f in sorted(os.listdir(dump)) if os.path.isdir(dump) else []:
                lines += strict_json_lines(os.path.join(dump, f), problems)
            if not lines:
                problems.append("no line written")
            bad = [l["header"]["comm_name"] for l in lines if l["header"]["comm_name"] != want]
            if bad:
                problems.append("%d lines with comm_name %r, expected %r" % (len(bad), bad[0], want))
            if problems:
                wd.failed = True
                return False, "FAIL %s:\n  %s" % (name, "\n  ".join(problems[:10]))
            return True, "OK %s: %d lines, comm_name %r" % (name, len(lines), want)
    return harness.Case(name, fn, labels=["config"], timeout=60)


def unescape_label(v):
    return re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), v)


def prom_case():
    def fn(a):
        with harness.Workdir(a.keep, "names") as wd:
            dump = os.path.join(wd.path, "dump")
            cluster = LONG + LONG[:100]   # 300 bytes
            rc, err, repro = run_bytes(
                a, wd, {"NCCL_INSPECTOR_DUMP_DIR": dump, "NCCL_INSPECTOR_PROM_DUMP": "1",
                        "NCCL_INSPECTOR_PROM_DUMP_STATS": "1"},
                synthetic(INVALID), {b"NCCL_INSPECTOR_CLUSTER": cluster}, no_finalize=True)
            problems = [] if rc == 0 else ["replay rc %s: %s\n%s" % (rc, repro, err[-2000:])]
            proms = sorted(f for f in os.listdir(dump) if f.endswith(".prom")) \
                if os.path.isdir(dump) else []
            if not proms:
                problems.append("no .prom file")
            want_name = expected_text(INVALID, COMM_NAME_MAX)
            want_cluster = expected_text(cluster, LABEL_VALUE_MAX)
            samples = 0
            for f in proms:
                data = open(os.path.join(dump, f), "rb").read()
                try:
                    text = data.decode("utf-8", errors="strict")
                except UnicodeDecodeError as e:
                    problems.append("%s is not UTF-8: %s" % (f, e))
                    continue
                if shutil.which("promtool"):
                    p = subprocess.run(["promtool", "check", "metrics"], input=data,
                                       capture_output=True)
                    found = [l for l in p.stdout.decode(errors="replace").splitlines() +
                             p.stderr.decode(errors="replace").splitlines()
                             if "error" in l.lower() or "invalid" in l.lower()]
                    if found:
                        problems.append("promtool check metrics %s: %s" % (f, found[:3]))
                for line in text.splitlines():
                    if line.startswith("#"):
                        continue
                    labels = dict((k, unescape_label(v)) for k, v in
                                  re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line))
                    if labels.get("cluster") != want_cluster:
                        problems.append("cluster label %r, expected %r" % (labels.get("cluster"),
                                                                         want_cluster))
                    if "comm_name" in labels:
                        samples += 1
                        if labels["comm_name"] != want_name:
                            problems.append("comm_name label %r, expected %r"
                                            % (labels["comm_name"], want_name))
            if proms and not samples:
                problems.append("no sample with a comm_name label")
            if problems:
                wd.failed = True
                return False, "FAIL names.prom:\n  " + "\n  ".join(problems[:10])
            return True, "OK names.prom: %d files, %d samples%s" % (
                len(proms), samples, "" if shutil.which("promtool") else " (promtool not installed)")
    return harness.Case("names.prom", fn, labels=["prom"], timeout=60)


def trace_case():
    def fn(a):
        with harness.Workdir(a.keep, "names") as wd:
            dump, tdir = os.path.join(wd.path, "dump"), os.path.join(wd.path, "trace")
            raw = INVALID + CONTROL
            rc, err, repro = run_bytes(a, wd, {"NCCL_INSPECTOR_DUMP_DIR": dump,
                                               "NCCL_INSPECTOR_TRACE_DIR": tdir}, synthetic(raw))
            problems = [] if rc == 0 else ["replay rc %s: %s\n%s" % (rc, repro, err[-2000:])]
            # the name reaches trace mode as the plugin was given it, cut at the trace's 255
            want = expected_text(raw, 255)
            names = []
            for f in sorted(os.listdir(tdir)) if os.path.isdir(tdir) else []:
                for l in strict_json_lines(os.path.join(tdir, f), problems):
                    if l.get("cb") == "init":
                        names.append(l.get("name"))
            if not names:
                problems.append("no init line in the trace")
            elif any(n != want for n in names):
                problems.append("init names %r, expected %r" % (names[:2], want))
            if problems:
                wd.failed = True
                return False, "FAIL names.trace:\n  " + "\n  ".join(problems[:10])
            return True, "OK names.trace: %d init lines, name %r" % (len(names), want)
    return harness.Case("names.trace", fn, labels=["trace"], timeout=60)


def warn_case():
    def fn(a):
        with harness.Workdir(a.keep, "names") as wd:
            dump = os.path.join(wd.path, "dump")
            rc, err, repro = run_bytes(a, wd, {"NCCL_INSPECTOR_DUMP_DIR": dump}, synthetic(b"w"),
                                       {b"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": b"\xff12\x1b[31m"})
            problems = [] if rc == 0 else ["replay rc %s: %s\n%s" % (rc, repro, err[-2000:])]
            try:
                text = err.decode("utf-8", errors="strict")
            except UnicodeDecodeError as e:
                text = err.decode("utf-8", errors="replace")
                problems.append("the replay's stderr is not UTF-8: %s" % e)
            warns = [l for l in text.splitlines()
                     if "NCCL WARN" in l and "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES" in l]
            if len(warns) != 1:
                problems.append("%d WARN lines name the variable, expected 1" % len(warns))
            elif "=(8 bytes, not shown)" not in warns[0] or "\x1b" in warns[0] or "[31m" in warns[0]:
                problems.append("the WARN does not show the value as its length, (8 bytes, not shown): %r"
                                % warns[0])
            if problems:
                wd.failed = True
                return False, "FAIL names.warn:\n  " + "\n  ".join(problems[:10])
            return True, "OK names.warn: %s" % warns[0].strip()
    return harness.Case("names.warn", fn, labels=["config"], timeout=60)


def cases():
    return [json_case("names.json.invalid", INVALID), json_case("names.json.long", LONG),
            json_case("names.json.control", CONTROL), prom_case(), trace_case(), warn_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

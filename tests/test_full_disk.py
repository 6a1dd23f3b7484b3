#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A full file system: the job goes on, every file left ends in a whole line, and the number of
records reported lost is exact.

A synthetic 4-rank job (4,800 records, about 3.2 MB of log, 110,000 trace lines) is replayed once
with room to spare (the reference: records expected, trace lines) and then with too little:
  full.fsize.json       a file size limit (RLIMIT_FSIZE, as a quota would) at three sizes, one of
                        them not a multiple of a page: the log holds only whole lines that parse,
                        and records in the log + records reported lost = records expected
  full.fsize.trace      the same in trace mode: the trace file ends in a whole line, a WARN says
                        how many callback lines were lost, and lines in the file + lost = the
                        reference's lines
  full.tmpfs.json       a real full file system: a 1 MiB tmpfs mounted for the test (root only;
                        skipped with a message where mounting is not allowed)
Every run uses --logger-dies: warnings at exit must not call NCCL's logger (a host may have torn
it down); the replay must exit 0.
"""
import json
import os
import re
import resource
import signal
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

SYNTH = ["--ranks", "4", "--iters", "50", "--sizes", "1K:64K", "--p2p", "--seed", "7"]
ENV = {"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0"}
LOST = re.compile(r"NCCL WARN .*?(\d+) records could not be written")
TRACE_LOST = re.compile(r"NCCL WARN .*trace mode: (\d+) callback lines could not be written")


def limited(nbytes):
    """preexec_fn: a file size limit of nbytes for the replay (SIGXFSZ ignored, as a job that
    sets such a limit must, so that a write past it fails with EFBIG instead of killing)."""
    def fn():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    return fn


def replay(a, wd, dump, extra_env=None, trace_dir=None, preexec=None, truth=None):
    env_extra = dict(ENV, **(extra_env or {}))
    if trace_dir:
        env_extra["NCCL_INSPECTOR_TRACE_DIR"] = trace_dir
    env = harness.make_env(env_extra, dump_dir=dump)
    cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=SYNTH, truth=truth)
    cmd.insert(1, "--logger-dies")
    p = subprocess.run(cmd, env=env, cwd=wd.cwd, capture_output=True, timeout=a.timeout,
                       preexec_fn=preexec)
    return p.returncode, p.stderr.decode(errors="replace"), harness.shell_line(cmd, env_extra)


def whole_lines(path, problems):
    """The lines of a file that must hold only whole JSON lines; problems noted."""
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        problems.append("%s ends in a partial line: %r" % (os.path.basename(path), data[-80:]))
    lines = []
    for n, raw in enumerate(data.split(b"\n")[:-1] if data.endswith(b"\n") else
                            data.split(b"\n"), 1):
        try:
            lines.append(json.loads(raw.decode("utf-8")))
        except ValueError as e:
            problems.append("%s:%d does not parse (%s): %r" % (os.path.basename(path), n, e,
                                                               raw[:80]))
    return lines


def files(d, suffix):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(suffix)) \
        if os.path.isdir(d) else []


def reference(a, wd):
    """An unlimited run: (records expected, trace lines), both independent of the plugin's
    own accounting: records from the replay's truth file, lines counted in the trace."""
    dump, tdir = os.path.join(wd.path, "ref"), os.path.join(wd.path, "ref-trace")
    truth = os.path.join(wd.path, "truth.jsonl")
    rc, err, repro = replay(a, wd, dump, trace_dir=tdir, truth=truth)
    if rc != 0:
        raise RuntimeError("reference run failed (rc %s): %s\n%s" % (rc, repro, harness._tail(err)))
    env = harness.make_env(ENV)
    _, recs, problems = harness.truth_expectation(truth, harness.RunConfig(env))
    if problems:
        raise RuntimeError("truth file: %s" % problems[:3])
    with open(files(tdir, ".trace.jsonl")[0], "rb") as f:
        trace_lines = f.read().count(b"\n")
    return len(recs), trace_lines


def check_log(dump, expected, err, problems, tag):
    found = 0
    for path in files(dump, ".log"):
        found += sum(1 for o in whole_lines(path, problems)
                     if "coll_perf" in o or "p2p_perf" in o)
    lost = [int(x) for x in LOST.findall(err)]
    reported = sum(lost)
    if len(lost) != 1:
        problems.append("%s: %d lost-record reports %s, expected one" % (tag, len(lost), lost))
    if found + reported != expected:
        problems.append("%s: %d records in the log + %d reported lost = %d, expected %d"
                        % (tag, found, reported, found + reported, expected))
    if found == 0 or reported == 0:
        problems.append("%s: the limit did not cut the log (found %d, lost %d): the scenario "
                        "tests nothing" % (tag, found, reported))
    return "%s: %d written + %d lost" % (tag, found, reported)


def fsize_json_case():
    def fn(a):
        with harness.Workdir(a.keep, "full") as wd:
            expected, _ = reference(a, wd)
            problems, notes = [], []
            for limit in (64 * 1024, 1000 * 1000 + 123, 2 * 1024 * 1024):
                dump = os.path.join(wd.path, "dump-%d" % limit)
                rc, err, repro = replay(a, wd, dump, preexec=limited(limit))
                tag = "limit %d" % limit
                if rc != 0:
                    problems.append("%s: replay rc %s\n%s\n  %s" % (tag, rc, harness._tail(err),
                                                                   repro))
                    continue
                problems += harness.sanitizer_reports(err)
                notes.append(check_log(dump, expected, err, problems, tag))
            if problems:
                wd.failed = True
                return False, "FAIL full.fsize.json:\n  " + "\n  ".join(problems[:20])
            return True, "OK full.fsize.json: %d expected; %s" % (expected, "; ".join(notes))
    return harness.Case("full.fsize.json", fn, labels=["crash"], timeout=120)


def fsize_trace_case():
    def fn(a):
        with harness.Workdir(a.keep, "full") as wd:
            _, total = reference(a, wd)
            problems = []
            dump, tdir = os.path.join(wd.path, "dump"), os.path.join(wd.path, "trace")
            limit = 3 * 1000 * 1000 + 17
            rc, err, repro = replay(a, wd, dump, trace_dir=tdir, preexec=limited(limit))
            if rc != 0:
                problems.append("replay rc %s\n%s\n  %s" % (rc, harness._tail(err), repro))
            problems += harness.sanitizer_reports(err)
            traces = files(tdir, ".trace.jsonl")
            in_file = sum(len(whole_lines(p, problems)) for p in traces)
            lost = [int(x) for x in TRACE_LOST.findall(err)]
            if len(traces) != 1:
                problems.append("%d trace files, expected 1" % len(traces))
            if len(lost) != 1:
                problems.append("trace lines lost reported %s times, expected once; WARN lines: %s"
                                % (len(lost), [l for l in err.splitlines() if "WARN" in l][:5]))
            elif in_file + lost[0] != total:
                problems.append("%d trace lines in the file + %d reported lost != %d of the "
                                "reference run" % (in_file, lost[0], total))
            if problems:
                wd.failed = True
                return False, "FAIL full.fsize.trace:\n  " + "\n  ".join(problems[:20])
            return True, "OK full.fsize.trace: %d lines, %d in the file, %d reported lost" % (
                total, in_file, lost[0])
    return harness.Case("full.fsize.trace", fn, labels=["crash"], timeout=120)


def tmpfs_json_case():
    def fn(a):
        with harness.Workdir(a.keep, "full") as wd:
            mnt = os.path.join(wd.path, "mnt")
            os.makedirs(mnt)
            m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", mnt],
                               capture_output=True, text=True)
            if m.returncode != 0:
                return True, "SKIPPED full.tmpfs.json: cannot mount a tmpfs here (%s)" % (
                    m.stderr.strip() or "rc %d" % m.returncode)
            try:
                expected, _ = reference(a, wd)
                problems = []
                dump = os.path.join(mnt, "logs")
                rc, err, repro = replay(a, wd, dump)
                if rc != 0:
                    problems.append("replay rc %s\n%s\n  %s" % (rc, harness._tail(err), repro))
                problems += harness.sanitizer_reports(err)
                note = check_log(dump, expected, err, problems, "1 MiB tmpfs")
            finally:
                subprocess.run(["umount", mnt], capture_output=True)
            if problems:
                wd.failed = True
                return False, "FAIL full.tmpfs.json:\n  " + "\n  ".join(problems[:20])
            return True, "OK full.tmpfs.json: %d expected; %s" % (expected, note)
    return harness.Case("full.tmpfs.json", fn, labels=["crash"], timeout=120)


def cases():
    return [fsize_json_case(), fsize_trace_case(), tmpfs_json_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Modes of what the plugin creates, whatever the umask (README, Output: "directories 0755,
files 0644"). Every case replays a fixture with the replay process (and so the plugin in it)
under umask 000, which lets a group- or world-writable mode through, or 077, which takes
every bit from group and others; output goes below a parent that exists already (mode 0711,
which the plugin must leave alone) and three levels that do not exist yet:
  json.umask000 / json.umask077    NCCL_INSPECTOR_DUMP_DIR=<parent>/a/b/c: a, b and c are
                                   0755, the JSON log (*.log) is 0644
  trace.umask000 / trace.umask077  also NCCL_INSPECTOR_TRACE_DIR=<parent>/t/u/v: its levels
                                   are 0755, the trace (*.trace.jsonl) is 0644
  prom.umask000 / prom.umask077    NCCL_INSPECTOR_PROM_DUMP=1 on a trace without its finalize
                                   lines (a .prom file lives only while its communicators
                                   do, and process exit writes it): the levels are 0755,
                                   every *.prom file is 0644
Files are matched by pattern, not by their exact names.
"""
import glob
import gzip
import os
import stat
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

PARENT_MODE = 0o711  # not what the plugin would give it: a chmod of the parent shows
DIR_MODE, FILE_MODE = 0o755, 0o644


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def run_under_umask(a, umask, cmd, env, cwd):
    """The replay with `umask` (inherited by the child; restored here at once)."""
    old = os.umask(umask)
    try:
        return harness.run(cmd, env, cwd, a.timeout)
    finally:
        os.umask(old)


def strip_finalize(src, dst):
    """A copy of a fixture without its finalize lines: no communicator is destroyed, so the
    .prom files written at process exit stay."""
    with gzip.open(src, "rt") as fi, open(dst, "w") as fo:
        for line in fi:
            if '"cb":"finalize"' not in line:
                fo.write(line)


def check_levels(parent, rel, problems):
    """parent keeps PARENT_MODE; each level of rel below it was created DIR_MODE."""
    if mode(parent) != PARENT_MODE:
        problems.append("pre-existing parent %s changed mode: %04o, was %04o"
                        % (parent, mode(parent), PARENT_MODE))
    p = parent
    for part in rel.split("/"):
        p = os.path.join(p, part)
        if not os.path.isdir(p):
            problems.append("directory %s was not created" % p)
            return
        if mode(p) != DIR_MODE:
            problems.append("created directory %s has mode %04o, expected %04o"
                            % (p, mode(p), DIR_MODE))


def check_files(d, pattern, what, problems):
    files = sorted(glob.glob(os.path.join(d, pattern)))
    if not files:
        problems.append("no %s (%s) in %s; it holds %s" % (what, pattern, d, os.listdir(d)))
    for f in files:
        if mode(f) != FILE_MODE:
            problems.append("%s %s has mode %04o, expected %04o"
                            % (what, os.path.basename(f), mode(f), FILE_MODE))
    return files


def modes_case(kind, umask):
    name = "%s.umask%03o" % (kind, umask)

    def fn(a):
        with harness.Workdir(a.keep, "modes") as wd:
            parent = os.path.join(wd.cwd, "parent")
            os.mkdir(parent)
            os.chmod(parent, PARENT_MODE)
            dump = os.path.join(parent, "a", "b", "c")
            env_extra = {"NCCL_INSPECTOR_DUMP_DIR": dump + "/"}
            trace = harness.fixture("2.28.9/ar")
            if kind == "trace":
                env_extra["NCCL_INSPECTOR_TRACE_DIR"] = os.path.join(parent, "t", "u", "v")
            if kind == "prom":
                env_extra["NCCL_INSPECTOR_PROM_DUMP"] = "1"
                stripped = os.path.join(wd.path, "ar-nofinalize.jsonl")
                strip_finalize(trace, stripped)
                trace = stripped
            env = harness.make_env(env_extra)
            cmd = harness.replay_cmd(a.replay, a.plugin, [trace])
            r = run_under_umask(a, umask, cmd, env, wd.cwd)
            problems = []
            if r.timed_out or r.rc != 0:
                problems.append("replay failed: rc %s" % r.rc)
            problems += harness.sanitizer_reports(r.stderr)
            check_levels(parent, "a/b/c", problems)
            if os.path.isdir(dump):
                if kind == "prom":
                    check_files(dump, "*.prom", "Prometheus file", problems)
                else:
                    check_files(dump, "*.log", "JSON log", problems)
            if kind == "trace":
                check_levels(parent, "t/u/v", problems)
                tdir = env_extra["NCCL_INSPECTOR_TRACE_DIR"]
                if os.path.isdir(tdir):
                    check_files(tdir, "*.trace.jsonl", "trace file", problems)
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n  repro: (umask %03o) %s\n  stderr:\n%s" % (
                    name, "\n  ".join(problems[:20]), umask, harness.shell_line(cmd, env_extra),
                    harness._tail(r.stderr))
            return True, "OK %s: directories %04o, files %04o under umask %03o" % (
                name, DIR_MODE, FILE_MODE, umask)
    return harness.Case(name, fn, labels=["config"], timeout=60)


def cases():
    return [modes_case(k, u) for k in ("json", "trace", "prom") for u in (0o000, 0o077)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

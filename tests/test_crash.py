#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Crash safety: a long synthetic run writing continuously (dump interval 0, min size 0) is
killed with SIGKILL while it writes, three times at different points (after 128 KiB, 1 MiB and
4 MiB of output).
  crash.inproc, crash.procs   every line of every file left behind, the last one included, is
                              a complete JSON object ending in a newline
  crash.*.body                the same, except that an unterminated fragment at the very end
                              of a file is tolerated (reported only): no torn or interleaved
                              line before it
All ranks in one process (inproc) or one process per rank (procs; the whole process group is
killed).  Some records must have been written before each kill.
"""
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402

ENV = {"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS": "0",
       "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0"}
ARGS = ["--ranks", "8", "--iters", "200000", "--colls", "AllReduce,AllGather",
        "--sizes", "1K:16K", "--p2p"]
KILL_AFTER_BYTES = (128 * 1024, 1024 * 1024, 4 * 1024 * 1024)
MAX_WAIT_S = 20


def log_bytes(d):
    try:
        return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                   if f.endswith(".log"))
    except OSError:
        return 0


def kill_once(a, wd, procs, after_bytes, tolerate_tail):
    """One run killed after `after_bytes` of output; returns (problems, note)."""
    dump = os.path.join(wd.path, "dump-%d" % after_bytes)
    os.makedirs(dump)
    env = harness.make_env(ENV, dump_dir=dump)
    cmd = harness.replay_cmd(a.replay, a.plugin, procs=procs, synthetic=ARGS)
    p = subprocess.Popen(cmd, env=env, cwd=wd.cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    t0 = time.time()
    while p.poll() is None and time.time() - t0 < MAX_WAIT_S and log_bytes(dump) < after_bytes:
        time.sleep(0.005)
    finished = p.poll() is not None
    if not finished:
        os.killpg(p.pid, signal.SIGKILL)   # the replay's own process group (start_new_session)
    problems = []
    # Bounded waits: one run of the suite under load timed out here once (not reproduced in
    # the runs after it); should it happen again, say which wait it was, with what is left.
    try:
        p.wait(timeout=30)
        time.sleep(0.1)                     # children of --procs die with the group
        _, err = p.communicate(timeout=30)  # EOF once every process holding the pipe is gone
        stderr = err.decode(errors="replace")
    except subprocess.TimeoutExpired:
        ps = subprocess.run(["ps", "-o", "pid,stat,wchan:20,args", "-g", str(p.pid)],
                            stdout=subprocess.PIPE, universal_newlines=True).stdout
        problems.append("the replay's process group was not gone 30 s after SIGKILL:\n" + ps)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        stderr = ""
    if finished:
        problems.append("the run ended (rc %s) before it could be killed: make it longer"
                        % p.returncode)
    errors = logcheck.Errors()
    files = logcheck.read_dump_dir(dump, errors)
    torn_tails = []
    for msg in errors.items:
        if tolerate_tail and _is_tail_problem(msg, dump):
            torn_tails.append(msg.split(":")[0])
        else:
            problems.append(msg)
    n = sum(len(v) for v in files.values())
    if n == 0:
        problems.append("no record written in %.1f s" % (time.time() - t0))
    note = "%d files, %d complete lines, %d bytes%s" % (
        len(files), n, log_bytes(dump),
        ", torn tail in %s" % sorted(set(torn_tails)) if torn_tails else "")
    if problems:
        problems.append("repro: " + harness.shell_line(cmd, ENV) + "  (kill after %d bytes)"
                        % after_bytes)
        problems.append("stderr:\n" + harness._tail(stderr))
    return problems, note


def _is_tail_problem(msg, dump):
    """A message about the last, unterminated line of a file."""
    name = msg.split(":")[0]
    path = os.path.join(dump, name)
    if "last line is not terminated" in msg:
        return True
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    if data.endswith(b"\n"):
        return False
    last = data.count(b"\n") + 1
    return msg.startswith("%s:%d:" % (name, last))


def crash_case(name, procs, tolerate_tail):
    def fn(a):
        with harness.Workdir(a.keep, "crash") as wd:
            problems, notes = [], []
            for after in KILL_AFTER_BYTES:
                pr, note = kill_once(a, wd, procs, after, tolerate_tail)
                problems += pr
                notes.append(note)
            if problems:
                wd.failed = True
                return False, "FAIL %s:\n  %s" % (name, "\n  ".join(problems[:20]))
            return True, "OK %s: 3 kills: %s" % (name, "; ".join(notes))
    return harness.Case(name, fn, labels=["crash", "threads"], timeout=120)


def cases():
    return [crash_case("crash.inproc", False, False), crash_case("crash.procs", True, False),
            crash_case("crash.inproc.body", False, True),
            crash_case("crash.procs.body", True, True)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

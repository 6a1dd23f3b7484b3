#!/usr/bin/env python3
"""Crash safety: a long synthetic run writing continuously (dump interval 0, min size 0) is
killed with SIGKILL while it writes; every line of every file it left must be a complete JSON
object ending in a newline (no torn line), and some records must have been written.
  crash.inproc   all ranks in one process
  crash.procs    one process per rank (the whole process group is killed)
"""
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import logcheck  # noqa: E402

ENV = {"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS": "0",
       "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0"}
ARGS = ["--ranks", "8", "--iters", "200000", "--colls", "AllReduce,AllGather",
        "--sizes", "1K:16K", "--p2p"]
KILL_AFTER_BYTES = 512 * 1024
MAX_WAIT_S = 20


def log_bytes(d):
    try:
        return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                   if f.endswith(".log"))
    except OSError:
        return 0


def crash_case(name, procs):
    def fn(a):
        with harness.Workdir(a.keep, "crash") as wd:
            os.makedirs(wd.dump)
            env = harness.make_env(ENV, dump_dir=wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, procs=procs, synthetic=ARGS)
            p = subprocess.Popen(cmd, env=env, cwd=wd.cwd, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, start_new_session=True)
            t0 = time.time()
            while p.poll() is None and time.time() - t0 < MAX_WAIT_S and \
                    log_bytes(wd.dump) < KILL_AFTER_BYTES:
                time.sleep(0.02)
            finished = p.poll() is not None
            if not finished:
                os.killpg(p.pid, signal.SIGKILL)   # the replay's own process group
            p.wait()
            time.sleep(0.2)   # children of --procs die with the group
            stderr = p.stderr.read().decode(errors="replace")
            p.stderr.close()
            problems = []
            if finished:
                problems.append("the run ended (rc %s) before it could be killed: make it longer"
                                % p.returncode)
            errors = logcheck.Errors()
            files = logcheck.read_dump_dir(wd.dump, errors)
            problems += errors.items
            n = sum(len(v) for v in files.values())
            if n == 0:
                problems.append("no record written in %.1f s" % (time.time() - t0))
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n  repro: %s\n  stderr:\n%s" % (
                    name, "\n  ".join(problems[:20]), harness.shell_line(cmd, ENV),
                    harness._tail(stderr))
            return True, "OK %s: killed after %.1f s; %d files, %d complete lines, %d bytes" % (
                name, time.time() - t0, len(files), n, log_bytes(wd.dump))
    return harness.Case(name, fn, labels=["crash", "threads"], timeout=90)


def cases():
    return [crash_case("crash.inproc", False), crash_case("crash.procs", True)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

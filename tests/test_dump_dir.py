#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where the output lands (seed: "Choosing the output directory"):
  dir.default        NCCL_INSPECTOR_DUMP_DIR unset, no job id: ./nccl-inspector-unknown-jobid,
                     and no metadata.job_id in the records
  dir.slurm          SLURM_JOB_ID=4242: ./nccl-inspector-4242, and metadata.job_id "4242" in
                     every line (tests/lib/logcheck.py's expected_job_id)
  dir.nested         NCCL_INSPECTOR_DUMP_DIR=<tmp>/a/b/c/ that does not exist yet: created
  dir.unwritable     NCCL_INSPECTOR_DUMP_DIR under a regular file (cannot be created, even as
                     root): the job still succeeds, a NCCL WARN names the directory, another
                     gives the number of records lost (= what the oracle expects), nothing is
                     written anywhere
  dir.unwritable.init  the same in a host that exits without finalizing (--no-finalize) and
                       tears its logger down (--logger-dies): the directory is reported at
                       init, before any communicator is tracked, and the exact loss at exit
                       through stderr (the replay exits 0)
  dir.exit.no_finalize every record written by the exit flush, in a host that exits without
                       finalizing and whose logger is gone by then (--logger-dies): the
                       plugin's messages at exit (the file it opens) must not call it
Each checks the records found there against the oracle, and that nothing else is created.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402


def dir_case(name, trace, env_extra_fn, where_fn, replay_args=()):
    def fn(a):
        with harness.Workdir(a.keep, "dir") as wd:
            env_extra = env_extra_fn(wd)
            env = harness.make_env(env_extra)
            path = harness.fixture(trace)
            cmd = harness.replay_cmd(a.replay, a.plugin, [path])
            cmd[1:1] = list(replay_args)
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            problems = []
            if r.timed_out or r.rc != 0:
                problems.append("replay failed: rc %s" % r.rc)
            problems += harness.sanitizer_reports(r.stderr)
            want = where_fn(wd)
            if not os.path.isdir(want):
                problems.append("no dump directory %s; cwd has %s" % (want, os.listdir(wd.cwd)))
            else:
                exp = harness.fixture_expectation([path], harness.RunConfig(env))
                errors, summary = logcheck.check_dump(want, exp, window=r.window, pids={r.pid},
                                                      job_id=logcheck.expected_job_id(env))
                problems += errors.items
            # nothing but the expected directory in the working directory
            top = os.path.relpath(want, wd.cwd).split(os.sep)[0]
            extra = [f for f in os.listdir(wd.cwd) if f != top]
            if extra:
                problems.append("unexpected files in the working directory: %s" % extra)
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n  repro: %s\n  stderr:\n%s" % (
                    name, "\n  ".join(problems[:20]), harness.shell_line(cmd, env_extra),
                    harness._tail(r.stderr))
            return True, "OK %s: records in %s" % (name, os.path.relpath(want, wd.path))
    return harness.Case(name, fn, labels=["config"], timeout=60)


def unwritable_case(name, trace, replay_args=(), at_init=False):
    """The dump directory cannot be made: the job goes on, a WARN names it (with at_init:
    before the first communicator is tracked), the records are reported lost, exactly, and
    nothing is created anywhere."""
    def fn(a):
        with harness.Workdir(a.keep, "dir") as wd:
            blocker = os.path.join(wd.cwd, "not-a-dir")
            with open(blocker, "w") as f:
                f.write("x")
            bad = os.path.join(blocker, "logs")
            env_extra = {"NCCL_INSPECTOR_DUMP_DIR": bad}
            env = harness.make_env(env_extra)
            path = harness.fixture(trace)
            cmd = harness.replay_cmd(a.replay, a.plugin, [path])
            cmd[1:1] = list(replay_args)
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            problems = []
            if r.timed_out or r.rc != 0:
                problems.append("replay failed: rc %s" % r.rc)
            problems += harness.sanitizer_reports(r.stderr)
            lines = r.stderr.splitlines()
            warns = [i for i, l in enumerate(lines) if "NCCL WARN" in l and bad in l]
            tracked = [i for i, l in enumerate(lines) if "tracking communicator" in l]
            if not warns:
                problems.append("no NCCL WARN names %s" % bad)
            elif at_init and (not tracked or warns[0] > tracked[0]):
                problems.append("no NCCL WARN names %s before the first communicator is tracked "
                                "(WARN at lines %s, tracking at %s)" % (bad, warns, tracked[:1]))
            exp = harness.fixture_expectation([path], harness.RunConfig(env))
            lost = [int(m.group(1)) for m in
                    re.finditer(r"NCCL WARN .*?(\d+) records could not be written", r.stderr)]
            if lost != [len(exp.records)]:
                problems.append("lost-record report %s, expected [%d]" % (lost, len(exp.records)))
            if sorted(os.listdir(wd.cwd)) != ["not-a-dir"]:
                problems.append("unexpected files: %s" % os.listdir(wd.cwd))
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n  repro: %s\n  stderr:\n%s" % (
                    name, "\n  ".join(problems), harness.shell_line(cmd, env_extra),
                    harness._tail(r.stderr))
            return True, "OK %s: %s" % (name, lines[warns[0]].strip())
    return harness.Case(name, fn, labels=["config"], timeout=60)


def cases():
    return [
        dir_case("dir.default", "2.28.9/ar", lambda wd: {},
                 lambda wd: os.path.join(wd.cwd, "nccl-inspector-unknown-jobid")),
        dir_case("dir.slurm", "2.28.9/ar", lambda wd: {"SLURM_JOB_ID": "4242"},
                 lambda wd: os.path.join(wd.cwd, "nccl-inspector-4242")),
        dir_case("dir.nested", "2.28.9/sr",
                 lambda wd: {"NCCL_INSPECTOR_DUMP_DIR": os.path.join(wd.cwd, "a", "b", "c") + "/"},
                 lambda wd: os.path.join(wd.cwd, "a", "b", "c")),
        unwritable_case("dir.unwritable", "2.28.9/ar"),
        unwritable_case("dir.unwritable.init", "2.28.9/sr", ["--no-finalize", "--logger-dies"],
                        at_init=True),
        dir_case("dir.exit.no_finalize", "2.28.9/sr",
                 lambda wd: {"NCCL_INSPECTOR_DUMP_DIR": os.path.join(wd.cwd, "logs")},
                 lambda wd: os.path.join(wd.cwd, "logs"), ["--no-finalize", "--logger-dies"]),
    ]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

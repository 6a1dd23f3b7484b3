#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The plugin is inert unless NCCL_INSPECTOR_ENABLE=1 (seed: "Enabling the Inspector"):
with the variable unset, or 0, the replay succeeds and no dump directory or file is created,
neither NCCL_INSPECTOR_DUMP_DIR nor the default nccl-inspector-<jobid> in the working
directory.  Cases inert.unset.<fixture>, inert.0.<fixture>, and each with the other
NCCL_INSPECTOR_* variables set (dump thread continuous, verbose) to show they are ignored.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

ACTIVE = {"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS": "0",
          "NCCL_INSPECTOR_DUMP_VERBOSE": "1", "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0"}


def inert_case(name, enable, trace, extra=None, with_dir=True):
    def fn(a):
        with harness.Workdir(a.keep, "inert") as wd:
            env_extra = dict(extra or {})
            if with_dir:
                env_extra["NCCL_INSPECTOR_DUMP_DIR"] = wd.dump   # not created beforehand
            if enable is not None:
                env_extra["NCCL_INSPECTOR_ENABLE"] = enable
            env = harness.make_env(env_extra, enable=False)
            cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture(trace)])
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            problems = []
            if r.timed_out or r.rc != 0:
                problems.append("replay failed: rc %s" % r.rc)
            problems += harness.sanitizer_reports(r.stderr)
            if os.path.exists(wd.dump):
                problems.append("dump directory %s was created: %s" % (wd.dump,
                                                                       os.listdir(wd.dump)))
            left = os.listdir(wd.cwd)
            if left:
                problems.append("files created in the working directory: %s" % left)
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n  repro: %s\n  stderr:\n%s" % (
                    name, "; ".join(problems), harness.shell_line(cmd, env_extra),
                    harness._tail(r.stderr))
            return True, "OK %s: no output, replay rc 0" % name
    return harness.Case(name, fn, labels=["inert"], timeout=60)


def cases():
    out = []
    for trace in ("2.28.9/ar", "2.28.9/sr", "2.27.7/ar"):
        tag = trace.replace("/", ".")
        out.append(inert_case("inert.unset." + tag, None, trace))
        out.append(inert_case("inert.0." + tag, "0", trace))
    out.append(inert_case("inert.unset.active-vars", None, "2.28.9/ar", ACTIVE))
    out.append(inert_case("inert.0.active-vars", "0", "2.28.9/ar", ACTIVE))
    out.append(inert_case("inert.0.no-dump-dir", "0", "2.28.9/ar", ACTIVE, with_dir=False))
    out.append(inert_case("inert.unset.no-dump-dir", None, "2.28.9/ar", None, with_dir=False))
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

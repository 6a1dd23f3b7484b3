#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a job without NCCL_DEBUG sees on stderr (src/core/log.h, "Who sees what"), end to end:
the plugin loaded by inspector-replay, whose logger prints as NCCL's does (nothing without
NCCL_DEBUG; with it, only the subsystems NCCL_DEBUG_SUBSYS names, the plugin's being PROFILE).
  stderr.clean.no-finalize     a clean run, flushed at exit: nothing at all on stderr (--quiet:
                               no summary)
  stderr.clean.debug-info      NCCL_DEBUG=INFO alone: NCCL's default subsystems leave PROFILE
                               out, so nothing of the plugin (the replay's summary only)
  stderr.clean.debug-profile   NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=PROFILE: the plugin's INFO
                               lines, through NCCL's logger (the replay's stand-in)
  stderr.typo                  a misspelled variable: one "Inspector:" line naming it and the
                               setting meant
  stderr.typo.debug-profile    under NCCL_DEBUG=WARN NCCL_DEBUG_SUBSYS=PROFILE: NCCL's WARN,
                               once, and no second copy
  stderr.dir                   an unwritable dump directory: one line naming it, one with the
                               records lost, at exit
  stderr.disabled              loaded but NCCL_INSPECTOR_ENABLE unset: one line saying how to
                               enable it
The C unit test unit_log_notice holds every kind of notice and the bound on their number.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

PROFILE = {"NCCL_DEBUG": "WARN", "NCCL_DEBUG_SUBSYS": "PROFILE"}
TYPO = {"NCCL_INSPECTOR_PROM_DUMPS": "1"}
TYPO_SAID = ("NCCL_INSPECTOR_PROM_DUMPS is not a setting Inspector knows, and is ignored: did you "
             "mean NCCL_INSPECTOR_PROM_DUMP?")


def stderr_case(name, extra, expect, enable=True, args=("--quiet",), bad_dir=False):
    """expect: the stderr lines, each a (prefix, words) pair that exactly one line must match
    and every line must match one of; or a callable(lines) -> problems."""
    def fn(a):
        with harness.Workdir(a.keep, "stderr") as wd:
            dump = wd.dump
            env_extra = dict(extra)
            if bad_dir:  # under a regular file: cannot be made, even as root
                blocker = os.path.join(wd.path, "file")
                with open(blocker, "w"):
                    pass
                dump = os.path.join(blocker, "d")
            env = harness.make_env(env_extra, enable=enable, dump_dir=dump, debug=False)
            cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture("ar")])
            cmd[1:1] = list(args)
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            problems = []
            if r.timed_out or r.rc != 0:
                problems.append("replay failed: rc %s" % r.rc)
            problems += harness.sanitizer_reports(r.stderr)
            lines = r.stderr.splitlines()
            if callable(expect):
                problems += expect(lines)
            else:
                for prefix, words in expect:
                    words = words.replace("%DIR%", dump)
                    n = sum(1 for l in lines if l.startswith(prefix) and words in l)
                    if n != 1:
                        problems.append("%d lines '%s...%s', expected 1" % (n, prefix, words))
                if len(lines) != len(expect):
                    problems.append("%d lines on stderr, expected %d" % (len(lines), len(expect)))
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n  repro: %s\n  stderr:\n%s" % (
                    name, "; ".join(problems), harness.shell_line(cmd, env_extra),
                    harness._tail(r.stderr))
            return True, "OK %s: %d lines on stderr" % (name, len(lines))
    return harness.Case(name, fn, labels=["config"], timeout=60)


def nothing_of_plugin(lines):
    """NCCL_DEBUG=INFO alone (no --quiet): the replay's summary, nothing of the plugin."""
    return ["the plugin printed: %s" % l for l in lines if "Inspector:" in l]


def plugin_info(lines):
    """NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=PROFILE: the plugin's INFO lines, no plain notice."""
    problems = []
    if not any(l.startswith("NCCL INFO Inspector: ") and "loaded through profiler ABI" in l
               for l in lines):
        problems.append("no NCCL INFO line with the plugin's configuration")
    if any(l.startswith("Inspector: ") for l in lines):
        problems.append("a plain Inspector: line on a clean run")
    return problems


def cases():
    # the other notices, the bound, and NCCL_DEBUG's variants: unit_log_notice (in C, faster)
    return [
        stderr_case("stderr.clean.no-finalize", {}, [], args=("--quiet", "--no-finalize")),
        stderr_case("stderr.clean.debug-info", {"NCCL_DEBUG": "INFO"}, nothing_of_plugin, args=()),
        stderr_case("stderr.clean.debug-profile", {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "PROFILE"},
                    plugin_info, args=()),
        stderr_case("stderr.typo", TYPO, [("Inspector: ", TYPO_SAID)]),
        stderr_case("stderr.typo.debug-profile", dict(TYPO, **PROFILE),
                    [("NCCL WARN Inspector: ", TYPO_SAID)]),
        stderr_case("stderr.dir", {}, [("Inspector: ", "NCCL_INSPECTOR_DUMP_DIR: cannot write to '%DIR%'"),
                                       ("Inspector: ", "records could not be written to %DIR%")],
                    bad_dir=True),
        stderr_case("stderr.disabled", {}, [("Inspector: ", "NCCL_INSPECTOR_ENABLE is not set")],
                    enable=False),
    ]

if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

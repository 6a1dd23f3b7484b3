#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Names taken before the plugin creates its files: a link planted by another user of a shared
dump directory, or a file left by an earlier process that had the same pid.

The entry is planted in the replay's own process just before it execs (so at the pid the plugin
will have), at the name the plugin would use:
  plant.log.link       a link to a file of ours (mode 0600): the target keeps its content and
                       mode, the link stays a link, the records go to a new file beside it
                       (checked against the oracle), and a WARN names both
  plant.log.dangling   a link to a name that does not exist: nothing is created there
  plant.log.partial    a log left by a crashed process with our pid, ending without a newline:
                       left as it was, our records in a file of their own
  plant.trace.link     trace mode: a link at the trace file's name; the target is untouched and
                       the trace written beside it loads in inspector-replay
  plant.prom.links     Prometheus mode: links at the final .prom name and at the temporary name
                       the plugin used to write first: the targets are untouched, the .prom
                       file is a regular file with the metrics
"""
import gzip
import os
import socket
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402

SECRET = b"not yours to write\n"
FIXTURE = "2.28.9/ar"


def plant(where_fn):
    """preexec_fn: call where_fn(pid, host) in the replay's process, before exec."""
    def fn():
        where_fn(os.getpid(), socket.gethostname())
    return fn


def run(a, wd, env_extra, args, preexec):
    """The replay; returns (rc, stderr, pid, repro). The planted names derive from the pid,
    which preexec_fn sees as os.getpid() in the child (what it writes there stays there)."""
    env = harness.make_env(env_extra)
    cmd = [a.replay, "--plugin", a.plugin, "--logger-dies"] + args
    p = subprocess.Popen(cmd, env=env, cwd=wd.cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=preexec)
    _, err = p.communicate(timeout=a.timeout)
    return p.returncode, err.decode(errors="replace"), p.pid, harness.shell_line(cmd, env_extra)


HOST = socket.gethostname()


def make_target(wd):
    target = os.path.join(wd.path, "target")
    with open(target, "wb") as f:
        f.write(SECRET)
    os.chmod(target, 0o600)
    return target


def target_intact(target, problems):
    with open(target, "rb") as f:
        data = f.read()
    if data != SECRET:
        problems.append("the link's target was written: %r" % data[:100])
    mode = os.stat(target).st_mode & 0o777
    if mode != 0o600:
        problems.append("the link's target was chmodded to %o" % mode)


def check_records(a, wd, dump, planted_names, pid, problems):
    """Move the planted entries aside, then check what the plugin wrote against the oracle."""
    aside = os.path.join(wd.path, "aside")
    os.makedirs(aside, exist_ok=True)
    for n in planted_names:
        os.rename(os.path.join(dump, n), os.path.join(aside, n))
    env = harness.make_env({})
    exp = harness.fixture_expectation([harness.fixture(FIXTURE)], harness.RunConfig(env))
    errors, summary = logcheck.check_dump(dump, exp, pids={pid})
    problems += errors.items
    return summary


def log_case(name, kind):
    def fn(a):
        with harness.Workdir(a.keep, "plant") as wd:
            dump = os.path.join(wd.path, "dump")
            os.makedirs(dump)
            target = make_target(wd)

            def log_path(pid):
                return os.path.join(dump, "%s-pid%d.log" % (HOST, pid))

            def where(pid, host):
                p = log_path(pid)
                if kind == "link":
                    os.symlink(target, p)
                elif kind == "dangling":
                    os.symlink(os.path.join(wd.path, "made-through-link"), p)
                else:
                    with open(p, "wb") as f:
                        f.write(b'{"a partial line left by a crash"')
            rc, err, pid, repro = run(a, wd, {"NCCL_INSPECTOR_DUMP_DIR": dump},
                                      [harness.fixture(FIXTURE)], plant(where))
            problems = [] if rc == 0 else ["replay rc %s\n%s" % (rc, harness._tail(err))]
            problems += harness.sanitizer_reports(err)
            path = log_path(pid)
            if kind == "link":
                target_intact(target, problems)
            if kind == "dangling" and os.path.lexists(os.path.join(wd.path, "made-through-link")):
                problems.append("a file was created through the dangling link")
            if kind in ("link", "dangling") and not os.path.islink(path):
                problems.append("the planted link was replaced")
            if kind == "partial":
                with open(path, "rb") as f:
                    if f.read() != b'{"a partial line left by a crash"':
                        problems.append("the earlier process's log was written to")
            warns = [l for l in err.splitlines() if "NCCL WARN" in l and path in l]
            if not warns:
                problems.append("no WARN names %s" % path)
            ours = [f for f in os.listdir(dump) if f != os.path.basename(path)]
            if len(ours) != 1 or not ours[0].endswith(".log"):
                problems.append("files written: %s, expected one new .log" % ours)
            else:
                mode = os.stat(os.path.join(dump, ours[0])).st_mode & 0o777
                if mode != 0o644:
                    problems.append("%s has mode %o, expected 644" % (ours[0], mode))
                if not any(ours[0] in w for w in warns):
                    problems.append("the WARN does not name the new file %s: %s" % (ours[0], warns))
            summary = check_records(a, wd, dump, [os.path.basename(path)], pid, problems)
            if problems:
                wd.failed = True
                return False, "FAIL %s:\n  %s\n  repro: %s" % (name, "\n  ".join(problems[:20]),
                                                               repro)
            return True, "OK %s: %d records in %s; %s" % (name, summary["found"], ours[0],
                                                        warns[0].strip()[:160])
    return harness.Case(name, fn, labels=["config"], timeout=60)


def trace_case():
    def fn(a):
        with harness.Workdir(a.keep, "plant") as wd:
            dump, tdir = os.path.join(wd.path, "dump"), os.path.join(wd.path, "trace")
            os.makedirs(tdir)
            target = make_target(wd)

            def trace_path(pid):
                return os.path.join(tdir, "%s-pid%d.trace.jsonl" % (HOST, pid))

            def where(pid, host):
                os.symlink(target, trace_path(pid))
            rc, err, pid, repro = run(a, wd, {"NCCL_INSPECTOR_DUMP_DIR": dump,
                                            "NCCL_INSPECTOR_TRACE_DIR": tdir},
                                    [harness.fixture(FIXTURE)], plant(where))
            problems = [] if rc == 0 else ["replay rc %s\n%s" % (rc, harness._tail(err))]
            target_intact(target, problems)
            if not os.path.islink(trace_path(pid)):
                problems.append("the planted link was replaced")
            ours = [os.path.join(tdir, f) for f in os.listdir(tdir)
                    if os.path.join(tdir, f) != trace_path(pid)]
            if len(ours) != 1:
                problems.append("trace files written: %s, expected one" % ours)
            else:
                # the trace written beside the link replays like the fixture it came from
                r2 = subprocess.run([a.replay, "--plugin", a.plugin, "--quiet", ours[0]],
                                    env=harness.make_env({}, enable=False), cwd=wd.cwd,
                                    capture_output=True, timeout=a.timeout)
                if r2.returncode != 0:
                    problems.append("the trace does not replay: %s" % r2.stderr.decode()[-500:])
                with gzip.open(harness.fixture(FIXTURE), "rb") as f:
                    want = sum(1 for l in f if l.strip())
                with open(ours[0], "rb") as f:
                    got = sum(1 for l in f if l.strip())
                if got != want:
                    problems.append("the trace has %d lines, the fixture replayed %d" % (got, want))
            if problems:
                wd.failed = True
                return False, "FAIL plant.trace.link:\n  %s\n  repro: %s" % (
                    "\n  ".join(problems[:20]), repro)
            return True, "OK plant.trace.link: trace in %s" % os.path.basename(ours[0])
    return harness.Case("plant.trace.link", fn, labels=["trace"], timeout=60)


def prom_case():
    def fn(a):
        with harness.Workdir(a.keep, "plant") as wd:
            dump = os.path.join(wd.path, "dump")
            os.makedirs(dump)
            target = make_target(wd)

            def link_paths(pid):
                # device identity without a GPU runtime: nodev-<host>-pid<pid>-gpu<ordinal>
                out = []
                for gpu in (0, 1):
                    uuid = "nodev-%s-pid%d-gpu%d" % (HOST, pid, gpu)
                    out += [os.path.join(dump, "nccl_inspector_metrics_%s.prom" % uuid),
                            os.path.join(dump, ".nccl_inspector_metrics_%s.prom.tmp%d"
                                         % (uuid, pid))]
                return out

            def where(pid, host):
                for p in link_paths(pid):
                    os.symlink(target, p)
            rc, err, pid, repro = run(a, wd, {"NCCL_INSPECTOR_DUMP_DIR": dump,
                                              "NCCL_INSPECTOR_PROM_DUMP": "1"},
                                      ["--no-finalize", harness.fixture(FIXTURE)], plant(where))
            links = link_paths(pid)
            problems = [] if rc == 0 else ["replay rc %s\n%s" % (rc, harness._tail(err))]
            target_intact(target, problems)
            proms = [l for l in links if l.endswith(".prom")]
            for p in proms:
                if os.path.islink(p) or not os.path.isfile(p):
                    problems.append("%s is not a regular file" % os.path.basename(p))
                else:
                    with open(p) as f:
                        text = f.read()
                    if "nccl_bus_bandwidth_gbs{" not in text:
                        problems.append("%s holds no bandwidth sample" % os.path.basename(p))
                    if os.stat(p).st_mode & 0o777 != 0o644:
                        problems.append("%s mode %o" % (p, os.stat(p).st_mode & 0o777))
            leftovers = [f for f in os.listdir(dump) if f.startswith(".") and
                         os.path.join(dump, f) not in links]
            if leftovers:
                problems.append("temporary files left: %s" % leftovers)
            if problems:
                wd.failed = True
                return False, "FAIL plant.prom.links:\n  %s\n  repro: %s" % (
                    "\n  ".join(problems[:20]), repro)
            return True, "OK plant.prom.links: %d .prom files replaced their links" % len(proms)
    return harness.Case("plant.prom.links", fn, labels=["prom"], timeout=60)


def cases():
    return [log_case("plant.log.link", "link"), log_case("plant.log.dangling", "dangling"),
            log_case("plant.log.partial", "partial"), trace_case(), prom_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

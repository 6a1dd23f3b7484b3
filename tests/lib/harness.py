# SPDX-License-Identifier: Apache-2.0
"""Shared machinery of the replay tests: locate the binaries, run inspector-replay with a fresh
dump directory, derive the oracle's configuration from the environment the plugin sees, and
check the dump with tests/lib/logcheck.py.  Standard library only; python3 >= 3.9.

Binaries: --replay / --plugin on the command line, else $INSPECTOR_REPLAY / $INSPECTOR_PLUGIN,
else <repo>/build/bin/inspector-replay and <repo>/build/lib/libnccl-profiler-inspector.so.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

LIB = os.path.dirname(os.path.abspath(__file__))  # tests/lib: this module and its peers
HERE = os.path.dirname(LIB)  # tests/
sys.path.insert(0, LIB)
import logcheck  # noqa: E402
import oracle  # noqa: E402

REPO = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data")
V28 = os.path.join(DATA, "nccl-2.28.9-h200x2")
V27 = os.path.join(DATA, "nccl-2.27.7-h200x2")
V30 = os.path.join(DATA, "nccl-2.30.7-h200x2")
EDGE = os.path.join(DATA, "edge")

# Variables a test run must not inherit from the developer's shell.
SCRUB = re.compile(r"^(NCCL_INSPECTOR_.*|NCCL_PROFILER_PLUGIN|INSPECTOR_PLUGIN|SLURM_JOB_?ID|"
                   r"PBS_JOBID|LSB_JOBID|NCCL_DEBUG.*)$")


def fixture(name):
    """Path of a fixture by short name, e.g. 'ar' or '2.27.7/sr' or 'edge/no_kernel'."""
    if "/" in name:
        d, n = name.split("/", 1)
        base = EDGE if d == "edge" else os.path.join(DATA, "nccl-%s-h200x2" % d)
    else:
        base, n = V28, name
    for f in sorted(os.listdir(base)):
        if f == n or f.startswith(n + "-") or f.startswith(n + "."):
            return os.path.join(base, f)
    raise FileNotFoundError("no fixture %r in %s" % (name, base))


def common_args(desc):
    ap = argparse.ArgumentParser(description=desc)
    ap.add_argument("--replay", default=os.environ.get("INSPECTOR_REPLAY",
                                                       os.path.join(REPO, "build", "bin",
                                                                    "inspector-replay")))
    ap.add_argument("--plugin", default=os.environ.get(
        "INSPECTOR_PLUGIN", os.path.join(REPO, "build", "lib", "libnccl-profiler-inspector.so")))
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--timeout", type=float, default=120.0, help="per replay run, seconds")
    return ap


def check_binaries(a):
    for what, p in (("replay", a.replay), ("plugin", a.plugin)):
        if not os.path.exists(p):
            print("FAIL: %s binary not found: %s" % (what, p), file=sys.stderr)
            sys.exit(1)


# ---------------------------------------------------------------------------
# Configuration the plugin derives from its environment [seed, CONTRACTS.md]
# ---------------------------------------------------------------------------

def _parse_int(s, minimum):
    """A strict decimal integer (surrounding blanks tolerated), or None."""
    if s is None or not re.fullmatch(r"\s*[-+]?[0-9]+\s*", s):
        return None
    v = int(s)
    return v if v >= minimum else None


def _parse_bool(s):
    return {"0": False, "1": True}.get(s.strip()) if s is not None else None


def _parse_bounds(s):
    """NCCL_INSPECTOR_BOUNDS: apart, mix or off (a boolean too: on is apart), or None."""
    v = s.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return "apart"
    if v in ("0", "false", "no", "off"):
        return "off"
    return v if v in ("apart", "mix") else None


def _parse_seconds(s):
    """NCCL_INSPECTOR_HANG_SECONDS: digits with an optional fraction (surrounding blanks
    tolerated; no sign, exponent, hex, inf or nan), or None. Values the plugin raises to
    0.1 s or lowers to a week are valid (warned, but not malformed)."""
    if s is None or not re.fullmatch(r"\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*", s):
        return None
    return float(s)


class RunConfig:
    """The oracle's view of the plugin configuration implied by `env`.

    Invalid values fall back to the default (and the plugin must warn about them: the names
    of such variables are in .invalid)."""

    def __init__(self, env):
        self.invalid = []
        self.min_size = self._get(env, "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", 8192,
                                  lambda s: _parse_int(s, 0))
        self.p2p = self._get(env, "NCCL_INSPECTOR_ENABLE_P2P", True, _parse_bool)
        self.require_kernel = self._get(env, "NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING", True,
                                        _parse_bool)
        self.verbose = self._get(env, "NCCL_INSPECTOR_DUMP_VERBOSE", False, _parse_bool)
        self.interval = self._get(env, "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", -1,
                                  lambda s: _parse_int(s, -1))
        self.thread_enable = self._get(env, "NCCL_INSPECTOR_DUMP_THREAD_ENABLE", True,
                                       _parse_bool)
        self.hang_seconds = self._get(env, "NCCL_INSPECTOR_HANG_SECONDS", 300.0, _parse_seconds)
        self.coll_ring = self._get(env, "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE", None,
                                   lambda s: _parse_int(s, 1))
        self.p2p_ring = self._get(env, "NCCL_INSPECTOR_DUMP_P2P_RING_SIZE", None,
                                  lambda s: _parse_int(s, 1))
        self.bounds = self._get(env, "NCCL_INSPECTOR_BOUNDS", "apart", _parse_bounds)
        self.enabled = env.get("NCCL_INSPECTOR_ENABLE") == "1"

    def _get(self, env, name, default, parse):
        s = env.get(name)
        if s is None or s == "":   # empty means unset
            return default
        v = parse(s)
        if v is None:
            self.invalid.append((name, s))
            return default
        return v

    def oracle_config(self, abi=None):
        return oracle.Config(min_size=self.min_size, p2p=self.p2p,
                             require_kernel=self.require_kernel, abi=abi,
                             quiet=self.hang_seconds > 0 and self.thread_enable)


# ---------------------------------------------------------------------------
# Running the replay
# ---------------------------------------------------------------------------

class Run:
    """One finished replay: rc, stdout, stderr, window (us), pid, dump dir, cwd."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def warn_lines(self):
        return [l for l in self.stderr.splitlines() if "NCCL WARN" in l]


# What NCCL needs to print every message of the plugin (inspector-replay's logger prints as
# NCCL would: nothing without NCCL_DEBUG, and only the subsystems NCCL_DEBUG_SUBSYS names).
NCCL_DEBUG_ALL = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "PROFILE"}


def make_env(extra=None, unset=(), enable=True, dump_dir=None, debug=True):
    """The environment of a run: the developer's without any variable of ours or NCCL's
    debug settings, then NCCL_DEBUG_ALL (debug: the tests read the plugin's messages), then
    extra, less unset. debug=False: a job that set no NCCL_DEBUG."""
    env = {k: v for k, v in os.environ.items() if not SCRUB.match(k)}
    if debug:
        env.update(NCCL_DEBUG_ALL)
    if enable:
        env["NCCL_INSPECTOR_ENABLE"] = "1"
    if dump_dir is not None:
        env["NCCL_INSPECTOR_DUMP_DIR"] = dump_dir
    for k, v in (extra or {}).items():
        env[k] = v
    for k in unset:
        env.pop(k, None)
    return env


def replay_cmd(replay, plugin, traces=(), abi=None, threads=False, procs=False, repeat=None,
               synthetic=None, truth=None):
    cmd = [replay, "--plugin", plugin]
    if abi:
        cmd += ["--abi", str(abi)]
    if threads:
        cmd.append("--threads")
    if procs:
        cmd.append("--procs")
    if repeat:
        cmd += ["--repeat", str(repeat)]
    if synthetic is not None:
        cmd.append("--synthetic")
        cmd += list(synthetic)
        if truth:
            cmd += ["--truth", truth]
    cmd += list(traces)
    return cmd


def run(cmd, env, cwd, timeout):
    t0 = time.time()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        out, err = p.communicate()
        return Run(rc=None, stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"),
                   window=(int(t0 * 1e6), int(time.time() * 1e6)), pid=p.pid, cmd=cmd,
                   timed_out=True)
    t1 = time.time()
    return Run(rc=p.returncode, stdout=out.decode(errors="replace"),
               stderr=err.decode(errors="replace"), window=(int(t0 * 1e6), int(t1 * 1e6)),
               pid=p.pid, cmd=cmd, timed_out=False)


def _kill_group(p):
    """SIGKILL the process group of a child this harness started (start_new_session)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def shell_line(cmd, env_extra):
    import shlex
    return " ".join(["%s=%s" % (k, shlex.quote(v)) for k, v in env_extra.items()] +
                    [shlex.quote(c) for c in cmd])


def report_outputs(exe, out, files, threads=1, timeout=300):
    """Every output of inspector-report --threads N on files (in that order), as
    {name: bytes}: text and --json on stdout, and the files of --csv, --html and --trace
    under out (emptied first, the same paths on every call, so that paths printed match).
    (None, why) when the report fails. For tests that require two runs to agree byte for byte."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "csv"))
    got = {}
    for fmt, extra in (("text", ["--csv", os.path.join(out, "csv"), "--html", os.path.join(out, "page.html"),
                                 "--trace", os.path.join(out, "trace.json")]), ("json", ["--json"])):
        p = subprocess.run([exe, "--threads", str(threads)] + extra + list(files), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        if p.returncode != 0:
            return None, "report rc %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-2000:])
        got[fmt] = p.stdout
    for root, _, names in os.walk(out):
        for n in names:
            with open(os.path.join(root, n), "rb") as f:
                got[os.path.relpath(os.path.join(root, n), out)] = f.read()
    return got, ""


class Workdir:
    """A fresh temporary directory with dump/ and cwd/ below it; removed unless kept."""

    def __init__(self, keep=False, tag="replay"):
        self.path = tempfile.mkdtemp(prefix="inspector-%s-" % tag)
        self.dump = os.path.join(self.path, "dump")
        self.cwd = os.path.join(self.path, "cwd")
        os.makedirs(self.cwd)
        self.keep = keep
        self.failed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.keep or self.failed or exc[0] is not None:
            print("(kept %s)" % self.path, file=sys.stderr)
        else:
            shutil.rmtree(self.path, ignore_errors=True)


# ---------------------------------------------------------------------------
# A fixture replay checked against the oracle
# ---------------------------------------------------------------------------

def fixture_expectation(traces, cfg: RunConfig, ring=None, repeat=1, check_order=False,
                        single_dump=False, abi=None):
    recs, ctxs = [], []
    for t in traces:
        c, r = oracle.expected_records(t, cfg.oracle_config(abi))
        ctxs += c
        recs += r
    return logcheck.Expectation(recs, ctxs, verbose=cfg.verbose, ring=ring,
                                multiplicity=repeat or 1, check_order=check_order,
                                single_dump=single_dump)


def replay_and_check(a, traces, env_extra=None, abi=None, threads=False, procs=False,
                     repeat=None, ring=None, check_order=False, expect_warn=(), forbid_warn=(),
                     warn_max=None, label=None, single_dump=False):
    """Run the replay on fixture traces and check its dump.  Returns (ok, message)."""
    env_extra = dict(env_extra or {})
    traces = [os.path.abspath(t) for t in traces]   # the replay runs in a temporary cwd
    label = label or " ".join(os.path.basename(t) for t in traces)
    with Workdir(a.keep) as wd:
        os.makedirs(wd.dump)
        env = make_env(env_extra, dump_dir=wd.dump)
        cfg = RunConfig(env)
        cmd = replay_cmd(a.replay, a.plugin, traces, abi=abi, threads=threads, procs=procs,
                         repeat=repeat)
        r = run(cmd, env, wd.cwd, a.timeout)
        repro = "  repro: " + shell_line(cmd, dict(env_extra, NCCL_INSPECTOR_ENABLE="1",
                                                   NCCL_INSPECTOR_DUMP_DIR=wd.dump))
        problems = []
        if r.timed_out:
            problems.append("replay timed out after %ss" % a.timeout)
        elif r.rc != 0:
            problems.append("replay exited with %s" % r.rc)
        exp = fixture_expectation(traces, cfg, ring=ring, repeat=repeat, check_order=check_order,
                                  single_dump=single_dump, abi=abi)
        errors, summary = logcheck.check_dump(wd.dump, exp, window=r.window,
                                              pids=None if procs else {r.pid},
                                              job_id=logcheck.expected_job_id(env))
        problems += errors.items
        problems += check_warnings(r, cfg, expect_warn, warn_max, forbid_warn)
        problems += sanitizer_reports(r.stderr)
        if problems:
            wd.failed = True
            errs = logcheck.Errors()
            errs.items = problems
            msg = ("FAIL %s: %d problems (records expected %d, found %d)\n%s\n%s\n  replay stderr "
                   "(tail):\n%s" % (label, len(problems), summary["expected"], summary["found"],
                                    errs.render(), repro, _tail(r.stderr)))
            return False, msg
        return True, "OK %s: records expected %d, found %d%s%s" % (
            label, summary["expected"], summary["found"],
            ", dropped %d" % summary["dropped"] if summary["dropped"] else "",
            ", and %d bound lines" % summary["bounds"] if summary["bounds"] else "")


def check_warnings(r, cfg, expect_warn=(), warn_max=None, forbid_warn=()):
    """Each invalid variable must be named, with its value, on an `NCCL WARN` line; each
    `expect_warn` pattern must match between 1 and warn_max (if given) WARN lines, each
    `forbid_warn` pattern none."""
    problems = []
    warns = r.warn_lines()
    for name, value in cfg.invalid:
        if not any(name in l and value.strip() in l for l in warns):
            problems.append("no `NCCL WARN` line names %s and its value %r; WARN lines: %s"
                            % (name, value, warns[:5]))
    for pat in expect_warn:
        n = sum(1 for l in warns if re.search(pat, l, re.I))
        if n == 0:
            problems.append("no `NCCL WARN` line matches /%s/; WARN lines: %s" % (pat, warns[:5]))
        elif warn_max is not None and n > warn_max:
            problems.append("%d `NCCL WARN` lines match /%s/, at most %d expected"
                            % (n, pat, warn_max))
    for pat in forbid_warn:
        bad = [l for l in warns if re.search(pat, l, re.I)]
        if bad:
            problems.append("`NCCL WARN` lines match /%s/, none expected: %s" % (pat, bad[:3]))
    return problems


SANITIZER = re.compile(r"WARNING: ThreadSanitizer|ERROR: AddressSanitizer|ERROR: LeakSanitizer|"
                       r"runtime error:|SUMMARY: \w+Sanitizer")


def sanitizer_reports(stderr):
    """A sanitizer report in the replay's stderr is a failure even if the exit code hides it
    (a --procs child's report, a sanitizer configured not to change the exit status)."""
    lines = [l for l in stderr.splitlines() if SANITIZER.search(l)]
    return ["sanitizer report in the replay's stderr: %s" % l for l in lines[:5]]


def _tail(s, n=15):
    lines = s.splitlines()
    return "\n".join("    " + l for l in lines[-n:]) if lines else "    (empty)"


# ---------------------------------------------------------------------------
# Synthetic traffic (CONTRACTS.md section 3: the truth file)
# ---------------------------------------------------------------------------

def truth_expectation(truth_path, cfg: RunConfig):
    """Expected records from a synthetic truth file: one line per op per rank.

    Same rules as the oracle [C2]: size filter, P2P switch, sends to self skipped; start and
    exec from the truth's GPU timing model; algo RING, proto LL below 64 KiB else SIMPLE
    (CONTRACTS.md section 1, synthetic traffic).  Returns (contexts, records, problems in the
    truth file itself)."""
    ctxs = {}
    recs = []
    problems = []
    with open(truth_path) as f:
        for n, line in enumerate(f, 1):
            try:
                t = json.loads(line)
            except ValueError as e:
                problems.append("truth %s:%d: not JSON (%s)" % (truth_path, n, e))
                continue
            if "hang" in t:  # --hang-rank's last line (CONTRACTS.md section 3): no record
                continue
            comm = int(t["comm"], 16)
            header = {"id": "0x%x" % comm, "comm_name": t["comm_name"] or "unknown",
                      "rank": t["rank"], "n_ranks": t["nranks"], "nnodes": t["nnodes"]}
            ctxs[(comm, t["rank"])] = {"comm": comm, "rank": t["rank"], "header": header}
            kind = t["kind"]
            size = oracle.DTYPE_SIZE.get(t["datatype"], 0) * t["count"]
            if size != t["bytes"]:
                problems.append("truth %s:%d: bytes %d is not count x size %d"
                                % (truth_path, n, t["bytes"], size))
            if kind == "p2p" and (not cfg.p2p or t["peer"] == t["rank"]):
                continue
            if t["bytes"] < cfg.min_size:
                continue
            p = kind
            bw_bytes = t["bytes"] * (t["nranks"] if t["func"] in ("AllGather", "ReduceScatter")
                                     else 1)
            ns = t["exec_ns"]
            algobw = oracle.gbs(bw_bytes, ns)
            perf = {p: t["func"], p + "_sn": t["sn"], p + "_msg_size_bytes": t["bytes"],
                    p + "_exec_time_us": ns // 1000, p + "_timing_source": "kernel_gpu",
                    p + "_algobw_gbs": algobw,
                    p + "_busbw_gbs": algobw * oracle.busbw_factor(t["func"], t["nranks"]),
                    p + "_exec_time_ns": ns, p + "_start_ts_ns": t["start_ns"],
                    p + "_datatype": t["datatype"], p + "_count": t["count"],
                    p + "_nchannels": t["nchannels"], p + "_stale_channels": 0}
            if kind == "p2p":
                perf["p2p_peer"] = t["peer"]
            else:
                perf["coll_algo"] = "RING"
                perf["coll_proto"] = "LL" if t["bytes"] < 65536 else "SIMPLE"
            recs.append({"trace": os.path.basename(truth_path), "kind": kind, "comm": comm,
                         "rank": t["rank"], "sn": t["sn"], "header": header, "perf": perf,
                         "loose": set(), "channels": None, "complete_at": n})
    return list(ctxs.values()), recs, problems



# ---------------------------------------------------------------------------
# Test scripts: named cases, listed for ctest (--list) and run one (--case) or all
# ---------------------------------------------------------------------------

class Case:
    """One ctest: `fn(args) -> (ok, message)`; labels for `ctest -L`; timeout in seconds."""

    def __init__(self, name, fn, labels=(), timeout=60):
        self.name, self.fn, self.labels, self.timeout = name, fn, list(labels), timeout


def main_cases(cases, desc, argv=None, needs_binaries=True):
    """Command line of every tests/test_*.py:
        test_x.py [--list] [--case NAME ...] [--replay BIN] [--plugin SO] [--keep]
    --list prints `name labels timeout` per case (for tests/CMakeLists.txt)."""
    ap = common_args(desc)
    ap.add_argument("--list", action="store_true", help="list the cases for ctest")
    ap.add_argument("--case", action="append", help="run only this case (repeatable)")
    a = ap.parse_args(argv)
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "duplicate case names"
    if a.list:
        for c in cases:
            print("%s %s %d" % (c.name, ",".join(c.labels) or "-", c.timeout))
        return 0
    if needs_binaries:
        check_binaries(a)
    selected = cases
    if a.case:
        unknown = [n for n in a.case if n not in names]
        if unknown:
            ap.error("unknown case(s) %s; --list shows them" % unknown)
        selected = [c for c in cases if c.name in a.case]
    failed = 0
    for c in selected:
        t0 = time.time()
        try:
            ok, msg = c.fn(a)
        except Exception as e:  # a crash of the checker is a failure too, with its traceback
            import traceback
            ok, msg = False, "FAIL %s: exception in the test\n%s" % (c.name,
                                                                     traceback.format_exc())
        dt = time.time() - t0
        print("[%s] %s (%.1fs)" % ("PASS" if ok else "FAIL", c.name, dt))
        print("    " + msg.replace("\n", "\n    "), file=sys.stdout if ok else sys.stderr)
        sys.stdout.flush()
        failed += not ok
    if len(selected) > 1:
        print("%d/%d cases passed" % (len(selected) - failed, len(selected)))
    return 1 if failed else 0


def fixture_case(name, traces, labels=(), timeout=90, **kw):
    """A case replaying fixture traces (short names, see fixture()) and checking the oracle."""
    def fn(a):
        paths = [fixture(t) for t in traces]
        return replay_and_check(a, paths, label=name, **kw)
    return Case(name, fn, labels=labels, timeout=timeout)

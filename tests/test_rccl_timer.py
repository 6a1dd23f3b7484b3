#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""RCCL's kernel timer in ticks (issue 12), proven without a GPU.

RCCL 2.28.3 on MI300X passes the kernel-channel pTimer as wall_clock64() ticks of a 100 MHz
clock, not ns [ABI "Reported for RCCL"].  When the HIP runtime is in the process the plugin asks
it for the clock's rate (hipDeviceGetAttribute, hipDeviceAttributeWallClockRate, kHz) and
decides from a communicator's first ops whether pTimers advance like host time (ns) or like
ticks (rate / 10^6 of it); it then writes every record in ns, and each dump_stats line says what
it decided: "gpu_timer": {"unit", "rate_khz", "basis", "ratio"}.  Without HIP nothing changes.

Here the HIP runtime is tests/plugins/fake_hip.c (lib/fakehip/libamdhip64.so next to the
plugin, or $INSPECTOR_FAKE_HIP), put in the replay with --preload; the fixtures' pTimers are
turned into ticks by tests/lib/tick_trace.py; --recorded-clock makes CLOCK_MONOTONIC, as the
plugin reads it, the recorded host time of the line being delivered, so pTimer and host clocks
advance as they did on the GPUs, however fast or loaded this machine is (--pace-recorded, real
sleeps to the recorded times, stretched host time under a loaded sanitizer run and is tested
on its own below).  Expected records come from the oracle (tests/lib/oracle.py) run on the
ORIGINAL ns trace.

  ticks.<f>          the trace in 100 MHz ticks, with HIP: every record of the ns trace, its
                     exec time within 1% (or one tick, if more), its start within a tick, its
                     bandwidths within that error; everything else exact; gpu_timer unit
                     "ticks", rate_khz 100000, basis "measured", a ratio on the ticks side;
                     one INFO line per process naming the GPU timer and ticks
  ticks.torch.threads, ticks.torch.procs   the same through --threads / --procs (both ranks)
  ns.<f>             the ns trace with HIP: records exactly as the oracle says, unit "ns"
  nohip.<f>          the tick trace without HIP: the plugin as before (records equal the
                     oracle's for the tick trace itself, 10x short), no gpu_timer, no INFO line
  rate.25000.torch   a 25 MHz clock (FAKE_HIP_WALL_CLOCK_KHZ=25000, trace in 25 MHz ticks): the
                     rate comes from HIP (rate_khz 25000, times scaled by 40 ns a tick)
  rate.25000.ns.ar   the ns trace with a 25 MHz HIP clock: still ns (decided from the trace)
  replay.*           the replay's side: --pace-recorded takes at least the recorded time
                     (plain, --threads, --procs), refuses --synthetic (exit 2) and a trace it
                     cannot pace (exit 1); --preload of a missing library exits 1; a negative
                     "t" is a bad line
The judgement is of what the plugin decided and wrote, never of how fast the machine is: the
host times the plugin sees are the recorded ones.
"""
import json
import math
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402
import oracle  # noqa: E402
import tick_trace  # noqa: E402

MI300X_KHZ = 100000
GPU_TIMER_KEYS = {"unit", "rate_khz", "basis", "ratio"}
# The gpu_timer member of a dump_stats line's text (a flat object): taken out before
# tests/lib/logcheck.py, which knows only the NCCL dump_stats, checks the rest.
GPU_TIMER_TEXT = re.compile(r',\s*"gpu_timer"\s*:\s*\{[^{}]*\}|"gpu_timer"\s*:\s*\{[^{}]*\}\s*,?')
# The fixtures: one process of nccl-tests all_reduce (two ranks in one file), sendrecv (P2P,
# channels 16+), PyTorch (every collective, two communicators), and ABI v4 (NCCL 2.27.7).
# Each spans 0.5 to 1.2 s of recorded time.
FIXTURES = ["ar", "sr", "torch", "2.27.7/ar"]


def fake_hip(a):
    p = os.environ.get("INSPECTOR_FAKE_HIP") or os.path.join(
        os.path.dirname(os.path.abspath(a.plugin)), "fakehip", "libamdhip64.so")
    return p


def tag(f):
    return f.replace("/", ".")


# ---------------------------------------------------------------------------
# Reading the dump
# ---------------------------------------------------------------------------

def split_gpu_timer(dump, checked):
    """Copy dump/*.log to checked/ without the gpu_timer members (byte for byte otherwise).
    Returns ([(where, gpu_timer object or None, raw text of it or None)] per dump_stats line,
    problems)."""
    os.makedirs(checked)
    stats, problems = [], []
    if not os.path.isdir(dump):
        return stats, problems
    for name in sorted(os.listdir(dump)):
        src = os.path.join(dump, name)
        if not name.endswith(".log"):
            continue
        out = []
        with open(src, "rb") as f:
            data = f.read().decode("utf-8", errors="replace")
        for n, line in enumerate(data.split("\n"), 1):
            if '"dump_stats"' in line:
                m = GPU_TIMER_TEXT.search(line)
                try:
                    obj = json.loads(line)["dump_stats"].get("gpu_timer")
                except (ValueError, AttributeError) as e:
                    problems.append("%s:%d: dump_stats line not readable (%s)" % (name, n, e))
                    obj = None
                stats.append(("%s:%d" % (name, n), obj, m.group(0) if m else None))
                if m:
                    line = line[:m.start()] + line[m.end():]
            out.append(line)
        with open(os.path.join(checked, name), "w") as f:
            f.write("\n".join(out))
    return stats, problems


def perf_lines(checked):
    """{record key: [Line]} of the perf records in a dump directory."""
    found = {}
    errs = logcheck.Errors()
    for lines in logcheck.read_dump_dir(checked, errs).values():
        for line in lines:
            if line.kind not in ("coll_perf", "p2p_perf"):
                continue
            k = line.kind[:-5]
            p, h = line.obj[line.kind], line.obj.get("header", {})
            try:
                key = oracle.record_key(int(h["id"], 16), h["rank"], k, p.get(k), p[k + "_sn"])
            except (KeyError, TypeError, ValueError):
                continue  # logcheck reports it
            found.setdefault(key, []).append(line)
    return found


# ---------------------------------------------------------------------------
# What a correct plugin writes
# ---------------------------------------------------------------------------

TIME_FIELDS = ("exec_time_ns", "exec_time_us", "start_ts_ns", "algobw_gbs", "busbw_gbs")


def loosen_times(recs):
    """The oracle's records with their time fields taken out of the exact comparison (kept
    aside in rec["times"] for check_scaled_times)."""
    for r in recs:
        p = r["perf"]
        r["times"] = {}
        for f in TIME_FIELDS:
            key = r["kind"] + "_" + f
            if key in p:
                r["times"][f] = p.pop(key)
                r["loose"] = set(r["loose"]) | {key}
    return recs


def check_scaled_times(recs, found, khz):
    """Records written from tick pTimers against the oracle's for the ns trace.

    A tick is 10^6 / khz ns and the tick trace holds each pTimer rounded down to one: the
    start may read up to a tick early (and the plugin may round its conversion: +1 ns); the
    execution time within 1%, or within one tick where a tick is more than 1% of it; the
    bandwidths (bytes / time) within the same relative error; exec_time_us = floor(ns / 1000)
    of the record's own ns [C2]."""
    tick = 1e6 / khz
    problems, ratios, bad_recs = [], [], 0
    for r in recs:
        k = r["kind"]
        key = oracle.record_key(r["comm"], r["rank"], k, r["perf"][k], r["sn"])
        for line in found.get(key, []):
            p = line.obj[k + "_perf"]
            w = "%s: %s" % (line.where(), logcheck.describe(r))
            want = r["times"]
            got = {f: p.get(k + "_" + f) for f in TIME_FIELDS}
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                       for v in got.values()):
                problems.append("%s: time fields not all numbers: %s" % (w, got))
                continue
            n_before = len(problems)
            tol = max(0.01 * want["exec_time_ns"], tick)
            if want["exec_time_ns"]:
                ratios.append(got["exec_time_ns"] / want["exec_time_ns"])
            if abs(got["exec_time_ns"] - want["exec_time_ns"]) > tol:
                problems.append("%s: exec_time_ns %s, expected %d within %.0f (x%.4f)"
                                % (w, got["exec_time_ns"], want["exec_time_ns"], tol,
                                   got["exec_time_ns"] / want["exec_time_ns"]))
            if abs(got["start_ts_ns"] - want["start_ts_ns"]) > tick + 1:
                problems.append("%s: start_ts_ns %s, expected %d within a tick (%.0f ns)"
                                % (w, got["start_ts_ns"], want["start_ts_ns"], tick))
            if got["exec_time_us"] != int(got["exec_time_ns"]) // 1000:
                problems.append("%s: exec_time_us %s is not floor(exec_time_ns %s / 1000)"
                                % (w, got["exec_time_us"], got["exec_time_ns"]))
            # bandwidth ~ 1 / time: a time short by tol is a bandwidth high by tol / (t - tol)
            rel = tol / max(1.0, want["exec_time_ns"] - tol)
            for f in ("algobw_gbs", "busbw_gbs"):
                if want[f] == 0:
                    continue
                if abs(got[f] / want[f] - 1) > rel + 1e-6:
                    problems.append("%s: %s %s, expected %.6f within %.2f%%"
                                    % (w, f, got[f], want[f], 100 * rel))
            bad_recs += len(problems) > n_before
    if bad_recs:
        ratios.sort()
        problems.insert(0, "%d of %d records have times off; exec time written / oracle's for "
                        "the ns trace: median x%.4f (min x%.4f, max x%.4f); the first of them:"
                        % (bad_recs, len(ratios), ratios[len(ratios) // 2], ratios[0],
                           ratios[-1]))
        problems = problems[:13]
    return problems


def check_gpu_timer(stats, unit, khz, raw_ok=True):
    """Each dump_stats line's gpu_timer: absent without HIP (unit None), else the decision."""
    problems = []
    if unit is None:
        for where, obj, raw in stats:
            if obj is not None or raw is not None:
                problems.append("%s: dump_stats has a gpu_timer (%s) with no HIP runtime in the "
                                "process" % (where, raw))
        return problems
    if not stats:
        problems.append("no dump_stats line at all: nothing says how the GPU timer was read")
    # The ratio a clock in `unit` shows: pTimer progress / host progress, 1 for ns and
    # rate / 10^6 for ticks; the plugin snaps to the nearer in log scale, so the boundary
    # is their geometric mean.
    boundary = math.sqrt(khz / 1e6)
    for where, obj, raw in stats:
        if not isinstance(obj, dict):
            problems.append("%s: dump_stats has no gpu_timer object" % where)
            continue
        if set(obj) != GPU_TIMER_KEYS:
            problems.append("%s: gpu_timer keys %s, expected %s"
                            % (where, sorted(obj), sorted(GPU_TIMER_KEYS)))
        if obj.get("unit") != unit:
            problems.append("%s: gpu_timer unit %r, expected %r" % (where, obj.get("unit"), unit))
        if obj.get("rate_khz") != khz or isinstance(obj.get("rate_khz"), bool):
            problems.append("%s: gpu_timer rate_khz %r, expected %d (from HIP)"
                            % (where, obj.get("rate_khz"), khz))
        if obj.get("basis") != "measured":
            problems.append("%s: gpu_timer basis %r, expected \"measured\" (the trace's ops span "
                            "well over 2 ms)" % (where, obj.get("basis")))
        ratio = obj.get("ratio")
        if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or ratio <= 0:
            problems.append("%s: gpu_timer ratio %r is not a positive number" % (where, ratio))
        elif (unit == "ticks") != (ratio < boundary):
            problems.append("%s: gpu_timer ratio %s is on the %s side of %.4f, but unit is %r"
                            % (where, ratio, "ticks" if ratio < boundary else "ns", boundary,
                               unit))
        mt = re.search(r'"ratio"\s*:\s*([^,}\s]+)', raw or "")
        if raw_ok and (not mt or not re.fullmatch(r"[0-9]+\.[0-9]{6}", mt.group(1))):
            problems.append("%s: gpu_timer ratio printed as %s, expected 6 decimals"
                            % (where, mt.group(1) if mt else raw))
    return problems


def check_info(stderr, unit, nprocs):
    """One INFO line per process naming the GPU timer and the unit; none without HIP."""
    lines = [l for l in stderr.splitlines() if "GPU timer" in l]
    if unit is None:
        return ["a GPU timer line with no HIP runtime in the process: %s" % l for l in lines[:3]]
    problems = []
    if len(lines) != nprocs:
        problems.append("%d log lines name the GPU timer, expected one per process (%d): %s"
                        % (len(lines), nprocs, lines[:4]))
    word = re.compile(r"\bticks\b" if unit == "ticks" else r"\bns\b")
    for l in lines:
        if "INFO" not in l or not word.search(l):
            problems.append("GPU timer line is not an INFO line saying %r: %s" % (unit, l))
    return problems


# ---------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------

def timer_case(name, fixtures, khz=None, hip_khz=None, expect=None, threads=False, procs=False,
               timeout=60):
    """Replay `fixtures` with the recorded host clock.
    khz: convert the pTimers to ticks of a khz kHz clock first (None: the ns trace as is).
    hip_khz: put the stand-in HIP in the process, reporting this rate (None: no HIP).
    expect: the unit the plugin must decide ("ns" / "ticks"), None without HIP."""
    def fn(a):
        originals = [harness.fixture(f) for f in fixtures]
        with harness.Workdir(a.keep, "rccl") as wd:
            os.makedirs(wd.dump)
            traces = originals
            if khz:
                traces = []
                for p in originals:
                    dst = os.path.join(wd.path, os.path.basename(p).split(".")[0] +
                                       ".ticks%d.jsonl" % khz)
                    tick_trace.to_ticks(p, dst, khz)
                    traces.append(dst)
            env_extra = {}
            cmd = harness.replay_cmd(a.replay, a.plugin, traces, abi="trace", threads=threads,
                                     procs=procs)
            cmd[1:1] = ["--recorded-clock"]
            if hip_khz:
                hip = fake_hip(a)
                if not os.path.exists(hip):
                    return False, "FAIL %s: the stand-in HIP runtime is not built: %s" % (name,
                                                                                         hip)
                env_extra["FAKE_HIP_WALL_CLOCK_KHZ"] = str(hip_khz)
                cmd[1:1] = ["--preload", hip]
            env = harness.make_env(env_extra, dump_dir=wd.dump)
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            problems = []
            if r.timed_out or r.rc != 0:
                problems.append("replay failed: rc %s" % r.rc)
            problems += harness.sanitizer_reports(r.stderr)

            cfg = harness.RunConfig(env).oracle_config()
            scaled = bool(khz) and expect == "ticks"
            # ns trace, or no HIP: the oracle of the trace replayed, exactly; ticks with HIP:
            # the oracle of the original ns trace, times within a tick or 1%.
            ctxs, recs = [], []
            for p in (originals if scaled else traces):
                c, rr = oracle.expected_records(p, cfg)
                ctxs += c
                recs += rr
            if scaled:
                loosen_times(recs)
            checked = os.path.join(wd.path, "checked")
            stats, probs = split_gpu_timer(wd.dump, checked)
            problems += probs
            exp = logcheck.Expectation(recs, ctxs)
            errors, summary = logcheck.check_dump(checked, exp, window=r.window,
                                                  pids=None if procs else {r.pid})
            # what the plugin decided first: it explains the rest
            problems += check_gpu_timer(stats, expect, hip_khz)
            problems += check_info(r.stderr, expect, len(traces) if procs else 1)
            problems += errors.items
            if scaled:
                problems += check_scaled_times(recs, perf_lines(checked), khz)
            if problems:
                wd.failed = True
                errs = logcheck.Errors()
                errs.items = problems
                return False, "FAIL %s: %d problems (records expected %d, found %d)\n%s\n" \
                    "  repro: %s\n  replay stderr (tail):\n%s" % (
                        name, len(problems), summary["expected"], summary["found"],
                        errs.render(), harness.shell_line(cmd, dict(
                            env_extra, NCCL_INSPECTOR_ENABLE="1",
                            NCCL_INSPECTOR_DUMP_DIR=wd.dump)), harness._tail(r.stderr))
            decided = {json.dumps(o, sort_keys=True) for _, o, _ in stats if o}
            return True, "OK %s: records expected %d, found %d; gpu_timer %s" % (
                name, summary["expected"], summary["found"],
                ", ".join(sorted(decided)) or "absent")
    labels = ["rccl"] + (["threads"] if threads else []) + (["procs"] if procs else [])
    return harness.Case(name, fn, labels=labels, timeout=timeout)


def trace_span_s(path):
    first = last = None
    with oracle.open_trace(path) as f:
        for line in f:
            if line.strip():
                t = json.loads(line)["t"]
                first = t if first is None else first
                last = t
    return (last - first) / 1e9


def pace_case(name, fixtures, threads=False, procs=False):
    """--pace-recorded never delivers a line before its recorded time: the replay takes at
    least each trace's recorded span (their sum, or the longest with --procs).  Only a lower
    bound: a slow machine takes longer, which is allowed."""
    def fn(a):
        paths = [harness.fixture(f) for f in fixtures]
        spans = [trace_span_s(p) for p in paths]
        need = max(spans) if procs else sum(spans)
        with harness.Workdir(a.keep, "pace") as wd:
            os.makedirs(wd.dump)
            env = harness.make_env({}, dump_dir=wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, paths, threads=threads, procs=procs)
            cmd[1:1] = ["--pace-recorded", "--quiet"]
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            took = (r.window[1] - r.window[0]) / 1e6
            problems = []
            if r.timed_out or r.rc != 0:
                problems.append("replay failed: rc %s" % r.rc)
            problems += harness.sanitizer_reports(r.stderr)
            exp = harness.fixture_expectation(paths, harness.RunConfig(env))
            errors, _ = logcheck.check_dump(wd.dump, exp, window=r.window,
                                            pids=None if procs else {r.pid})
            problems += errors.items
            if took < need:
                problems.append("the paced replay took %.3f s, less than the %.3f s recorded"
                                % (took, need))
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n  repro: %s\n  stderr:\n%s" % (
                    name, "\n  ".join(problems[:20]), harness.shell_line(cmd, {}),
                    harness._tail(r.stderr))
            return True, "OK %s: took %.3f s for %.3f s recorded" % (name, took, need)
    return harness.Case(name, fn, labels=["rccl", "pace"], timeout=60)


def cli_case(name, build, want_rc, want_msg):
    """A replay the driver must refuse: exit status want_rc, a message matching want_msg.
    build(a, wd) -> the command line (after the binary)."""
    def fn(a):
        with harness.Workdir(a.keep, "cli") as wd:
            os.makedirs(wd.dump)
            args = build(a, wd)
            cmd = [a.replay, "--plugin", a.plugin] + args
            env = harness.make_env({}, dump_dir=wd.dump)
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            problems = []
            if r.rc != want_rc:
                problems.append("exit status %s, expected %d" % (r.rc, want_rc))
            if not re.search(want_msg, r.stderr):
                problems.append("no message matching /%s/" % want_msg)
            problems += harness.sanitizer_reports(r.stderr)
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n  cmd: %s\n  stderr:\n%s" % (
                    name, "; ".join(problems), harness.shell_line(cmd, {}),
                    harness._tail(r.stderr))
            return True, "OK %s: exit %d" % (name, r.rc)
    return harness.Case(name, fn, labels=["rccl", "pace"], timeout=30)


def _tiny_trace(wd, last_t, first_t=1):
    """init, finalize: the smallest trace, its two lines last_t - first_t ns apart."""
    p = os.path.join(wd.path, "tiny.jsonl")
    with open(p, "w") as f:
        f.write('{"t":%d,"tid":1,"cb":"init","ver":5,"ctx":1,"comm":"0x1","name":"",'
                '"nnodes":1,"nranks":1,"rank":0,"mask":70}\n' % first_t)
        f.write('{"t":%d,"tid":1,"cb":"finalize","ctx":1}\n' % last_t)
    return p


def converter_case():
    """tick_trace.to_ticks changes only kernel pTimers, to floor(ns * khz / 10^6)."""
    def fn(a):
        src = harness.fixture("edge/no_ptimer")   # zero pTimers, a missing record among them
        with harness.Workdir(a.keep, "ticks") as wd:
            problems = []
            for khz in (100000, 25000):
                dst = os.path.join(wd.path, "t%d.jsonl.gz" % khz)
                tick_trace.to_ticks(src, dst, khz)
                with oracle.open_trace(src) as f1, oracle.open_trace(dst) as f2:
                    a_lines, b_lines = f1.read().splitlines(), f2.read().splitlines()
                if len(a_lines) != len(b_lines):
                    problems.append("%d kHz: %d lines became %d" % (khz, len(a_lines),
                                                                    len(b_lines)))
                for n, (x, y) in enumerate(zip(a_lines, b_lines), 1):
                    ex, ey = json.loads(x), json.loads(y)
                    kernel = (ex["cb"] == "start" and ex.get("type") == 64) or \
                        (ex["cb"] == "record" and "ptimer" in ex)
                    if kernel:
                        ex["ptimer"] = ex["ptimer"] * khz // 1_000_000
                    if ex != ey or (not kernel and x != y):
                        problems.append("%d kHz line %d: %s became %s" % (khz, n, x, y))
            if problems:
                wd.failed = True
                return False, "FAIL converter: %s" % "\n  ".join(problems[:10])
            return True, "OK converter: only kernel pTimers changed, to ticks"
    return harness.Case("converter", fn, labels=["rccl", "selftest"], timeout=30)


def cases():
    out = []
    for f in FIXTURES:
        out.append(timer_case("ticks." + tag(f), [f], khz=MI300X_KHZ, hip_khz=MI300X_KHZ,
                              expect="ticks"))
    out.append(timer_case("ticks.torch.threads", ["torch"], khz=MI300X_KHZ, hip_khz=MI300X_KHZ,
                          expect="ticks", threads=True))
    out.append(timer_case("ticks.torch.procs", ["torch-1735", "torch-1736"], khz=MI300X_KHZ,
                          hip_khz=MI300X_KHZ, expect="ticks", procs=True))
    for f in FIXTURES:
        out.append(timer_case("ns." + tag(f), [f], hip_khz=MI300X_KHZ, expect="ns"))
    for f in FIXTURES:
        out.append(timer_case("nohip." + tag(f), [f], khz=MI300X_KHZ))
    out.append(timer_case("rate.25000.torch", ["torch"], khz=25000, hip_khz=25000,
                          expect="ticks"))
    out.append(timer_case("rate.25000.ns.ar", ["ar"], hip_khz=25000, expect="ns"))
    out.append(converter_case())
    out.append(pace_case("replay.pace_recorded", ["ar"]))
    out.append(pace_case("replay.pace_recorded.threads", ["torch"], threads=True))
    out.append(pace_case("replay.pace_recorded.procs", ["torch-1735", "torch-1736"], procs=True))
    out.append(cli_case("replay.pace_recorded.synthetic",
                        lambda a, wd: ["--pace-recorded", "--synthetic"], 2,
                        r"--pace-recorded.*synthetic"))
    out.append(cli_case("replay.pace_recorded.too_long",   # 2^32 us is 71.6 minutes
                        lambda a, wd: ["--pace-recorded", _tiny_trace(wd, 1 + 5000 * 10**9)], 1,
                        r"tiny\.jsonl: --pace-recorded: the trace spans more than"))
    out.append(cli_case("replay.long_trace.unpaced",   # only pacing needs the span to fit
                        lambda a, wd: [_tiny_trace(wd, 1 + 5000 * 10**9)], 0, r""))
    out.append(cli_case("replay.negative_t",
                        lambda a, wd: [_tiny_trace(wd, 5, first_t=-3)], 1,
                        r"tiny\.jsonl:1: .*\"t\""))
    out.append(cli_case("replay.preload.missing",
                        lambda a, wd: ["--preload", os.path.join(wd.path, "no-such-lib.so"),
                                       harness.fixture("edge/no_kernel")], 1,
                        r"cannot preload .*no-such-lib\.so"))
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sampled kernel timing (NCCL_INSPECTOR_SAMPLE_*): the replay plays NCCL, applying the
activation mask the plugin writes at each group start, and logs per Coll/P2p start the mask it
judged the op with (--mask-log).  Checked independently of the plugin:

groups.*   NCCL_INSPECTOR_SAMPLE_GROUPS=N: from the trace alone, an op's group number is the
           number of group ends (stops of GroupApi events when the driven ABI and the trace
           have them, else of Group events) before the group start whose mask it was tagged
           with; exactly the ops of groups 0, N, 2N, ... must
           be delivered, and the records must be the oracle's for the delivered ops only (no
           record for an op issued while sampling was off; p2p_sn counts delivered P2p only).
           With NCCL_INSPECTOR_SAMPLE_GROUPS_BURST=B, runs of B consecutive groups, one run in N.
           dump_stats carries {"mode":"groups","every":N,"burst":B,"groups","groups_timed",
           "covered"}.
time       NCCL_INSPECTOR_SAMPLE_WINDOW_MS=W, _PERIOD_MS=P on a paced replay: an op is delivered
           iff its group started in the first W ms of a wall-clock period of P ms (ops up to a
           third of a period after a boundary, or a few ms before one, are not judged: the
           flip is made by a thread, late when the machine is loaded); both states occur;
           records as above; dump_stats "covered" is near W/P.
graph.*    a CUDA-graph fixture: the first group captured into a graph freezes the mask at the
           value NCCL read for it (so captured ops launch under the mask they were captured
           with): every later op delivered iff that group was timed; one WARN.
threads.groups  the threads fixture on its recorded threads (group ends race): whatever was
           delivered, the records are exactly the oracle's for the delivered ops.
prom.groups  Prometheus stats: nccl_sampled_ratio carries the mode and N and equals
           groups_timed / groups.
config.*   bad or contradictory values: a WARN naming the variable and value, and every op timed.
"""
import glob
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402
import oracle  # noqa: E402
from harness import Case, fixture_case  # noqa: E402

TYPE_GROUP, TYPE_COLL, TYPE_P2P, TYPE_GROUP_API = 1, 2, 4, 256


def trace_lines(path):
    """The trace's events in replay order (one per non-empty line, as inspector-replay loads)."""
    with oracle.open_trace(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def group_numbers(events, abi_has_api):
    """{event index of each Coll/P2p start: its group number}, and the number of groups.

    Groups are counted at their ends: stops of GroupApi events when the driven ABI and the
    trace have them, else of Group events.  An op belongs to the group whose start last read
    the mask on its thread (GroupApi start, else Group start: where NCCL, and the replay,
    read it) [C1]; its number is the count of group ends before that start.  (NCCL 2.28.9
    stops a GroupApi event before the Group event that starts its ops, so counting ends
    before the op itself would be wrong.)"""
    use_api = abi_has_api and any(e["cb"] == "start" and e["type"] == TYPE_GROUP_API
                                  for e in events)
    mark = TYPE_GROUP_API if use_api else TYPE_GROUP
    types, ended, at_snap, out = {}, 0, {}, {}
    for i, e in enumerate(events):
        if e["cb"] == "start":
            types[e["id"]] = e["type"]
            if e["type"] == mark:
                at_snap[e["tid"]] = ended
            elif e["type"] in (TYPE_COLL, TYPE_P2P):
                out[i] = at_snap.get(e["tid"], ended)
        elif e["cb"] == "stop" and types.get(e["id"]) == mark:
            ended += 1
    return out, ended


def read_mask_log(path, trace):
    """[(index, tag, delivered, realtime_ns)] for `trace`."""
    out = []
    with open(path) as f:
        for line in f:
            idx, tag, dl, rt, p = line.rstrip("\n").split(" ", 4)
            if os.path.abspath(p) == os.path.abspath(trace):
                out.append((int(idx), int(tag), dl == "1", int(rt)))
    return out


def replay(a, wd, traces, env_extra, abi=None, threads=False, pace_us=None):
    os.makedirs(wd.dump)
    env = harness.make_env(env_extra, dump_dir=wd.dump)
    mlog = os.path.join(wd.cwd, "mask.log")
    cmd = harness.replay_cmd(a.replay, a.plugin, traces, abi=abi, threads=threads)
    cmd[1:1] = ["--mask-log", mlog] + (["--pace-us", str(pace_us)] if pace_us else [])
    r = harness.run(cmd, env, wd.cwd, a.timeout)
    problems = []
    if r.timed_out or r.rc != 0:
        problems.append("replay failed (rc %s, timed out %s)" % (r.rc, r.timed_out))
    problems += harness.sanitizer_reports(r.stderr)
    repro = "  repro: " + harness.shell_line(cmd, dict(env_extra, NCCL_INSPECTOR_ENABLE="1",
                                                       NCCL_INSPECTOR_DUMP_DIR=wd.dump))
    return r, env, mlog, problems, repro


def check_records(wd, r, env, traces, undelivered_by_trace, sampling_check, problems):
    cfg = harness.RunConfig(env)
    recs, ctxs = [], []
    for t in traces:
        c, rr = oracle.expected_records(t, cfg.oracle_config(), undelivered_by_trace[t])
        ctxs += c
        recs += rr
    exp = logcheck.Expectation(recs, ctxs, sampling=sampling_check)
    errors, summary = logcheck.check_dump(wd.dump, exp, window=r.window, pids={r.pid})
    problems += errors.items
    return summary


def undelivered_ids(events, log):
    return frozenset(events[i]["id"] for i, _, dl, _ in log if not dl)


def finish(name, wd, problems, r, repro, msg):
    if problems:
        wd.failed = True
        return False, "FAIL %s: %d problems\n  %s\n%s\n  replay stderr (tail):\n%s" % (
            name, len(problems), "\n  ".join(problems[:30]), repro, harness._tail(r.stderr))
    return True, "OK %s: %s" % (name, msg)


GROUPS_KEYS = {"mode", "every", "burst", "groups", "groups_timed", "graph_capture", "covered"}
TIME_KEYS = {"mode", "window_ms", "period_ms", "graph_capture", "covered"}


def fixed_fields(s, keys, expect):
    """Problems with a dump_stats "sampling" object: it must have exactly `keys`, and the
    fields of `expect` its values.  The first problem, if any, is the key set."""
    if set(s) != keys:
        return ["keys %s, expected %s" % (sorted(s), sorted(keys))]
    got = {k: s[k] for k in expect}
    return [] if got == expect else ["%r, expected %r" % (got, expect)]


def timed_groups(n, every, burst):
    """How many of groups 0..n-1 are timed: runs of `burst`, the first run of every `every`."""
    return sum(1 for k in range(n) if (k // burst) % every == 0)


def groups_case(name, fixture, every, abi="trace", burst=1):
    def fn(a):
        trace = os.path.abspath(harness.fixture(fixture))
        events = trace_lines(trace)
        ver = next(e["ver"] for e in events if e["cb"] == "init")
        driven = ver if abi == "trace" else int(abi)
        gnum, ngroups = group_numbers(events, driven >= 5)

        def sampling_check(s):
            p = fixed_fields(s, GROUPS_KEYS, {"mode": "groups", "every": every, "burst": burst})
            if p and p[0].startswith("keys"):
                return p
            # dumps happen at finalize: every group of the trace has ended by then
            timed = timed_groups(ngroups, every, burst)
            if s["groups"] != ngroups or s["groups_timed"] != timed:
                p.append("groups %s timed %s, expected %d and %d (from the trace)"
                         % (s["groups"], s["groups_timed"], ngroups, timed))
            elif abs(s["covered"] - timed / ngroups) > 1e-6:
                p.append("covered %s, expected %.6f" % (s["covered"], timed / ngroups))
            return p

        with harness.Workdir(a.keep) as wd:
            env_extra = {"NCCL_INSPECTOR_SAMPLE_GROUPS": str(every)}
            if burst != 1:
                env_extra["NCCL_INSPECTOR_SAMPLE_GROUPS_BURST"] = str(burst)
            r, env, mlog, problems, repro = replay(a, wd, [trace], env_extra, abi=abi)
            log = read_mask_log(mlog, trace) if os.path.exists(mlog) else []
            if len(log) != len(gnum):
                problems.append("mask log has %d Coll/P2p starts, the trace %d"
                                % (len(log), len(gnum)))
            bad = [(i, gnum.get(i), dl) for i, _, dl, _ in log
                   if dl != (i in gnum and (gnum[i] // burst) % every == 0)]
            if bad:
                problems.append("%d ops delivered against the pattern (runs of %d, one in %d), "
                                "e.g. (index, group, delivered) %s" % (len(bad), burst, every,
                                                                       bad[:5]))
            on = sum(1 for _, _, dl, _ in log if dl)
            if not 0 < on < len(log):
                problems.append("%d of %d ops delivered: the case tests nothing" % (on, len(log)))
            summary = check_records(wd, r, env, [trace], {trace: undelivered_ids(events, log)},
                                    sampling_check, problems)
            return finish(name, wd, problems, r, repro,
                          "%d groups, %d of %d ops timed, records expected %d, found %d"
                          % (ngroups, on, len(log), summary["expected"], summary["found"]))
    return Case(name, fn, labels=["sampling"])


def graph_case(name, fixture, every, burst):
    """A CUDA-graph capture freezes the mask at the value NCCL read for the captured group:
    ops before the first captured group follow the pattern, every later op (the launches,
    reported from NCCL's proxy thread) is delivered iff that group was timed."""
    def fn(a):
        trace = os.path.abspath(harness.fixture(fixture))
        events = trace_lines(trace)
        gnum, ngroups = group_numbers(events, True)
        first = next(i for i, e in enumerate(events) if e["cb"] == "start" and
                     e["type"] == TYPE_GROUP_API and e.get("graph"))
        types, ended = {}, 0
        for e in events[:first]:
            if e["cb"] == "start":
                types[e["id"]] = e["type"]
            elif e["cb"] == "stop" and types.get(e["id"]) == TYPE_GROUP_API:
                ended += 1
        frozen_on = (ended // burst) % every == 0
        want = {i: ((g // burst) % every == 0 if i < first else frozen_on)
                for i, g in gnum.items()}
        with harness.Workdir(a.keep) as wd:
            env_extra = {"NCCL_INSPECTOR_SAMPLE_GROUPS": str(every),
                         "NCCL_INSPECTOR_SAMPLE_GROUPS_BURST": str(burst)}
            r, env, mlog, problems, repro = replay(a, wd, [trace], env_extra, abi="trace")
            log = read_mask_log(mlog, trace) if os.path.exists(mlog) else []
            bad = [(i, dl) for i, _, dl, _ in log if dl != want.get(i)]
            if len(log) != len(want) or bad:
                problems.append("%d ops logged (%d in the trace), %d delivered against the frozen "
                                "mask (%s), e.g. %s" % (len(log), len(want), len(bad),
                                                        "on" if frozen_on else "off", bad[:5]))
            warns = [l for l in r.stderr.splitlines() if "NCCL WARN" in l and "CUDA graph" in l]
            if len(warns) != 1:
                problems.append("%d WARN lines about the CUDA graph, expected 1" % len(warns))
            summary = check_records(
                wd, r, env, [trace], {trace: undelivered_ids(events, log)},
                lambda s_: [] if s_.get("graph_capture") is True else ["graph_capture %r" % s_],
                problems)
            return finish(name, wd, problems, r, repro, "mask frozen %s at the capture; records "
                          "expected %d, found %d" % ("on" if frozen_on else "off",
                                                      summary["expected"], summary["found"]))
    return Case(name, fn, labels=["sampling"])


def time_case(name, fixture, window_ms, period_ms, pace_us, late_ms, early_ms=4):
    def fn(a):
        trace = os.path.abspath(harness.fixture(fixture))
        events = trace_lines(trace)
        per, win = period_ms * 10**6, window_ms * 10**6
        late, early = late_ms * 10**6, early_ms * 10**6

        def sampling_check(s):
            p = fixed_fields(s, TIME_KEYS, {"mode": "time", "window_ms": window_ms,
                                            "period_ms": period_ms})
            if p and p[0].startswith("keys"):
                return p
            share = window_ms / period_ms
            # a few periods long: the share since the process started is W/P give or take
            # a partial window at each end
            if not share / 2 <= s["covered"] <= (1 + share) / 2 + 0.1:
                p.append("covered %s, expected near %.2f" % (s["covered"], share))
            return p

        with harness.Workdir(a.keep) as wd:
            env_extra = {"NCCL_INSPECTOR_SAMPLE_WINDOW_MS": str(window_ms),
                         "NCCL_INSPECTOR_SAMPLE_PERIOD_MS": str(period_ms)}
            r, env, mlog, problems, repro = replay(a, wd, [trace], env_extra, abi="trace",
                                                   pace_us=pace_us)
            log = read_mask_log(mlog, trace) if os.path.exists(mlog) else []
            judged = {True: 0, False: 0}
            bad = []
            worst_late = 0  # the latest flip seen, ns after its boundary
            for i, tag, dl, rt in log:
                phase = rt % per
                want = phase < win
                since = phase if want else phase - win  # time since the last boundary
                until = (win if want else per) - phase  # time to the next one
                if since < late or until < early:
                    # The time thread flips the mask when the scheduler lets it: late by up
                    # to late_ms on a loaded machine (a sanitizer build under parallel ctest
                    # was 55 ms late), early never beyond the clocks' disagreement.
                    if dl != want and since < late:
                        worst_late = max(worst_late, since)
                    continue
                judged[want] += 1
                if dl != want:
                    bad.append((i, phase / 1e6, dl))
            if bad:
                problems.append("%d ops judged against the wall-clock windows, e.g. (index, phase "
                                "ms, delivered) %s" % (len(bad), bad[:5]))
            if judged[True] < 5 or judged[False] < 5:
                problems.append("ops judged in a window %d, outside %d: too few to test"
                                % (judged[True], judged[False]))
            summary = check_records(wd, r, env, [trace], {trace: undelivered_ids(events, log)},
                                    sampling_check, problems)
            on = sum(1 for _, _, dl, _ in log if dl)
            return finish(name, wd, problems, r, repro,
                          "%d of %d ops timed (%d/%d judged in/out of windows), records "
                          "expected %d, found %d; latest flip %.1f ms after its boundary"
                          % (on, len(log), judged[True], judged[False], summary["expected"],
                             summary["found"], worst_late / 1e6))
    return Case(name, fn, labels=["sampling", "threads"], timeout=120)


def threads_case(name, fixture, every):
    def fn(a):
        trace = os.path.abspath(harness.fixture(fixture))
        events = trace_lines(trace)
        with harness.Workdir(a.keep) as wd:
            r, env, mlog, problems, repro = replay(
                a, wd, [trace], {"NCCL_INSPECTOR_SAMPLE_GROUPS": str(every)}, threads=True)
            log = read_mask_log(mlog, trace) if os.path.exists(mlog) else []
            on = sum(1 for _, _, dl, _ in log if dl)
            if not 0 < on < len(log):
                problems.append("%d of %d ops delivered: the case tests nothing" % (on, len(log)))
            summary = check_records(wd, r, env, [trace], {trace: undelivered_ids(events, log)},
                                    lambda s: [] if s.get("mode") == "groups" else ["mode %r" % s],
                                    problems)
            return finish(name, wd, problems, r, repro, "%d of %d ops timed, records expected %d, "
                          "found %d" % (on, len(log), summary["expected"], summary["found"]))
    return Case(name, fn, labels=["sampling", "threads"], timeout=120)


def prom_case(name, fixture, every):
    def fn(a):
        trace = os.path.abspath(harness.fixture(fixture))
        events = trace_lines(trace)
        gnum, ngroups = group_numbers(events, True)
        timed = timed_groups(ngroups, every, 1)
        with harness.Workdir(a.keep) as wd:
            # without finalize lines the files stay (they are removed at the last teardown)
            stripped = os.path.join(wd.cwd, "nofinal.jsonl")
            with oracle.open_trace(trace) as fi, open(stripped, "w") as fo:
                fo.writelines(l for l in fi if '"cb":"finalize"' not in l)
            r, env, mlog, problems, repro = replay(
                a, wd, [stripped], {"NCCL_INSPECTOR_SAMPLE_GROUPS": str(every),
                                    "NCCL_INSPECTOR_PROM_DUMP": "1",
                                    "NCCL_INSPECTOR_PROM_DUMP_STATS": "1"}, abi="trace")
            files = glob.glob(os.path.join(wd.dump, "*.prom"))
            samples = []
            for fn_ in files:
                with open(fn_) as f:
                    samples += [l for l in f if l.startswith("nccl_sampled_ratio{")]
            if not files or len(samples) != len(files):
                problems.append("%d .prom files, %d nccl_sampled_ratio samples: one per file "
                                "expected" % (len(files), len(samples)))
            for s in samples:
                labels, value = s.rsplit("} ", 1)
                if (',sampling_mode="groups",sampling_every="%d",sampling_burst="1"' % every
                        not in labels):
                    problems.append("labels of %s lack the mode and N" % s.strip())
                if abs(float(value) - timed / ngroups) > 1e-6:
                    problems.append("%s: value %s, expected %d/%d" % (labels, value.strip(),
                                                                     timed, ngroups))
            return finish(name, wd, problems, r, repro, "%d files, ratio %d/%d"
                          % (len(files), timed, ngroups))
    return Case(name, fn, labels=["sampling", "prom"])


def config_cases():
    bad = [
        ("config.groups.abc", {"NCCL_INSPECTOR_SAMPLE_GROUPS": "abc"},
         r"NCCL_INSPECTOR_SAMPLE_GROUPS='abc'.*using 1"),
        ("config.groups.0", {"NCCL_INSPECTOR_SAMPLE_GROUPS": "0"},
         r"NCCL_INSPECTOR_SAMPLE_GROUPS='0'.*using 1"),
        ("config.window.long", {"NCCL_INSPECTOR_SAMPLE_WINDOW_MS": "5000",
                                "NCCL_INSPECTOR_SAMPLE_PERIOD_MS": "1000"},
         r"NCCL_INSPECTOR_SAMPLE_WINDOW_MS=5000 is not shorter than "
         r"NCCL_INSPECTOR_SAMPLE_PERIOD_MS=1000.*every op timed"),
        ("config.period.x", {"NCCL_INSPECTOR_SAMPLE_PERIOD_MS": "1x",
                             "NCCL_INSPECTOR_SAMPLE_WINDOW_MS": "30000"},
         r"NCCL_INSPECTOR_SAMPLE_PERIOD_MS='1x'.*using 30000"),
    ]
    out = [fixture_case(n, ["2.28.9/torch-1735"], labels=["sampling", "config"], env_extra=env,
                        expect_warn=[pat], warn_max=1) for n, env, pat in bad]
    return out


def cases():
    return [
        groups_case("groups.v5.torch-1735", "2.28.9/torch-1735", 3),
        groups_case("groups.v5.sr", "2.28.9/sr", 4),
        groups_case("groups.v5.ar-two-gpus", "2.28.9/ar", 5),
        groups_case("groups.v4.ar", "2.27.7/ar", 4),
        groups_case("groups.v5-as-v4.torch-1736", "2.28.9/torch-1736", 2, abi="4"),
        groups_case("groups.v6.sr", "2.30.7/sr", 3),
        groups_case("groups.burst.vsmall", "2.28.9/vsmall-r1", 3, burst=4),
        graph_case("graph.frozen-off", "2.28.9/graph-r0", 2, 1),
        graph_case("graph.frozen-on", "2.28.9/graph-r1", 2, 2),
        time_case("time.vsmall", "2.28.9/vsmall-r0", 150, 300, 6000, late_ms=100),
        threads_case("threads.groups", "2.28.9/threads", 3),
        prom_case("prom.groups", "2.28.9/torch-1735", 4),
    ] + config_cases()


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

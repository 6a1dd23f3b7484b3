#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Self-test of the oracle and the checker, with no plugin and no replay binary.

  oracle.invariants   properties of the fixtures the oracle must reproduce (README: counts per
                      file; every op of the recordings complete with GPU timing; P2P channels;
                      self sends without kernel events; exec times positive)
  oracle.handmade     a few records computed by hand from the trace lines
  checker.reference   a reference dump written from the oracle (as a correct plugin would) passes
                      logcheck, for every fixture, in several configurations
  checker.mutations   each deliberate defect of a dump (missing/duplicate/extra record, wrong
                      field, float format, header id padding, comm_name, torn line, NaN,
                      dump_stats sums and totals, drops, hostname, pid, job id, file name,
                      timestamps, verbose channels and order, completion order) is reported
  checker.job_id      the metadata.job_id the checker expects from an environment, by hand:
                      which variable wins, empty ones, none, invalid UTF-8, the 128-byte cut
"""
import copy
import collections
import json
import os
import shutil
import socket
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402
import oracle  # noqa: E402

PID = 4242
HOST = socket.gethostname()


# ---------------------------------------------------------------------------
# A reference writer: what a correct plugin writes for an Expectation
# ---------------------------------------------------------------------------

def _val(v):
    if isinstance(v, float):
        return "%.6f" % v
    if isinstance(v, dict):
        return "{" + ",".join("%s:%s" % (json.dumps(k), _val(x)) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_val(x) for x in v) + "]"
    return json.dumps(v)


def _verbose_blocks(kind, channels, ts0):
    sn = {"%s_start_sn" % kind: 1, "%s_stop_sn" % kind: 2, "kernel_events": []}
    ts = {"%s_start_ts" % kind: ts0, "%s_stop_ts" % kind: ts0 + 1, "kernel_events": []}
    for i, ch in enumerate(channels):
        sn["kernel_events"].append({"channel_id": ch, "kernel_start_sn": 3 + 3 * i,
                                    "kernel_stop_sn": 5 + 3 * i, "kernel_record_sn": 4 + 3 * i})
        ts["kernel_events"].append({"channel_id": ch, "kernel_start_ts": ts0 + 2,
                                    "kernel_stop_ts": ts0 + 4, "kernel_record_ts": ts0 + 3})
    return sn, ts


def reference_lines(exp, window, job_id=None):
    """Lines of a correct dump: records in completion order, then one stats record per
    context (one dump at finalize). job_id: metadata.job_id, None for no key."""
    written, dropped = logcheck.apply_ring(exp)
    ts = window[0] + 1000
    meta = {"inspector_output_format_version": "v4.0", "git_rev": "selftest",
            "rec_mechanism": "nccl_profiler_interface", "dump_timestamp_us": ts,
            "hostname": HOST, "pid": PID}
    if job_id is not None:
        meta["job_id"] = job_id
    lines = []
    counts, partial = {}, collections.Counter()
    for r in written:
        perf = dict(r["perf"])
        for f in r["loose"]:
            perf.setdefault(f, 0.0 if f.endswith("_gbs") else 1)
        if exp.verbose:
            perf["event_trace_sn"], perf["event_trace_ts"] = _verbose_blocks(
                r["kind"], r["channels"], ts)
        lines.append(_val({"header": r["header"], "metadata": meta, r["kind"] + "_perf": perf}))
        key = (r["comm"], r["rank"])
        counts.setdefault(key, {"coll": 0, "p2p": 0})[r["kind"]] += 1
        partial[key + (r["kind"],)] += r["perf"][r["kind"] + "_stale_channels"] > 0
    for c in exp.contexts:
        key = (c["comm"], c["rank"])
        n = counts.get(key, {"coll": 0, "p2p": 0})
        d = {k: dropped.get(key + (k,), 0) for k in ("coll", "p2p")}
        u = c.get("untimed") or {k: dict.fromkeys(oracle.UNTIMED, 0) for k in ("coll", "p2p")}
        if not any(n.values()) and not any(d.values()) and \
                not any(v for k in u.values() for v in k.values()):
            continue
        stats = {}
        for k in ("coll", "p2p"):
            stats.update({"%s_records_total" % k: n[k], "%s_records_since_last_dump" % k: n[k],
                          "%s_dropped_total" % k: d[k], "%s_dropped_since_last_dump" % k: d[k],
                          "%s_untimed_total" % k: sum(u[k].values()), "%s_untimed" % k: u[k],
                          "%s_partial_total" % k: partial[key + (k,)]})
        lines.append(_val({"header": c["header"], "metadata": meta, "dump_stats": stats}))
    return lines


def write_dump(d, lines, name=None):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name or "%s-pid%d.log" % (HOST, PID)), "w") as f:
        for line in lines:
            f.write(line + "\n")


def check(d, exp, window, job_id=None):
    return logcheck.check_dump(d, exp, window=window, pids={PID}, hostname=HOST, job_id=job_id)


def expectation(traces, env=None, ring=None, check_order=False):
    return harness.fixture_expectation(traces, harness.RunConfig(env or {}), ring=ring,
                                       check_order=check_order)


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def all_traces():
    out = []
    for d in sorted(os.listdir(harness.DATA)):
        p = os.path.join(harness.DATA, d)
        if os.path.isdir(p):
            out += [os.path.join(p, f) for f in sorted(os.listdir(p))
                    if f.endswith(".jsonl.gz") or f.endswith(".jsonl")]
    return out


def oracle_invariants(a):
    problems = []
    n_traces = 0
    for t in all_traces():
        if "/edge/" in t:
            continue
        n_traces += 1
        ctxs, ops, _ = oracle.parse_trace(t)
        cfg = oracle.Config(min_size=0)
        cx, recs = oracle.expected_records(t, cfg)
        n_coll = sum(1 for o in ops if o.kind == "coll" and not o.copy_engine)
        # copy-engine collectives (CeColl): no kernel, so no GPU timer: each left out as
        # no_gpu_timer when GPU timing is required [C2]
        n_ce = sum(1 for o in ops if o.copy_engine)
        n_p2p_other = sum(1 for o in ops if o.kind == "p2p" and o.peer != ctxs[o.ctx].rank)
        name = os.path.basename(t)
        # README: every op of the recordings completed with both pTimers on every channel,
        # so each one is a record, or left out because its timestamps were another op's
        # (handed over, or unverified: C2 "Whose timestamps"), and for no other reason
        left = {k: sum(c["untimed"][k][w] for c in cx for w in ("handed_over", "unverified"))
                for k in ("coll", "p2p")}
        other = sum(c["untimed"][k][w] for c in cx for k in ("coll", "p2p")
                    for w in oracle.UNTIMED if w not in ("handed_over", "unverified"))
        no_timer = sum(c["untimed"]["coll"]["no_gpu_timer"] for c in cx)
        if n_ce and no_timer != n_ce:
            problems.append("%s: %d copy-engine collectives, %d left out as no_gpu_timer"
                            % (name, n_ce, no_timer))
        other -= n_ce
        if other and "gpu-truth" not in t:
            problems.append("%s: %d ops left out for reasons other than whose timestamps"
                            % (name, other))
        if sum(r["kind"] == "coll" for r in recs) + left["coll"] != n_coll:
            problems.append("%s: %d coll records + %d left out at min size 0, %d Coll starts"
                            % (name, sum(r["kind"] == "coll" for r in recs), left["coll"], n_coll))
        if sum(r["kind"] == "p2p" for r in recs) + left["p2p"] != n_p2p_other:
            problems.append("%s: p2p records %d + %d left out != P2p starts to other ranks %d"
                            % (name, sum(r["kind"] == "p2p" for r in recs), left["p2p"],
                               n_p2p_other))
        for o in ops:
            if o.kind == "p2p" and o.peer == ctxs[o.ctx].rank and o.kernels:
                problems.append("%s: a send to self has kernel events" % name)
        for r in recs:
            p, k = r["perf"], r["kind"]
            if p[k + "_exec_time_ns"] <= 0:
                problems.append("%s: %s sn %d exec %d ns" % (name, k, r["sn"],
                                                              p[k + "_exec_time_ns"]))
            if p[k + "_nchannels"] != len(r["channels"]) or not r["channels"]:
                problems.append("%s: %s sn %d channels" % (name, k, r["sn"]))
            # shared fixtures (sizes up to 64 MiB): P2P on channels 16 and up. Our own
            # recordings (v*) show 1 GiB P2P on channels 0-31 too (docs/VALIDATION.md).
            if (k == "p2p" and "2.28.9" in t and not name.startswith("v")
                    and min(r["channels"]) < 16):
                problems.append("%s: p2p on channel %d < 16" % (name, min(r["channels"])))
        # the README's count check: zcat FILE | grep -c '"type":2,'
        import gzip
        with gzip.open(t, "rt") as f:
            grep = sum('"type":2,' in line for line in f)
        if grep != n_coll:
            problems.append("%s: grep counts %d Coll starts, the oracle %d" % (name, grep, n_coll))
    if problems:
        return False, "FAIL oracle.invariants:\n" + "\n".join(problems[:30])
    return True, "OK oracle.invariants: %d fixtures" % n_traces


def oracle_handmade(a):
    """Records checked by hand against the trace lines (see the comments)."""
    problems = []

    def rec(trace, kind, func, sn, cfg=None):
        _, recs = oracle.expected_records(harness.fixture(trace), cfg or oracle.Config())
        for r in recs:
            if r["kind"] == kind and r["perf"][kind] == func and r["sn"] == sn:
                return r
        return None

    def expect(r, field, want, what):
        got = None if r is None else r["perf"].get(field)
        if isinstance(want, float):
            ok = got is not None and abs(got - want) < 1e-9 * max(1, abs(want))
        else:
            ok = got == want
        if not ok:
            problems.append("%s: %s expected %r, oracle %r" % (what, field, want, got))

    # edge/late_channel: AllReduce seq 0, 1048576 x float32 = 4 MiB on 2 ranks; channel 0
    # [T+1000, T+21000], channel 1 [T+2000, T+21500] (its events after op seq 1's):
    # 20500 ns from T+1000
    r = rec("edge/late_channel", "coll", "AllReduce", 0)
    expect(r, "coll_exec_time_ns", 20500, "late_channel seq 0")
    expect(r, "coll_exec_time_us", 20, "late_channel seq 0")
    expect(r, "coll_start_ts_ns", 1_800_000_000_000_001_000, "late_channel seq 0")
    expect(r, "coll_algobw_gbs", 4194304 / 20500, "late_channel seq 0")
    expect(r, "coll_busbw_gbs", 4194304 / 20500 * 2 * 1 / 2, "late_channel seq 0")
    expect(r, "coll_nchannels", 2, "late_channel seq 0")
    # edge/channels: ctx 2 has 4 ranks; ReduceScatter 1048576 x float64 = 8 MiB, bandwidth
    # bytes x 4 ranks, factor 3/4, exec 123457 ns
    r = rec("edge/channels", "coll", "ReduceScatter", 1)
    expect(r, "coll_msg_size_bytes", 8388608, "channels RS")
    expect(r, "coll_algobw_gbs", 8388608 * 4 / 123457, "channels RS")
    expect(r, "coll_busbw_gbs", 8388608 * 4 / 123457 * 0.75, "channels RS")
    r = rec("edge/channels", "coll", "AllReduce", 0)
    expect(r, "coll_busbw_gbs", 8388608 / 123457 * 1.5, "channels AR n=4")
    # p2p_sn counts the send to self: the Recv after it is sn 2; the self send is not recorded
    r = rec("edge/channels", "p2p", "Recv", 2)
    expect(r, "p2p_peer", 1, "channels Recv sn 2")
    if rec("edge/channels", "p2p", "Send", 1, oracle.Config(min_size=0)) is not None:
        problems.append("channels: the send to self was recorded")
    # 4096-byte AllReduce (seq 6) filtered; the 8192-byte one (seq 7) kept
    if rec("edge/channels", "coll", "AllReduce", 6) is not None:
        problems.append("channels: AllReduce seq 6 (4096 bytes) not filtered")
    expect(rec("edge/channels", "coll", "AllReduce", 7), "coll_msg_size_bytes", 8192, "seq 7")
    # ar-1483 fixture, rank 1's AllReduce seq 5 (count 8192 x float32 = 32 KiB), by hand:
    #   zcat ar-1483.jsonl.gz | grep '"seq":5,' ; its KernelCh children and records
    t = harness.fixture("2.28.9/ar")
    ctxs, ops, _ = oracle.parse_trace(t)
    op = [o for o in ops if o.kind == "coll" and o.sn == 5 and ctxs[o.ctx].rank == 1][0]
    want_ns = max(k.stop_ptimer for k in op.kernels) - min(k.start_ptimer for k in op.kernels)
    r = rec("2.28.9/ar", "coll", "AllReduce", 5)
    r = [x for x in oracle.expected_records(t)[1] if x["sn"] == 5 and x["rank"] == 1][0]
    expect(r, "coll_exec_time_ns", want_ns, "ar seq 5 rank 1")
    expect(r, "coll_count", op.count, "ar seq 5 rank 1")
    # no_ptimer / no_kernel: nothing but the control op with kernel timing required
    _, recs = oracle.expected_records(harness.fixture("edge/no_ptimer"))
    if [x["sn"] for x in recs] != [4]:
        problems.append("no_ptimer: records %s, expected only seq 4" % [x["sn"] for x in recs])
    _, recs = oracle.expected_records(harness.fixture("edge/no_ptimer"),
                                      oracle.Config(require_kernel=False))
    got = sorted((x["sn"], x["perf"]["coll_timing_source"]) for x in recs)
    if got != [(0, "kernel_cpu"), (1, "kernel_cpu"), (2, "kernel_cpu"), (4, "kernel_gpu")]:
        problems.append("no_ptimer without kernel requirement: %s" % got)
    _, recs = oracle.expected_records(harness.fixture("edge/no_kernel"),
                                      oracle.Config(require_kernel=False))
    got = sorted((x["sn"], x["perf"]["coll_timing_source"]) for x in recs)
    if got != [(0, "collective_cpu"), (1, "kernel_gpu")]:
        problems.append("no_kernel without kernel requirement: %s" % got)
    if problems:
        return False, "FAIL oracle.handmade:\n" + "\n".join(problems)
    return True, "OK oracle.handmade"


CONFIGS = [
    {},
    {"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0"},
    {"NCCL_INSPECTOR_ENABLE_P2P": "0", "NCCL_INSPECTOR_DUMP_VERBOSE": "1"},
    {"NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING": "0", "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0"},
]


def checker_reference(a):
    problems = []
    now = int(time.time() * 1e6)
    window = (now - 10_000_000, now)
    n = 0
    tmp = tempfile.mkdtemp(prefix="inspector-selftest-")
    try:
        for t in all_traces():
            for env in CONFIGS:
                d = os.path.join(tmp, "d%d" % n)
                n += 1
                exp = expectation([t], env)
                write_dump(d, reference_lines(exp, window))
                errors, summary = check(d, exp, window)
                if errors or summary["found"] != summary["expected"]:
                    problems.append("%s %s: %s" % (os.path.basename(t), env, errors.render(5)))
        exp = expectation([harness.fixture("2.28.9/ar")], ring={"coll": 16}, check_order=True)
        d = os.path.join(tmp, "ring")
        write_dump(d, reference_lines(exp, window))
        errors, summary = check(d, exp, window)
        if errors or summary["found"] != 32 or summary["dropped"] != 96:
            problems.append("ring: %s %s" % (summary, errors.render(5)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if problems:
        return False, "FAIL checker.reference:\n" + "\n".join(problems[:20])
    return True, "OK checker.reference: %d dumps" % n


def _perf_index(lines, kind="coll", nth=0):
    seen = 0
    for i, l in enumerate(lines):
        if ('"%s_perf"' % kind) in l:
            if seen == nth:
                return i
            seen += 1
    raise IndexError(kind)


def _edit(lines, i, fn):
    o = json.loads(lines[i])
    fn(o)
    lines[i] = _val(o)


def _stats_index(lines):
    return [i for i, l in enumerate(lines) if '"dump_stats"' in l][0]


def mutations():
    """(name, trace, env, expectation kwargs, mutate(lines, dir) -> lines, expected text)."""
    M = []

    def add(name, want, fn, trace="2.28.9/ar", env=None, **kw):
        M.append((name, trace, env or {}, kw, fn, want))

    def drop(lines, d):
        del lines[_perf_index(lines, nth=3)]
        return lines
    add("missing record", "missing record", drop)

    def dup(lines, d):
        lines.insert(0, lines[_perf_index(lines, nth=5)])
        return lines
    add("duplicate record", "written 2 times", dup)

    def field(name, delta):
        def fn(lines, d):
            _edit(lines, _perf_index(lines, nth=7), lambda o: o["coll_perf"].__setitem__(
                name, o["coll_perf"][name] + delta))
            return lines
        return fn
    add("exec ns +1", "field coll_exec_time_ns expected", field("coll_exec_time_ns", 1))
    add("start ts +1", "field coll_start_ts_ns expected", field("coll_start_ts_ns", 1))
    add("busbw +1e-3", "field coll_busbw_gbs expected", field("coll_busbw_gbs", 1e-3))
    add("nchannels +1", "field coll_nchannels expected", field("coll_nchannels", 1))

    def source(lines, d):
        _edit(lines, _perf_index(lines), lambda o: o["coll_perf"].__setitem__(
            "coll_timing_source", "kernel_cpu"))
        return lines
    add("timing source", "field coll_timing_source expected", source)

    def int_as_float(lines, d):
        _edit(lines, _perf_index(lines), lambda o: o["coll_perf"].__setitem__(
            "coll_count", float(o["coll_perf"]["coll_count"])))
        return lines
    add("int written as float", "field coll_count expected", int_as_float)

    def decimals(lines, d):
        i = _perf_index(lines)
        o = json.loads(lines[i])
        lines[i] = lines[i].replace(_val(o["coll_perf"]["coll_algobw_gbs"]),
                                    "%.3f" % o["coll_perf"]["coll_algobw_gbs"], 1)
        return lines
    add("3 decimals", "expected 6 decimals", decimals)

    def nan(lines, d):
        i = _perf_index(lines)
        o = json.loads(lines[i])
        lines[i] = lines[i].replace(_val(o["coll_perf"]["coll_busbw_gbs"]), "NaN", 1)
        return lines
    add("NaN", "not a complete JSON object", nan)

    def padded(lines, d):
        return [l.replace('"0x6b7b42a481300d5"', '"0x06b7b42a481300d5"') for l in lines]
    add("padded id", "unpadded", padded, trace="2.28.9/ag")

    def upper(lines, d):
        return [l.replace('"0xe6792efe8dd15d0a"', '"0xE6792EFE8DD15D0A"') for l in lines]
    add("upper-case id", "lower-case hex", upper)

    def name(lines, d):
        return [l.replace('"comm_name":"unknown"', '"comm_name":""') for l in lines]
    add("empty comm_name", "header", name)

    def escaped(lines, d):
        return [l.replace('DP \\"grp\\" \\\\ 1', 'DP grp 1') for l in lines]
    add("comm name", "header", escaped, trace="edge/channels")

    def extra(lines, d):
        exp = expectation([harness.fixture("2.28.9/ar")],
                          {"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0"})
        small = [r for r in exp.records if r["perf"]["coll_msg_size_bytes"] < 8192][0]
        o = json.loads(lines[_perf_index(lines)])
        o["coll_perf"] = small["perf"]
        lines.insert(1, _val(o))
        return lines
    add("filtered op written", "unexpected record", extra)

    def torn(lines, d):
        return lines + ['{"header":{"id":"0xe6792efe8dd15d0a","comm_na']
    add("torn last line", "not a complete JSON object", torn)

    def garbage(lines, d):
        lines.insert(4, lines[3][:40] + lines[4])
        return lines
    add("interleaved lines", "not a complete JSON object", garbage)

    def stats_sum(lines, d):
        _edit(lines, _stats_index(lines), lambda o: o["dump_stats"].update(
            coll_records_since_last_dump=o["dump_stats"]["coll_records_since_last_dump"] - 1))
        return lines
    add("stats since_last sum", "sum to", stats_sum)

    def stats_total(lines, d):
        _edit(lines, _stats_index(lines), lambda o: o["dump_stats"].update(
            coll_records_total=o["dump_stats"]["coll_records_total"] + 1))
        return lines
    add("stats total", "running sum", stats_total)

    def stats_backwards(lines, d):
        # two dumps of one context whose lines reached the file in the wrong order
        i = _stats_index(lines)
        o = json.loads(lines[i])
        late, early = copy.deepcopy(o), copy.deepcopy(o)
        early["dump_stats"].update(coll_records_total=4, coll_records_since_last_dump=4)
        late["dump_stats"].update(coll_records_since_last_dump=60)
        lines[i:i + 1] = [_val(late), _val(early)]
        return lines
    add("stats out of order", "goes backwards", stats_backwards)

    def stats_missing(lines, d):
        return [l for l in lines if '"dump_stats"' not in l]
    add("no stats", "sum to 0", stats_missing)

    def stats_empty(lines, d):
        i = _stats_index(lines)
        o = json.loads(lines[i])
        for k in o["dump_stats"]:
            if k.endswith("since_last_dump"):
                o["dump_stats"][k] = 0
        lines.insert(i, _val(o))
        return lines
    add("empty stats record", "wrote, dropped and left out nothing", stats_empty)

    def untimed_miscounted(lines, d):
        _edit(lines, _stats_index(lines), lambda o: (
            o["dump_stats"]["coll_untimed"].update(unverified=o["dump_stats"]["coll_untimed"]["unverified"] + 1),
            o["dump_stats"].update(coll_untimed_total=o["dump_stats"]["coll_untimed_total"] + 1)))
        return lines
    add("an op counted as unverified that was not", "dump_stats untimed", untimed_miscounted)

    def untimed_sum_wrong(lines, d):
        _edit(lines, _stats_index(lines), lambda o: o["dump_stats"].update(
            coll_untimed_total=o["dump_stats"]["coll_untimed_total"] + 1))
        return lines
    add("untimed total not the sum of its reasons", "not the sum", untimed_sum_wrong)

    def stats_drop(lines, d):
        _edit(lines, _stats_index(lines), lambda o: o["dump_stats"].update(
            coll_dropped_since_last_dump=1, coll_dropped_total=1))
        return lines
    add("drops reported", "dropped_since_last_dump sum to 1, expected 0", stats_drop)

    def ring_drop(lines, d):
        _edit(lines, _stats_index(lines), lambda o: o["dump_stats"].update(
            coll_dropped_since_last_dump=47, coll_dropped_total=47))
        return lines
    add("ring drops miscounted", "expected 48", ring_drop, ring={"coll": 16}, check_order=True)

    def ring_order(lines, d):
        i = _perf_index(lines, nth=0)
        j = _perf_index(lines, nth=2)
        lines[i], lines[j] = lines[j], lines[i]
        return lines
    add("completion order", "completion order", ring_order, ring={"coll": 16}, check_order=True)

    def ring_newest(lines, d):
        exp = expectation([harness.fixture("2.28.9/ar")])
        i = _perf_index(lines)
        o = json.loads(lines[i])
        o["coll_perf"] = [r for r in exp.records if r["rank"] == o["header"]["rank"]][-1]["perf"]
        lines[i] = _val(o)
        return lines
    add("ring keeps the newest", "missing record", ring_newest, ring={"coll": 16},
        check_order=True)

    def host(lines, d):
        return [l.replace('"hostname":%s' % json.dumps(HOST), '"hostname":"elsewhere"')
                for l in lines]
    add("hostname", "metadata.hostname", host)

    def pid(lines, d):
        return [l.replace('"pid":%d' % PID, '"pid":%d' % (PID + 1)) for l in lines]
    add("pid", "metadata.pid", pid)

    def version(lines, d):
        return [l.replace('"v4.0"', '"v5.1"') for l in lines]
    add("format version", "inspector_output_format_version", version)

    def job_id_unasked(lines, d):
        _edit(lines, 0, lambda o: o["metadata"].update(job_id="4242"))
        return lines
    add("job id with no batch system", "metadata keys", job_id_unasked)

    def job_id_missing(lines, d):
        _edit(lines, 1, lambda o: o["metadata"].pop("job_id"))
        return lines
    add("job id missing", "metadata keys", job_id_missing, env={"SLURM_JOB_ID": "4242"})

    def job_id_wrong(lines, d):
        return [l.replace('"job_id":"4242"', '"job_id":"4243"') for l in lines]
    add("job id wrong", "metadata.job_id", job_id_wrong, env={"SLURM_JOB_ID": "4242"})

    def job_id_unknown(lines, d):
        return [l.replace('"job_id":"4242"', '"job_id":"unknown"') for l in lines]
    add("job id of another variable", "metadata.job_id", job_id_unknown,
        env={"SLURM_JOB_ID": "4242", "PBS_JOBID": "unknown"})

    def old_ts(lines, d):
        _edit(lines, 0, lambda o: o["metadata"].update(
            dump_timestamp_us=o["metadata"]["dump_timestamp_us"] // 1000))
        return lines
    add("timestamp in ms", "outside the run window", old_ts)

    def extra_field(lines, d):
        _edit(lines, 0, lambda o: o["coll_perf"].update(coll_extra=1))
        return lines
    add("extra perf field", "unexpected fields", extra_field)

    def verbose_unasked(lines, d):
        _edit(lines, 0, lambda o: o["coll_perf"].update(event_trace_sn={}))
        return lines
    add("verbose block unasked", "unexpected fields", verbose_unasked)

    def chan(lines, d):
        _edit(lines, _perf_index(lines, nth=4), lambda o: o["coll_perf"]["event_trace_sn"][
            "kernel_events"][0].__setitem__("channel_id", 99))
        return lines
    add("verbose channel", "channel ids", chan, trace="2.28.9/agg",
        env={"NCCL_INSPECTOR_DUMP_VERBOSE": "1"})

    def sn_order(lines, d):
        def f(o):
            e = o["p2p_perf"]["event_trace_sn"]["kernel_events"][0]
            e["kernel_record_sn"] = e["kernel_stop_sn"] + 1
        _edit(lines, _perf_index(lines, "p2p", 2), f)
        return lines
    add("verbose record after stop", "start < record < stop", sn_order, trace="2.28.9/sr",
        env={"NCCL_INSPECTOR_DUMP_VERBOSE": "1"})

    def no_verbose(lines, d):
        _edit(lines, 0, lambda o: o["coll_perf"].pop("event_trace_ts"))
        return lines
    add("verbose block missing", "event_trace_ts missing", no_verbose,
        env={"NCCL_INSPECTOR_DUMP_VERBOSE": "1"})

    def p2p_sn(lines, d):
        # numbering only the recorded P2p (no gaps) shifts every sn
        out = []
        for l in lines:
            if '"p2p_perf"' in l:
                o = json.loads(l)
                o["p2p_perf"]["p2p_sn"] += 1
                l = _val(o)
            out.append(l)
        return out
    add("p2p_sn shifted", "missing record", p2p_sn, trace="2.28.9/torch-1735")

    def self_send(lines, d):
        # the local part of an all-to-all: a P2p to its own rank, no kernel events
        t = harness.fixture("2.28.9/torch-1735")
        ctxs, ops, _ = oracle.parse_trace(t)
        op = [o for o in ops if o.kind == "p2p" and o.peer == ctxs[o.ctx].rank][-1]
        o = json.loads(lines[_perf_index(lines, "p2p")])
        o["header"] = oracle.expected_header(ctxs[op.ctx])
        o["p2p_perf"].update(p2p=op.func, p2p_sn=op.sn, p2p_peer=op.peer,
                             p2p_count=op.count, p2p_msg_size_bytes=oracle.msg_size_bytes(op))
        lines.insert(0, _val(o))
        return lines
    add("self send recorded", "unexpected record", self_send, trace="2.28.9/torch-1735")

    def rename(lines, d):
        os.rename(os.path.join(d, "%s-pid%d.log" % (HOST, PID)), os.path.join(d, "dump.log"))
        return None
    add("file name", "file name", rename)

    def nofile(lines, d):
        os.remove(os.path.join(d, "%s-pid%d.log" % (HOST, PID)))
        return None
    add("no file", "no *.log file", nofile)
    return M


def checker_mutations(a):
    problems = []
    now = int(time.time() * 1e6)
    window = (now - 10_000_000, now)
    tmp = tempfile.mkdtemp(prefix="inspector-selftest-")
    try:
        for n, (name, trace, env, kw, fn, want) in enumerate(mutations()):
            d = os.path.join(tmp, "m%d" % n)
            exp = expectation([harness.fixture(trace)], env, **kw)
            job = logcheck.expected_job_id(env)
            lines = reference_lines(exp, window, job)
            write_dump(d, lines)
            errors, _ = check(d, exp, window, job)
            if errors:
                problems.append("%s: the unmutated dump fails: %s" % (name, errors.render(3)))
                continue
            new = fn(copy.copy(lines), d)
            if new is not None:
                shutil.rmtree(d)
                write_dump(d, new)
            errors, _ = check(d, exp, window, job)
            if not errors:
                problems.append("%s: not detected" % name)
            elif want not in errors.render(1000):
                problems.append("%s: detected, but no message contains %r:\n%s"
                                % (name, want, errors.render(4)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if problems:
        return False, "FAIL checker.mutations:\n" + "\n".join(problems)
    return True, "OK checker.mutations: %d defects detected" % len(mutations())


def checker_job_id(a):
    """logcheck.expected_job_id against values worked out by hand (docs/CONTRACTS.md, section 2)."""
    raw = os.fsdecode  # bytes as an environment holds them (surrogateescape)
    want = [({}, None),
            ({"SLURM_JOB_ID": "4242", "SLURM_JOBID": "1", "PBS_JOBID": "2", "LSB_JOBID": "3"}, "4242"),
            ({"SLURM_JOB_ID": "", "SLURM_JOBID": "31337", "PBS_JOBID": "2"}, "31337"),
            ({"PBS_JOBID": "4242.pbs-server"}, "4242.pbs-server"),
            ({"LSB_JOBID": "77", "PATH": "/bin"}, "77"),
            ({"SLURM_JOB_ID": "", "LSB_JOBID": ""}, None),
            ({"SLURM_JOB_ID": 'a"b\\c\n\x01'}, 'a"b\\c\n\x01'),
            ({"SLURM_JOB_ID": raw(b"\xff|\xc3(|\xed\xa0\x80")}, "\ufffd|\ufffd(|\ufffd\ufffd\ufffd"),
            ({"SLURM_JOB_ID": "x" * 200}, "x" * 128),
            ({"SLURM_JOB_ID": "\u00e9" * 70}, "\u00e9" * 64),              # 2 bytes each: 128
            ({"SLURM_JOB_ID": "x" * 126 + "\u20ac" + "y"}, "x" * 126)]  # the euro sign would end at 129
    problems = ["%r: %r, expected %r" % (env, logcheck.expected_job_id(env), w)
                for env, w in want if logcheck.expected_job_id(env) != w]
    if problems:
        return False, "FAIL checker.job_id:\n  " + "\n  ".join(problems)
    return True, "OK checker.job_id: %d environments" % len(want)


def cases():
    return [harness.Case("oracle.invariants", oracle_invariants, ["selftest"], 120),
            harness.Case("oracle.handmade", oracle_handmade, ["selftest"], 60),
            harness.Case("checker.reference", checker_reference, ["selftest"], 180),
            harness.Case("checker.mutations", checker_mutations, ["selftest"], 120),
            harness.Case("checker.job_id", checker_job_id, ["selftest"], 60)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0], needs_binaries=False))

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prometheus textfile output (NCCL_INSPECTOR_PROM_DUMP=1), checked against the oracle.

exit.<fixture>: the fixture replayed without its `finalize` lines (the files survive only while
  their communicators live), with NCCL_INSPECTOR_PROM_DUMP_STATS=1: one file per (fallback)
  device, mode 0644, no temporary file and no JSON log left; each file parses strictly as the
  text exposition format; every sample has exactly the labels of its family; the samples are
  the oracle's records grouped by label set: mean of exec_time_ns / 1000 and geometric mean of
  busbw_gbs (ops with bandwidth 0 excluded), over the records without stale channels only;
  the *_total counters equal those records' counts, *_excluded_total{reason="stale_channels"}
  the counts of the records with stale channels (torch-1735 has 23).
exit.threads.threads: the same on the threads fixture, replayed on its recorded threads.
teardown.torch-1735: two communicators on one device: the first teardown writes the file, the
  second (the device's last) removes it.
finalize.<fixture>: only rank 0 is finalized: its device's file is removed, rank 1's stays.
stale: torch-1735 and va2a-r0 replayed together (rank 0 of both: one device), whose oracle
  records include collectives (23) and Sends/Recvs (2) with stale channels: no sample rests on
  one (the samples are those of the other records), the excluded counters equal their number
  per kind, and aggregated + excluded = every record the oracle expects.
Every file also has hang detection's gauges (on by default): nccl_inflight_oldest_seconds once
  per context of its device, and nccl_last_completed_sn per context and function, the largest
  sn of its records of that function (at least that, with unverified ops).
escape: a comm name holding a double quote, a backslash and a newline followed by
  `nccl_fake 1` round-trips through the label escaping and injects no sample.
interval: a positive interval below 30 s is raised to 30 s with a warning.
bounds: a busy GPU-truth recording (many ops left out, bounded: core/judge.h), with the JSON log
  too: the bounds in families of their own and nccl_*_bounded_total, the *_total counters the
  log's records alone; with NCCL_INSPECTOR_BOUNDS=mix the counters are records + bounds and no
  bound family is written.
`promtool check metrics` also runs on the files when promtool is on the PATH.
"""
import gzip
import json
import math
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import oracle  # noqa: E402

SAMPLED = "nccl_sampled_ratio"
OLDEST, LAST_SN = "nccl_inflight_oldest_seconds", "nccl_last_completed_sn"
HANG_LABELS = ["comm_name", "comm_id", "rank"]
BASE_LABELS = ["version", "cluster", "slurm_job_id", "node", "gpu"]
COMM_LABELS = ["comm_name", "n_nodes", "nranks"]
FAMILIES = {  # name -> (type, labels after the base ones)
    "nccl_bus_bandwidth_gbs": ("gauge", COMM_LABELS + ["collective", "message_size", "algo_proto"]),
    "nccl_collective_exec_time_microseconds":
        ("gauge", COMM_LABELS + ["collective", "message_size", "algo_proto"]),
    "nccl_p2p_bus_bandwidth_gbs": ("gauge", COMM_LABELS + ["p2p_operation", "message_size"]),
    "nccl_p2p_exec_time_microseconds": ("gauge", COMM_LABELS + ["p2p_operation", "message_size"]),
    "nccl_collectives_total": ("counter", []),
    "nccl_collectives_dropped_total": ("counter", []),
    "nccl_p2p_total": ("counter", []),
    "nccl_p2p_dropped_total": ("counter", []),
    "nccl_collectives_excluded_total": ("counter", ["reason"]),
    "nccl_p2p_excluded_total": ("counter", ["reason"]),
    # ops left without a record, one sample per reason [C4]
    "nccl_collectives_untimed_total": ("counter", ["reason"]),
    "nccl_p2p_untimed_total": ("counter", ["reason"]),
    # with PROM_DUMP_STATS only, like the counters; sampling off here: mode "all", value 1
    SAMPLED: ("gauge", ["sampling_mode"]),
    # hang detection's, on by default (NCCL_INSPECTOR_HANG_SECONDS=300): per context
    OLDEST: ("gauge", HANG_LABELS),
    LAST_SN: ("gauge", HANG_LABELS + ["coll"]),
}
NASTY = 'a"b\\c\nnccl_fake 1'

# ---------------------------------------------------------------------------
# A strict parser of the text exposition format (the subset the plugin may write)
# ---------------------------------------------------------------------------

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LNAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
FLOAT = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|Inf|NaN)"


def parse_labels(s, where):
    """`{a="x",b="y"}` at the start of s -> (dict in order, rest).  Only \\\\, \\" and \\n are
    valid escapes in a value; a raw newline cannot occur (lines are split already)."""
    if not s.startswith("{"):
        raise ValueError("%s: expected '{'" % where)
    i, labels = 1, {}
    while True:
        if s[i] == "}":
            return labels, s[i + 1:]
        m = re.match(LNAME, s[i:])
        if not m or s[i + m.end():i + m.end() + 2] != '="':
            raise ValueError("%s: bad label at %r" % (where, s[i:i + 30]))
        name = m.group(0)
        i += m.end() + 2
        val = []
        while True:
            ch = s[i]
            if ch == "\\":
                esc = {"\\": "\\", '"': '"', "n": "\n"}.get(s[i + 1])
                if esc is None:
                    raise ValueError("%s: invalid escape \\%s" % (where, s[i + 1]))
                val.append(esc)
                i += 2
            elif ch == '"':
                i += 1
                break
            else:
                val.append(ch)
                i += 1
        if name in labels:
            raise ValueError("%s: label %s twice" % (where, name))
        labels[name] = "".join(val)
        if s[i] == ",":
            i += 1
        elif s[i] != "}":
            raise ValueError("%s: expected ',' or '}' after label %s" % (where, name))


def parse_prom(text, path):
    """-> {family: {"type":..., "help":..., "samples": [(labels dict, value)]}}; raises on any
    deviation: text not ending in a newline, a sample before its TYPE, a family split in two,
    HELP/TYPE twice, a duplicate series, trailing garbage, a timestamp."""
    if text and not text.endswith("\n"):
        raise ValueError("%s: does not end with a newline" % path)
    fams, order, seen = {}, [], set()
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = "%s:%d" % (path, n)
        m = re.fullmatch(r"# (HELP|TYPE) (%s) (.*)" % NAME, line)
        if m:
            kind, name, rest = m.groups()
            f = fams.setdefault(name, {"type": None, "help": None, "samples": []})
            if f["samples"]:
                raise ValueError("%s: %s after samples of %s" % (where, kind, name))
            key = kind.lower()
            if f[key] is not None:
                raise ValueError("%s: %s twice for %s" % (where, kind, name))
            if kind == "TYPE" and rest not in ("gauge", "counter", "untyped", "summary",
                                               "histogram"):
                raise ValueError("%s: bad TYPE %r" % (where, rest))
            f[key] = rest
            if not order or order[-1] != name:
                if name in order:
                    raise ValueError("%s: family %s split" % (where, name))
                order.append(name)
            continue
        if line.startswith("#") or not line.strip():
            raise ValueError("%s: unexpected line %r" % (where, line))
        m = re.match(NAME, line)
        if not m:
            raise ValueError("%s: no metric name in %r" % (where, line))
        name = m.group(0)
        f = fams.get(name)
        if not f or f["type"] is None or order[-1] != name:
            raise ValueError("%s: sample of %s outside its family / before its TYPE" % (where, name))
        try:
            labels, rest = parse_labels(line[m.end():], where)
        except IndexError:
            raise ValueError("%s: unterminated label set in %r" % (where, line)) from None
        if not re.fullmatch(" (%s)" % FLOAT, rest):
            raise ValueError("%s: bad value part %r" % (where, rest))
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            raise ValueError("%s: duplicate series" % where)
        seen.add(key)
        f["samples"].append((labels, float(rest)))
    return fams


# ---------------------------------------------------------------------------
# What the files must hold, computed from the oracle's records
# ---------------------------------------------------------------------------

UNITS_LARGEST_FIRST = [("EB", 1024 ** 6), ("PB", 1024 ** 5), ("TB", 1024 ** 4), ("GB", 1024 ** 3),
                       ("MB", 1024 ** 2), ("KB", 1024)]


def bucket(b):
    """README "Prometheus output": with U the largest unit (powers of 1024) not above the size,
    `floor(size/U)-floor(size/U)+1` then U: 1 MiB is 1-2MB, 4.5 GiB 4-5GB, 100 bytes 100-101B."""
    for name, size in UNITS_LARGEST_FIRST:
        if b >= size:
            return "%d-%d%s" % (b // size, b // size + 1, name)
    return "%d-%d%s" % (b, b + 1, "B")


assert bucket(1 << 20) == "1-2MB" and bucket(9 << 29) == "4-5GB" and bucket(100) == "100-101B"
assert bucket(0) == "0-1B" and bucket(1023) == "1023-1024B" and bucket(8192) == "8-9KB"


def fallback_ordinal(rank, nranks, nnodes):
    """src/sink/device.h: no GPU runtime -> local rank in the block layout."""
    if nnodes > 0 and nranks > 0 and nranks % nnodes == 0:
        return rank % (nranks // nnodes)
    return rank


def stale(rec):
    """README "Prometheus output": a record timed from a subset of its channels (the oracle's
    *_stale_channels > 0) is left out of the samples and counted as excluded."""
    return rec["perf"][rec["kind"] + "_stale_channels"] > 0


def expected(traces, env, gpus=None):
    """-> ({(family, labels tuple): value}, {gpu: {"coll": n, "p2p": n, "coll_excluded": n,
    "p2p_excluded": n}}); only the devices in `gpus` (e.g. {"GPU1"}) when given."""
    cfg = harness.RunConfig(env).oracle_config()
    groups, counts = {}, {}
    for t in traces:
        ctxs, recs = oracle.expected_records(t, cfg)
        for cx in ctxs:  # ops left without a record, per device and reason
            h = cx["header"]
            gpu = "GPU%d" % fallback_ordinal(h["rank"], h["n_ranks"], h["nnodes"])
            if gpus is not None and gpu not in gpus:
                continue
            c = counts.setdefault(gpu, {"coll": 0, "p2p": 0, "coll_excluded": 0,
                                        "p2p_excluded": 0})
            for k in ("coll", "p2p"):
                for why, n in cx["untimed"][k].items():
                    c[(k, why)] = c.get((k, why), 0) + n
        for r in recs:
            if r["loose"]:
                raise AssertionError("record without GPU timing: not covered by this test")
            h, p, k = r["header"], r["perf"], r["kind"]
            gpu = "GPU%d" % fallback_ordinal(h["rank"], h["n_ranks"], h["nnodes"])
            if gpus is not None and gpu not in gpus:
                continue
            c = counts.setdefault(gpu, {"coll": 0, "p2p": 0, "coll_excluded": 0,
                                        "p2p_excluded": 0})
            if stale(r):
                c[k + "_excluded"] += 1
                continue
            c[k] += 1
            lab = {"gpu": gpu, "comm_name": h["comm_name"], "n_nodes": str(h["nnodes"]),
                   "nranks": str(h["n_ranks"]), "message_size": bucket(p[k + "_msg_size_bytes"])}
            if k == "coll":
                lab["collective"] = p["coll"]
                lab["algo_proto"] = "%s_%s" % (p["coll_algo"], p["coll_proto"])
            else:
                lab["p2p_operation"] = p["p2p"]
            g = groups.setdefault((k, tuple(sorted(lab.items()))), [])
            g.append((p[k + "_exec_time_ns"] / 1000.0, p[k + "_busbw_gbs"]))
    want = {}
    for (k, lab), ops in groups.items():
        bws = [bw for _, bw in ops if bw > 0]
        gm = math.exp(sum(math.log(b) for b in bws) / len(bws)) if bws else 0.0
        mean = sum(t for t, _ in ops) / len(ops)
        bw_fam, t_fam = (("nccl_bus_bandwidth_gbs", "nccl_collective_exec_time_microseconds")
                         if k == "coll" else
                         ("nccl_p2p_bus_bandwidth_gbs", "nccl_p2p_exec_time_microseconds"))
        want[(bw_fam, lab)] = gm
        want[(t_fam, lab)] = mean
    return want, counts


def hang_expected(traces, env, gpus=None):
    """Hang detection's gauges (docs/CONTRACTS.md section 4): -> (the contexts that must have
    an nccl_inflight_oldest_seconds sample, {(gpu, comm_name, comm_id, rank)}, and
    {(gpu, comm_name, comm_id, rank, function): (sn, exact)}: nccl_last_completed_sn, the
    largest sn among the context's records of that function (stale ones included); `exact`
    False where the context has unverified ops, which count too (the sample is then at
    least that)."""
    cfg = harness.RunConfig(env).oracle_config()
    ctxs_want, last = set(), {}
    for t in traces:
        ctxs, recs = oracle.expected_records(t, cfg)
        loose = set()
        for cx in ctxs:
            h = cx["header"]
            gpu = "GPU%d" % fallback_ordinal(h["rank"], h["n_ranks"], h["nnodes"])
            if gpus is not None and gpu not in gpus:
                continue
            key = (gpu, h["comm_name"], h["id"], str(h["rank"]))
            ctxs_want.add(key)
            if any(cx["untimed"][k]["unverified"] for k in ("coll", "p2p")):
                loose.add(key)
        for r in recs:
            h, p, k = r["header"], r["perf"], r["kind"]
            gpu = "GPU%d" % fallback_ordinal(h["rank"], h["n_ranks"], h["nnodes"])
            key = (gpu, h["comm_name"], h["id"], str(h["rank"]))
            if key not in ctxs_want:
                continue
            fk = key + (p[k],)
            sn = max(last.get(fk, (-1, True))[0], p[k + "_sn"])
            last[fk] = (sn, key not in loose)
    return ctxs_want, last


def close(a, b):
    return abs(a - b) <= 2e-6 + 1e-9 * abs(b)  # printed with 6 decimals


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def strip_finalize(src, dst, rename=None, keep_ctx=()):
    """Copy a trace without its finalize lines (but those of the contexts in keep_ctx);
    `rename` sets every context's comm name."""
    with gzip.open(src, "rt") as fi, open(dst, "w") as fo:
        for line in fi:
            if '"cb":"finalize"' in line and json.loads(line).get("ctx") not in keep_ctx:
                continue
            if rename is not None and '"cb":"init"' in line:
                ev = json.loads(line)
                ev["name"] = rename
                line = json.dumps(ev, separators=(",", ":")) + "\n"
            fo.write(line)


def replay(a, traces, env_extra, wd, threads=False):
    os.makedirs(wd.dump)
    env = harness.make_env(env_extra, dump_dir=wd.dump)
    cmd = harness.replay_cmd(a.replay, a.plugin, traces, threads=threads)
    r = harness.run(cmd, env, wd.cwd, a.timeout)
    problems = []
    if r.timed_out or r.rc != 0:
        problems.append("replay failed (rc %s, timed out %s)" % (r.rc, r.timed_out))
    problems += harness.sanitizer_reports(r.stderr)
    return r, env, problems


def check_files(wd, r, env, traces, problems, stats=True, gpus=None):
    """Check every .prom file of the dump against the oracle (the devices `gpus` only, when
    given); returns the number of samples expected."""
    want, counts = expected(traces, env, gpus)
    hang_ctxs, hang_last = hang_expected(traces, env, gpus)
    got_hang = {OLDEST: {}, LAST_SN: {}}
    host = socket.gethostname()
    names = sorted(os.listdir(wd.dump))
    proms = [n for n in names if n.endswith(".prom")]
    extra = [n for n in names if not n.endswith(".prom")]
    if extra:
        problems.append("files other than .prom in the dump directory: %s" % extra)
    gpus = sorted(counts)
    exp_names = sorted("nccl_inspector_metrics_nodev-%s-pid%d-gpu%s.prom" % (host, r.pid, g[3:])
                       for g in gpus)
    if proms != exp_names:
        problems.append("files %s, expected %s" % (proms, exp_names))
    got = {}
    base = {"version": "v4.0", "cluster": env.get("NCCL_INSPECTOR_CLUSTER", "unknown"),
            "slurm_job_id": env.get("SLURM_JOB_ID", "unknown"), "node": host}
    for fn in proms:
        path = os.path.join(wd.dump, fn)
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode != 0o644:
            problems.append("%s: mode %o, expected 644" % (fn, mode))
        with open(path) as f:
            text = f.read()
        try:
            fams = parse_prom(text, fn)
        except ValueError as e:
            problems.append("not exposition format: %s" % e)
            continue
        gpu = "GPU" + fn.rsplit("-gpu", 1)[1][:-5]
        for name, (typ, extra_labels) in FAMILIES.items():
            if name not in fams:
                if (typ == "gauge" and name != SAMPLED) or stats:
                    problems.append("%s: no family %s" % (fn, name))
                continue
            f = fams[name]
            if f["type"] != typ or not f["help"]:
                problems.append("%s: %s has TYPE %s (want %s), HELP %r"
                                % (fn, name, f["type"], typ, f["help"]))
            for labels, value in f["samples"]:
                if list(labels) != BASE_LABELS + extra_labels:
                    problems.append("%s: %s labels %s, expected %s"
                                    % (fn, name, list(labels), BASE_LABELS + extra_labels))
                    continue
                for k, v in base.items():
                    if labels[k] != v:
                        problems.append("%s: label %s=%r, expected %r" % (fn, k, labels[k], v))
                if labels["gpu"] != gpu:
                    problems.append("%s: gpu label %s in the file of %s" % (fn, labels["gpu"], gpu))
                if name in (OLDEST, LAST_SN):
                    got_hang[name][(gpu,) + tuple(labels[l] for l in extra_labels)] = value
                    continue
                if name == SAMPLED:
                    if labels["sampling_mode"] != "all" or value != 1.0:
                        problems.append("%s: %s %s = %s, expected mode all, 1 (no sampling)"
                                        % (fn, name, dict(labels), value))
                    continue
                if typ == "counter" and "untimed" in name:
                    kind = "coll" if "collectives" in name else "p2p"
                    exp = counts.get(gpu, {}).get((kind, labels["reason"]))
                    if exp is None or value != exp:
                        problems.append("%s: %s{reason=%s} = %s, expected %s"
                                        % (fn, name, labels["reason"], value, exp))
                    continue
                if typ == "counter":
                    kind = "coll" if "collectives" in name else "p2p"
                    if "excluded" in name:
                        if labels["reason"] != "stale_channels":
                            problems.append("%s: %s reason=%r, expected 'stale_channels'"
                                            % (fn, name, labels["reason"]))
                        kind += "_excluded"
                    exp = 0 if "dropped" in name else counts.get(gpu, {}).get(kind, 0)
                    if value != exp:
                        problems.append("%s: %s = %s, expected %s" % (fn, name, value, exp))
                    continue
                key = (name, tuple(sorted((k, v) for k, v in labels.items() if k not in base)))
                got[key] = value
        for name in fams:
            if name not in FAMILIES:
                problems.append("%s: unexpected family %s" % (fn, name))
    if set(got_hang[OLDEST]) != hang_ctxs:
        problems.append("%s samples of %s, expected one per context %s"
                        % (OLDEST, sorted(got_hang[OLDEST]), sorted(hang_ctxs)))
    for key, v in got_hang[OLDEST].items():  # its value is the checks' time: unknown here
        if not (0 <= v < 3600):
            problems.append("%s %s = %r" % (OLDEST, key, v))
    for key in sorted(set(hang_last) | set(got_hang[LAST_SN])):
        v, (sn, exact) = got_hang[LAST_SN].get(key), hang_last.get(key, (None, True))
        if v is None or sn is None or (v != sn if exact else v < sn):
            problems.append("%s %s = %s, expected %s%s" % (LAST_SN, key, v, "" if exact else ">= ", sn))
    for key in sorted(set(want) | set(got)):
        if key not in got:
            problems.append("missing sample %s %s" % key)
        elif key not in want:
            problems.append("unexpected sample %s %s = %s" % (key[0], key[1], got[key]))
        elif not close(got[key], want[key]):
            problems.append("%s %s = %r, expected %r" % (key[0], key[1], got[key], want[key]))
    if shutil.which("promtool") and proms:
        p = subprocess.run(["promtool", "check", "metrics"], input="".join(
            open(os.path.join(wd.dump, f)).read() for f in proms[:1]),
            capture_output=True, text=True)
        # its naming lint flags the seed's _microseconds names (it wants seconds): expected;
        # any other finding, a parsing error above all, is a problem
        found = [l for l in (p.stdout + p.stderr).splitlines() if l.strip() and not re.fullmatch(
            r'nccl_(collective|p2p)_exec_time_microseconds use base unit "seconds" '
            r'instead of "microseconds"', l.strip())]
        if found:
            problems.append("promtool check metrics: %s" % "; ".join(found))
    return len(want)


def result(name, wd, problems, r, msg):
    if problems:
        wd.failed = True
        return False, "FAIL %s: %d problems\n  %s\n  replay stderr (tail):\n%s" % (
            name, len(problems), "\n  ".join(problems[:30]), harness._tail(r.stderr))
    return True, "OK %s: %s" % (name, msg)


def exit_case(fixture, threads=False):
    name = "exit.%s%s" % (fixture.split("/")[-1], ".threads" if threads else "")

    def fn(a):
        with harness.Workdir(a.keep, tag="prom") as wd, \
                tempfile.TemporaryDirectory(prefix="inspector-prom-trace-") as tmp:
            src = harness.fixture(fixture)
            t = os.path.join(tmp, os.path.basename(src).replace(".gz", ""))
            strip_finalize(src, t)
            r, env, problems = replay(a, [t], {"NCCL_INSPECTOR_PROM_DUMP": "1",
                                               "NCCL_INSPECTOR_PROM_DUMP_STATS": "1",
                                               "NCCL_INSPECTOR_CLUSTER": "clusterA",
                                               "SLURM_JOB_ID": "4242"}, wd, threads=threads)
            n = check_files(wd, r, env, [t], problems)
            return result(name, wd, problems, r, "%d samples as the oracle's" % n)
    return harness.Case(name, fn, labels=["prom"] + (["threads"] if threads else []),
                        timeout=90)


def teardown_case():
    """torch-1735: two communicators of rank 0, so one (fallback) device: the first teardown
    writes the device's file, the second removes it."""
    def fn(a):
        with harness.Workdir(a.keep, tag="prom") as wd:
            r, env, problems = replay(a, [harness.fixture("2.28.9/torch-1735")],
                                      {"NCCL_INSPECTOR_PROM_DUMP": "1", "NCCL_DEBUG": "INFO"}, wd)
            left = os.listdir(wd.dump)
            if left:
                problems.append("files left after every communicator was finalized: %s" % left)
            for what in ("writing Prometheus metrics to", "removed"):
                n = len(re.findall(what + r" .*nccl_inspector_metrics_nodev-.*-gpu0\.prom",
                                   r.stderr))
                if n != 1:
                    problems.append("%d '%s' messages for GPU0, expected 1" % (n, what))
            return result("teardown", wd, problems, r, "written at the first teardown, removed "
                          "at the last")
    return harness.Case("teardown.torch-1735", fn, labels=["prom"], timeout=90)


def finalize_case(fixture):
    """Only rank 0's context is finalized: its device's file is gone (it was the device's last
    context), rank 1's device keeps its file, written at exit with rank 1's samples.  (Writing
    at a finalize that is not the device's last is in tests/unit/sink/prom/test_prom.c.)"""
    name = "finalize.%s" % fixture.split("/")[-1]

    def fn(a):
        with harness.Workdir(a.keep, tag="prom") as wd, \
                tempfile.TemporaryDirectory(prefix="inspector-prom-trace-") as tmp:
            src = harness.fixture(fixture)
            with gzip.open(src, "rt") as f:
                rank0 = [json.loads(l)["ctx"] for l in f
                         if '"cb":"init"' in l and json.loads(l)["rank"] == 0]
            t = os.path.join(tmp, os.path.basename(src).replace(".gz", ""))
            strip_finalize(src, t, keep_ctx=rank0)
            r, env, problems = replay(a, [t], {"NCCL_INSPECTOR_PROM_DUMP": "1"}, wd)
            n = check_files(wd, r, env, [t], problems, stats=False, gpus={"GPU1"})
            return result(name, wd, problems, r, "GPU0's file removed, GPU1's %d samples kept" % n)
    return harness.Case(name, fn, labels=["prom"], timeout=90)


def stale_case():
    fixtures = ["2.28.9/torch-1735", "2.28.9/va2a-r0"]

    def fn(a):
        with harness.Workdir(a.keep, tag="prom") as wd, \
                tempfile.TemporaryDirectory(prefix="inspector-prom-trace-") as tmp:
            traces = []
            for f in fixtures:
                src = harness.fixture(f)
                traces.append(os.path.join(tmp, os.path.basename(src).replace(".gz", "")))
                strip_finalize(src, traces[-1])
            r, env, problems = replay(a, traces, {"NCCL_INSPECTOR_PROM_DUMP": "1",
                                                  "NCCL_INSPECTOR_PROM_DUMP_STATS": "1"}, wd)
            # the premise, from the oracle alone: both kinds have records with stale channels
            cfg = harness.RunConfig(env).oracle_config()
            recs = [rec for t in traces for rec in oracle.expected_records(t, cfg)[1]]
            n_stale = {k: sum(1 for rec in recs if rec["kind"] == k and stale(rec))
                       for k in ("coll", "p2p")}
            if not all(n_stale.values()):
                problems.append("the fixtures no longer hold records of both kinds with stale "
                                "channels: %s" % n_stale)
            n = check_files(wd, r, env, traces, problems)  # samples and counters, stale left out
            totals = {}
            for fn_ in os.listdir(wd.dump):
                with open(os.path.join(wd.dump, fn_)) as f:
                    try:
                        fams = parse_prom(f.read(), fn_)
                    except ValueError:
                        continue  # check_files said so
                for name in ("nccl_collectives_total", "nccl_collectives_excluded_total",
                             "nccl_p2p_total", "nccl_p2p_excluded_total"):
                    fam = fams.get(name, {"samples": []})
                    totals[name] = totals.get(name, 0) + sum(v for _, v in fam["samples"])
            for k, fam in (("coll", "nccl_collectives"), ("p2p", "nccl_p2p")):
                want = sum(1 for rec in recs if rec["kind"] == k)
                got = totals.get(fam + "_total", 0) + totals.get(fam + "_excluded_total", 0)
                if totals.get(fam + "_excluded_total") != n_stale[k] or got != want:
                    problems.append("%s: %s aggregated + %s excluded, expected %d + %d"
                                    % (k, totals.get(fam + "_total"),
                                       totals.get(fam + "_excluded_total"), want - n_stale[k],
                                       n_stale[k]))
            return result("stale", wd, problems, r, "%d samples; %d collective and %d P2P "
                          "records with stale channels excluded and counted"
                          % (n, n_stale["coll"], n_stale["p2p"]))
    return harness.Case("stale", fn, labels=["prom"], timeout=90)


def escape_case():
    def fn(a):
        with harness.Workdir(a.keep, tag="prom") as wd, \
                tempfile.TemporaryDirectory(prefix="inspector-prom-trace-") as tmp:
            t = os.path.join(tmp, "ar-nasty.jsonl")
            strip_finalize(harness.fixture("2.28.9/ar"), t, rename=NASTY)
            r, env, problems = replay(a, [t], {"NCCL_INSPECTOR_PROM_DUMP": "1"}, wd)
            n = check_files(wd, r, env, [t], problems, stats=False)
            for fn_ in os.listdir(wd.dump):
                with open(os.path.join(wd.dump, fn_)) as f:
                    text = f.read()
                if re.search(r"^nccl_fake", text, re.M):
                    problems.append("%s: the comm name injected a sample" % fn_)
                names = {l["comm_name"] for fam in parse_prom(text, fn_).values()
                         for l, _ in fam["samples"] if "comm_name" in l}
                if names != {NASTY}:
                    problems.append("%s: comm_name values %r, expected {%r}" % (fn_, names, NASTY))
            return result("escape", wd, problems, r, "%d samples, name round-trips" % n)
    return harness.Case("escape", fn, labels=["prom"], timeout=90)


def interval_case():
    def fn(a):
        with harness.Workdir(a.keep, tag="prom") as wd:
            var = "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS"
            r, env, problems = replay(a, [harness.fixture("2.28.9/ar")],
                                      {"NCCL_INSPECTOR_PROM_DUMP": "1", var: "1000"}, wd)
            problems += harness.check_warnings(r, harness.RunConfig(env),
                                               expect_warn=[var + r"=1000.*30000000"], warn_max=1)
            return result("interval", wd, problems, r, "1000 us raised to 30 s with a warning")
    return harness.Case("interval", fn, labels=["prom"], timeout=90)


def bounds_case():
    busy = os.path.join(harness.DATA, "gpu-truth", "live-mix-b2b-busy", "trace.jsonl.gz")

    def totals(wd):
        """The files' counters and bound families, summed over devices; the log's lines."""
        fams = {}
        for f in sorted(os.listdir(wd.dump)):
            if f.endswith(".prom"):
                with open(os.path.join(wd.dump, f)) as fh:
                    for name, fam in parse_prom(fh.read(), f).items():
                        fams[name] = fams.get(name, 0) + sum(v for _, v in fam["samples"]) \
                            if name.endswith("_total") else fams.get(name, 0) + len(fam["samples"])
        log = {"coll_perf": 0, "p2p_perf": 0, "coll_bound": 0, "p2p_bound": 0}
        for f in os.listdir(wd.dump):
            if f.endswith(".log"):
                for line in open(os.path.join(wd.dump, f)):
                    o = json.loads(line)
                    for k in log:
                        if k in o and not o[k].get(k.split("_")[0] + "_stale_channels", 0):
                            log[k] += 1
        return fams, log

    def fn(a):
        problems, msg = [], []
        with tempfile.TemporaryDirectory(prefix="inspector-prom-trace-") as tmp:
            t = os.path.join(tmp, "busy.jsonl")
            strip_finalize(busy, t)
            for mode in ("apart", "mix"):
                with harness.Workdir(a.keep, tag="prom") as wd:
                    r, env, p = replay(a, [t], {"NCCL_INSPECTOR_PROM_DUMP": "1", "NCCL_INSPECTOR_JSON_DUMP": "1",
                                                "NCCL_INSPECTOR_PROM_DUMP_STATS": "1",
                                                "NCCL_INSPECTOR_BOUNDS": mode}, wd)
                    fams, log = totals(wd)
                    mix = mode == "mix"
                    for kind, fam in (("coll", "nccl_collectives"), ("p2p", "nccl_p2p")):
                        want = log[kind + "_perf"] + (log[kind + "_bound"] if mix else 0)
                        if fams.get(fam + "_total") != want:
                            p.append("%s: %s_total %s, want %d" % (mode, fam, fams.get(fam + "_total"), want))
                        if fams.get(fam + "_bounded_total") != log[kind + "_bound"]:
                            p.append("%s: %s_bounded_total %s, log's bound lines %d" % (
                                mode, fam, fams.get(fam + "_bounded_total"), log[kind + "_bound"]))
                    bound_fams = [n for n in fams if n.endswith("_bound_time_microseconds")]
                    if mix == bool(bound_fams):
                        p.append("%s: bound families %s" % (mode, bound_fams))
                    if not log["coll_bound"] or not log["p2p_bound"]:
                        p.append("%s: no bound lines: %s" % (mode, log))
                    msg.append("%s: %s" % (mode, log))
                    if p:
                        wd.failed = True
                        problems += p
        if problems:
            return False, "FAIL bounds: " + "; ".join(problems[:8])
        return True, "OK bounds: " + "; ".join(msg)
    return harness.Case("bounds", fn, labels=["prom"], timeout=90)


def cases():
    return ([exit_case("2.28.9/" + f) for f in ("ar", "sr", "torch-1735")] +
            [exit_case("2.28.9/threads", threads=True), teardown_case(),
             finalize_case("2.28.9/ar"), stale_case(), escape_case(), interval_case(), bounds_case()])


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check an Inspector JSON dump directory against the oracle's expectations.

Schema and rules: docs/CONTRACTS.md section 2 ([C2] below).  The expected records come from
tests/lib/oracle.py (fixtures) or from a synthetic truth file (tests/lib/harness.py); this module only
compares.  Standard library only; python3 >= 3.9.

As a script:  logcheck.py DUMP_DIR --trace T [--trace T2] [--min-size N] [--no-p2p]
              [--no-require-kernel] [--verbose]
(no run window, pid or stats-drop checks then; tests/run_replay_test.py does the full job).
"""

import argparse
import collections
import json
import os
import re
import socket
import sys
from typing import Dict, List, Optional

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

FORMAT_VERSION = "v4.0"
REC_MECHANISM = "nccl_profiler_interface"
HEADER_KEYS = {"id", "comm_name", "rank", "n_ranks", "nnodes"}
METADATA_KEYS = {"inspector_output_format_version", "git_rev", "rec_mechanism",
                 "dump_timestamp_us", "hostname", "pid"}
# metadata.job_id [C2]: the first of these set and not empty, else no key
JOB_ID_VARS = ("SLURM_JOB_ID", "SLURM_JOBID", "PBS_JOBID", "LSB_JOBID")
JOB_ID_MAX = 128  # bytes of UTF-8
STATS_KEYS = ["coll_records_total", "coll_records_since_last_dump", "coll_dropped_total",
              "coll_dropped_since_last_dump", "p2p_records_total", "p2p_records_since_last_dump",
              "p2p_dropped_total", "p2p_dropped_since_last_dump"]
# Beside STATS_KEYS [C2 "Stats record"]: ops left without a record, by reason, and records
# timed without some channels; then, when NCCL left collectives unreported, coll_unreported.
UNTIMED_KEYS = ["%s_%s" % (k, w) for k in ("coll", "p2p")
                for w in ("untimed_total", "untimed", "partial_total")]
PERF_KEYS = {"coll": set(oracle.COLL_FIELDS), "p2p": set(oracle.P2P_FIELDS)}
FLOAT_SUFFIXES = ("_algobw_gbs", "_busbw_gbs")
# <host>-pid<pid>.log, or with a random suffix when that name was taken (src/io/files.h)
LOG_NAME = re.compile(r"^(?P<host>.+)-pid(?P<pid>[0-9]+)(?:\.[A-Za-z0-9]{6})?\.log$")
MAX_ERRORS_SHOWN = 40
# Slack around the run window for wall-clock stamps (us): clock granularity and rounding only.
WINDOW_SLACK_US = 1_000_000


class Errors:
    """Collects failure messages; each names what it can of trace, comm, rank, op, field."""

    def __init__(self):
        self.items: List[str] = []

    def add(self, msg: str):
        self.items.append(msg)

    def __bool__(self):
        return bool(self.items)

    def __len__(self):
        return len(self.items)

    def render(self, limit: int = MAX_ERRORS_SHOWN) -> str:
        """The messages, those that differ only in their file:line prefix shown once."""
        groups = collections.OrderedDict()
        for m in self.items:
            groups.setdefault(re.sub(r"^[^\s:]+:[0-9]+: ", "", m), []).append(m)
        lines = []
        for msgs in groups.values():
            lines.append(msgs[0] + ("  [and %d more lines like it]" % (len(msgs) - 1)
                                    if len(msgs) > 1 else ""))
        if len(lines) > limit:
            lines = lines[:limit] + ["... and %d more" % (len(lines) - limit)]
        return "\n".join(lines)


def _reject_constant(name):
    raise ValueError("non-JSON number %s" % name)


class Line:
    """One parsed line of a dump file."""
    __slots__ = ("file", "lineno", "raw", "obj", "kind")

    def __init__(self, file, lineno, raw, obj):
        self.file, self.lineno, self.raw, self.obj = file, lineno, raw, obj
        self.kind = None
        for k in ("coll_perf", "p2p_perf", "dump_stats", "coll_bound", "p2p_bound"):
            if k in obj:
                self.kind = k

    def where(self):
        return "%s:%d" % (os.path.basename(self.file), self.lineno)


def read_dump_dir(dump_dir: str, errors: Errors) -> Dict[str, List[Line]]:
    """Every *.log file; every line must be one complete JSON object ending in a newline."""
    files: Dict[str, List[Line]] = {}
    if not os.path.isdir(dump_dir):
        return files
    for name in sorted(os.listdir(dump_dir)):
        if not name.endswith(".log"):
            continue
        path = os.path.join(dump_dir, name)
        lines: List[Line] = []
        with open(path, "rb") as f:
            data = f.read()
        if data and not data.endswith(b"\n"):
            errors.add("%s: last line is not terminated by a newline (torn write?)" % name)
        raws = data.split(b"\n")
        if raws and raws[-1] == b"":
            raws.pop()  # after the final newline
        for lineno, raw in enumerate(raws, 1):
            try:
                text = raw.decode("utf-8")
                obj = json.loads(text, parse_constant=_reject_constant)
            except (UnicodeDecodeError, ValueError) as e:
                errors.add("%s:%d: not a complete JSON object (%s): %.120r" % (name, lineno, e, raw))
                continue
            if not isinstance(obj, dict):
                errors.add("%s:%d: JSON value is not an object" % (name, lineno))
                continue
            lines.append(Line(path, lineno, text, obj))
        files[path] = lines
    return files


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def floats_equal(got, want) -> bool:
    """Floats are printed with 6 decimals [C2]: 1e-6 relative or 1e-6 absolute."""
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        return False
    return abs(got - want) <= 1e-6 or abs(got - want) <= 1e-6 * abs(want)


def expected_job_id(env) -> Optional[str]:
    """metadata.job_id [C2] for a plugin run with environment env: the first of JOB_ID_VARS
    set and not empty, its bytes as UTF-8 with each invalid sequence U+FFFD (Python's decoder
    and the plugin's src/core/utf8.h follow the same Unicode practice), cut between characters
    to at most JOB_ID_MAX bytes; None (no key) when none is set."""
    for name in JOB_ID_VARS:
        v = env.get(name)
        if v:
            text, n = os.fsencode(v).decode("utf-8", "replace"), 0
            for i, ch in enumerate(text):
                n += len(ch.encode("utf-8"))
                if n > JOB_ID_MAX:
                    return text[:i]
            return text
    return None


def check_common(line: Line, errors: Errors, window, hostname, pids,
                 job_id: Optional[str] = None) -> Optional[tuple]:
    """Header and metadata of any record [C2].  Returns (comm id int, rank) or None."""
    o = line.obj
    w = line.where()
    extra = set(o) - {"header", "metadata", line.kind}
    if line.kind is None:
        errors.add("%s: record has none of coll_perf / p2p_perf / dump_stats: keys %s"
                   % (w, sorted(o)))
        return None
    if extra:
        errors.add("%s: unexpected top-level keys %s" % (w, sorted(extra)))
    h, m = o.get("header"), o.get("metadata")
    if not isinstance(h, dict) or not isinstance(m, dict):
        errors.add("%s: header or metadata missing" % w)
        return None
    if set(h) != HEADER_KEYS:
        errors.add("%s: header keys %s, expected %s" % (w, sorted(h), sorted(HEADER_KEYS)))
    want_keys = METADATA_KEYS | ({"job_id"} if job_id is not None else set())
    if set(m) != want_keys:
        errors.add("%s: metadata keys %s, expected %s" % (w, sorted(m), sorted(want_keys)))
    elif job_id is not None and m["job_id"] != job_id:
        errors.add("%s: metadata.job_id %r, expected %r" % (w, m["job_id"], job_id))
    if m.get("inspector_output_format_version") != FORMAT_VERSION:
        errors.add("%s: metadata.inspector_output_format_version %r, expected %r"
                   % (w, m.get("inspector_output_format_version"), FORMAT_VERSION))
    if m.get("rec_mechanism") != REC_MECHANISM:
        errors.add("%s: metadata.rec_mechanism %r, expected %r" % (w, m.get("rec_mechanism"),
                                                                    REC_MECHANISM))
    if not isinstance(m.get("git_rev"), str) or not m.get("git_rev"):
        errors.add("%s: metadata.git_rev %r is not a non-empty string" % (w, m.get("git_rev")))
    if m.get("hostname") != hostname:
        errors.add("%s: metadata.hostname %r, expected %r" % (w, m.get("hostname"), hostname))
    pid = m.get("pid")
    fm = LOG_NAME.match(os.path.basename(line.file))
    if not _is_int(pid):
        errors.add("%s: metadata.pid %r is not an int" % (w, pid))
    elif fm and int(fm.group("pid")) != pid:
        errors.add("%s: metadata.pid %d differs from the file name's pid" % (w, pid))
    elif pids is not None and pid not in pids:
        errors.add("%s: metadata.pid %d is not the replay's pid %s" % (w, pid, sorted(pids)))
    ts = m.get("dump_timestamp_us")
    if not _is_int(ts):
        errors.add("%s: metadata.dump_timestamp_us %r is not an int" % (w, ts))
    elif window is not None:
        lo, hi = window[0] - WINDOW_SLACK_US, window[1] + WINDOW_SLACK_US
        if not lo <= ts <= hi:
            errors.add("%s: metadata.dump_timestamp_us %d outside the run window [%d, %d] (us)"
                       % (w, ts, window[0], window[1]))
    hid = h.get("id")
    if not isinstance(hid, str) or not re.fullmatch(r"0x[0-9a-f]+", hid) or \
            (len(hid) > 3 and hid[2] == "0"):
        errors.add("%s: header.id %r is not 0x + unpadded lower-case hex" % (w, hid))
        return None
    if not _is_int(h.get("rank")):
        errors.add("%s: header.rank %r is not an int" % (w, h.get("rank")))
        return None
    return int(hid, 16), h["rank"]


def check_float_format(line: Line, errors: Errors, prefix: str):
    """Floats printed with 6 decimals [C2]."""
    for suf in FLOAT_SUFFIXES:
        key = prefix + suf
        mt = re.search(r'"%s"\s*:\s*([^,}\s]+)' % re.escape(key), line.raw)
        if mt and not re.fullmatch(r"-?[0-9]+\.[0-9]{6}", mt.group(1)):
            errors.add("%s: %s printed as %s, expected 6 decimals" % (line.where(), key,
                                                                       mt.group(1)))


def describe(exp) -> str:
    p = exp["perf"]
    k = exp["kind"]
    return "trace %s comm 0x%x rank %d %s %s sn %d (%s bytes)" % (
        os.path.basename(exp.get("trace", "?")), exp["comm"], exp["rank"], k, p.get(k),
        exp["sn"], p.get(k + "_msg_size_bytes"))


def compare_perf(line: Line, exp, errors: Errors, verbose: bool, window):
    """Every field equal: ints exact, floats to 1e-6 [C2]."""
    k = exp["kind"]
    got = line.obj[k + "_perf"]
    want = exp["perf"]
    w = "%s: %s" % (line.where(), describe(exp))
    allowed = set(PERF_KEYS[k])
    if verbose:
        allowed |= {"event_trace_sn", "event_trace_ts"}
    missing = PERF_KEYS[k] - set(got)
    extra = set(got) - allowed
    if missing:
        errors.add("%s: fields missing %s" % (w, sorted(missing)))
    if extra:
        errors.add("%s: unexpected fields %s" % (w, sorted(extra)))
    for f, v in want.items():
        if f not in got:
            continue
        g = got[f]
        if isinstance(v, float):
            if not floats_equal(g, v):
                errors.add("%s: field %s expected %.6f got %r" % (w, f, v, g))
        elif _is_int(v):
            if not _is_int(g) or g != v:
                errors.add("%s: field %s expected %d got %r" % (w, f, v, g))
        elif g != v:
            errors.add("%s: field %s expected %r got %r" % (w, f, v, g))
    for f in exp.get("loose", ()):
        if f in got and not isinstance(got[f], (int, float)):
            errors.add("%s: field %s is not a number: %r" % (w, f, got[f]))
    check_float_format(line, errors, k)
    if verbose:
        check_verbose(line, exp, errors, window)
    header = line.obj["header"]
    if header != exp["header"]:
        errors.add("%s: header %s, expected %s" % (w, json.dumps(header, sort_keys=True),
                                                   json.dumps(exp["header"], sort_keys=True)))


def check_verbose(line: Line, exp, errors: Errors, window):
    """NCCL_INSPECTOR_DUMP_VERBOSE=1 blocks [C2]: channel ids are the op's channels in the
    trace; per channel start < record < stop (sn: callbacks of the context, 1-based)."""
    k = exp["kind"]
    perf = line.obj[k + "_perf"]
    w = "%s: %s" % (line.where(), describe(exp))
    for block, suf, strict in (("event_trace_sn", "sn", True), ("event_trace_ts", "ts", False)):
        b = perf.get(block)
        if not isinstance(b, dict):
            errors.add("%s: verbose block %s missing" % (w, block))
            continue
        want_keys = {"%s_start_%s" % (k, suf), "%s_stop_%s" % (k, suf), "kernel_events"}
        if set(b) != want_keys:
            errors.add("%s: %s keys %s, expected %s" % (w, block, sorted(b), sorted(want_keys)))
            continue
        lt = (lambda a, c: a < c) if strict else (lambda a, c: a <= c)
        op_start, op_stop = b["%s_start_%s" % (k, suf)], b["%s_stop_%s" % (k, suf)]
        kev = b["kernel_events"]
        vals = [op_start, op_stop]
        if not isinstance(kev, list):
            errors.add("%s: %s.kernel_events is not a list" % (w, block))
            continue
        chans = []
        for e in kev:
            names = ("kernel_start_" + suf, "kernel_record_" + suf, "kernel_stop_" + suf)
            if not isinstance(e, dict) or set(e) != {"channel_id"} | set(names):
                errors.add("%s: %s kernel event %r has the wrong keys" % (w, block, e))
                continue
            chans.append(e["channel_id"])
            s, r, t = (e[n] for n in names)
            vals += [s, r, t]
            if not all(_is_int(x) for x in (s, r, t)):
                errors.add("%s: %s channel %r: values not ints %r" % (w, block, e["channel_id"], e))
                continue
            if not (lt(s, r) and lt(r, t)):
                errors.add("%s: %s channel %r: expected start < record < stop, got %d, %d, %d"
                           % (w, block, e["channel_id"], s, r, t))
            if _is_int(op_start) and not lt(op_start, s):
                errors.add("%s: %s channel %r: kernel start %d not after the op start %d"
                           % (w, block, e["channel_id"], s, op_start))
        if not all(_is_int(x) for x in vals):
            errors.add("%s: %s has non-int values" % (w, block))
            continue
        if not lt(op_start, op_stop):
            errors.add("%s: %s: op start %d not before op stop %d" % (w, block, op_start, op_stop))
        if strict and min(vals) < 1:
            errors.add("%s: %s: sequence numbers are 1-based, got %d" % (w, block, min(vals)))
        if not strict and window is not None:
            lo, hi = window[0] - WINDOW_SLACK_US, window[1] + WINDOW_SLACK_US
            bad = [x for x in vals if not lo <= x <= hi]
            if bad:
                errors.add("%s: %s: host timestamps %s outside the run window [%d, %d] (us)"
                           % (w, block, bad[:3], window[0], window[1]))
        if exp.get("channels") is not None and sorted(chans) != exp["channels"]:
            errors.add("%s: %s channel ids %s, expected the op's channels %s"
                       % (w, block, sorted(chans), exp["channels"]))


class Expectation:
    """What a run must have written.

    records: expected records (oracle.expected_record dicts), each `multiplicity` times.
    contexts: oracle context dicts (comm, rank, header) that the run initialised.
    ring: {"coll": N, "p2p": M}: only the first N completed of each kind per context are
          written, the rest are counted as dropped; None: nothing may be dropped.
    check_order: each context's records appear in the file in completion order.
    single_dump: each context that wrote has exactly one dump_stats record (one dump).
    sampling: None (every op timed: dump_stats has no "sampling" object) or a function
          check(obj) -> list of problems, for the "sampling" object every dump_stats must have.
    """

    def __init__(self, records, contexts, verbose=False, ring=None, multiplicity=1,
                 check_order=False, single_dump=False, sampling=None):
        self.sampling = sampling
        self.records = records
        self.contexts = contexts
        self.verbose = verbose
        self.ring = ring or {}
        self.multiplicity = multiplicity
        self.check_order = check_order
        self.single_dump = single_dump   # one dump_stats record per context that wrote


def _ctx_key(r):
    return (r["comm"], r["rank"])


def apply_ring(exp: Expectation):
    """Split the expected records into (written, dropped counts per (comm, rank, kind)).

    With a ring of N for a kind, the first N records of each context to complete (completion
    order in the trace) are written and the others dropped (the rings are drained only at
    finalize when the dump thread is disabled).
    """
    written, dropped = [], collections.Counter()
    seen = collections.Counter()
    for r in sorted(exp.records, key=lambda r: r["complete_at"]):
        limit = exp.ring.get(r["kind"])
        key = _ctx_key(r) + (r["kind"],)
        seen[key] += 1
        if limit is not None and seen[key] > limit:
            dropped[key] += 1
        else:
            written.append(r)
    return written, dropped


def check_dump(dump_dir: str, exp: Expectation, window=None, pids=None,
               hostname: Optional[str] = None, job_id: Optional[str] = None):
    """Compare a dump directory with an Expectation.  job_id: every line's metadata.job_id
    (expected_job_id), None for none.  Returns (Errors, summary dict)."""
    errors = Errors()
    hostname = hostname or socket.gethostname()
    files = read_dump_dir(dump_dir, errors)
    written, dropped = apply_ring(exp)
    if written and not files:
        errors.add("no *.log file in %s, but %d records expected" % (dump_dir, len(written)))
    for path in files:
        m = LOG_NAME.match(os.path.basename(path))
        if not m:
            errors.add("%s: file name is not <hostname>-pid<pid>.log" % os.path.basename(path))
        elif m.group("host") != hostname:
            errors.add("%s: file name's host is not %r" % (os.path.basename(path), hostname))
        elif pids is not None and int(m.group("pid")) not in pids:
            errors.add("%s: file name's pid is not the replay's pid %s"
                       % (os.path.basename(path), sorted(pids)))

    known_ctx = {_ctx_key(c): c for c in exp.contexts}
    expected_by_key = {}
    for r in written:
        expected_by_key[oracle.record_key(r["comm"], r["rank"], r["kind"], r["perf"][r["kind"]],
                                          r["sn"])] = r
    found = collections.defaultdict(list)          # key -> [Line]
    perf_counts = collections.Counter()            # (file, comm, rank, kind) -> n
    stats = collections.defaultdict(list)          # (file, comm, rank) -> [Line]
    order = collections.defaultdict(list)          # (comm, rank, kind) -> [key]
    n_perf = n_bound = 0
    for path, lines in files.items():
        for line in lines:
            ck = check_common(line, errors, window, hostname, pids, job_id)
            if ck is None:
                continue
            if ck not in known_ctx:
                errors.add("%s: record for comm 0x%x rank %d, which the trace does not have"
                           % (line.where(), ck[0], ck[1]))
                continue
            if line.kind == "dump_stats":
                stats[(path,) + ck].append(line)
                if line.obj["header"] != known_ctx[ck]["header"]:
                    errors.add("%s: dump_stats header %s, expected %s" % (
                        line.where(), json.dumps(line.obj["header"], sort_keys=True),
                        json.dumps(known_ctx[ck]["header"], sort_keys=True)))
                continue
            if line.kind.endswith("_bound"):
                check_bound(line, expected_by_key, ck, errors)
                n_bound += 1
                continue
            kind = line.kind[:-5]  # coll | p2p
            perf = line.obj[line.kind]
            if not isinstance(perf, dict) or not _is_int(perf.get(kind + "_sn")):
                errors.add("%s: %s without an integer %s_sn" % (line.where(), line.kind, kind))
                continue
            n_perf += 1
            key = oracle.record_key(ck[0], ck[1], kind, perf.get(kind), perf[kind + "_sn"])
            found[key].append(line)
            perf_counts[(path,) + ck + (kind,)] += 1
            order[ck + (kind,)].append(key)

    # each expected op exactly once (or `multiplicity` times), nothing extra
    for key, r in expected_by_key.items():
        got = found.get(key, [])
        if not got and not files:
            continue  # reported once above
        if not got:
            errors.add("missing record: %s" % describe(r))
            continue
        if len(got) != exp.multiplicity:
            errors.add("%s: written %d times, expected %d (%s)" % (
                describe(r), len(got), exp.multiplicity, ", ".join(x.where() for x in got)))
        for line in got:
            compare_perf(line, r, errors, exp.verbose, window)
    for key, lines in found.items():
        if key not in expected_by_key:
            l0 = lines[0]
            kind = key[2]
            p = l0.obj[kind + "_perf"]
            errors.add("%s: unexpected record (%d): comm 0x%x rank %d %s %s sn %s, %s bytes, source %s"
                       % (l0.where(), len(lines), key[0], key[1], kind, p.get(kind), key[4],
                          p.get(kind + "_msg_size_bytes"), p.get(kind + "_timing_source")))

    if exp.check_order:
        want_order = collections.defaultdict(list)
        for r in written:
            want_order[_ctx_key(r) + (r["kind"],)].append(
                oracle.record_key(r["comm"], r["rank"], r["kind"], r["perf"][r["kind"]], r["sn"]))
        for ck, keys in want_order.items():
            if order.get(ck, []) != keys:
                errors.add("comm 0x%x rank %d %s: records not in completion order: got sn %s, "
                           "expected %s" % (ck[0], ck[1], ck[2], [k[4] for k in order.get(ck, [])],
                                            [k[4] for k in keys]))

    check_stats(stats, perf_counts, dropped, exp, errors, files, written)
    summary = {"expected": len(written), "found": n_perf, "files": len(files),
               "dropped": sum(dropped.values()), "bounds": n_bound}
    return errors, summary


def check_bound(line, expected_by_key, ck, errors):
    """A bound line [C2 "Bounds"]: an op left out, bracketed; never one with a record."""
    kind = line.kind[:-6]  # coll | p2p
    b = line.obj[line.kind]
    w = line.where()
    if not isinstance(b, dict) or not all(_is_int(b.get(kind + f)) for f in
                                          ("_sn", "_start_ts_ns", "_end_ts_ns", "_exec_time_ns", "_bound_ops")):
        errors.add("%s: %s malformed: %s" % (w, line.kind, json.dumps(b)))
        return
    if b.get(kind + "_timing_source") != "bound" or b[kind + "_bound_ops"] < 1 or \
            b[kind + "_end_ts_ns"] != b[kind + "_start_ts_ns"] + b[kind + "_exec_time_ns"] or \
            kind + "_busbw_gbs" in b:
        errors.add("%s: %s: not a bound's fields: %s" % (w, line.kind, json.dumps(b)))
    if oracle.record_key(ck[0], ck[1], kind, b.get(kind), b[kind + "_sn"]) in expected_by_key:
        errors.add("%s: a bound for an op the oracle expects a record of" % w)


def check_untimed(s, where, errors):
    """The untimed / partial / unreported part of a dump_stats object [C2]; returns the object
    without it, or None when malformed."""
    bad = []
    for k in ("coll", "p2p"):
        u = s.get(k + "_untimed")
        if not (isinstance(u, dict) and set(u) == set(oracle.UNTIMED) and
                all(_is_int(v) and v >= 0 for v in u.values())):
            bad.append("%s_untimed must have exactly the non-negative ints %s" % (k, oracle.UNTIMED))
        elif s.get(k + "_untimed_total") != sum(u.values()):
            bad.append("%s_untimed_total %s is not the sum of %s_untimed" % (k, s.get(k + "_untimed_total"), k))
        if not (_is_int(s.get(k + "_partial_total")) and s[k + "_partial_total"] >= 0):
            bad.append("%s_partial_total must be a non-negative int" % k)
        nb = s.get(k + "_bounded_total")  # of the unverified, those bounded: once not 0
        if nb is not None and not (_is_int(nb) and 0 < nb <= (u if isinstance(u, dict) else {}).get("unverified", 0)):
            bad.append("%s_bounded_total must be a positive int, at most the unverified" % k)
    steps = s.get("clock_steps")  # steps back of the GPU clock proven: once not 0
    if steps is not None and not (_is_int(steps) and steps > 0):
        bad.append("clock_steps must be a positive int")
    un = s.get("coll_unreported")
    if un is not None and not (isinstance(un, dict) and un and
                               all(_is_int(v) and v > 0 for v in un.values())):
        bad.append("coll_unreported must map function names to positive ints")
    for b in bad:
        errors.add("%s: dump_stats: %s: got %s" % (where, b, json.dumps(s)))
    if bad:
        return None
    return {k: v for k, v in s.items() if k not in UNTIMED_KEYS and k != "coll_unreported"
            and not k.endswith("_bounded_total") and k != "clock_steps"}


def untimed_sig(s):
    """What besides records and drops makes a context report again (a context that reported
    nothing yet stands at zero)."""
    zero = {"untimed_total": 0, "untimed": dict.fromkeys(oracle.UNTIMED, 0), "partial_total": 0}
    return json.dumps([s.get(k, zero[k.split("_", 1)[1]]) for k in UNTIMED_KEYS] +
                      [s.get("coll_unreported"), s.get("coll_bounded_total"), s.get("p2p_bounded_total"),
                       s.get("clock_steps")],
                      sort_keys=True)


def check_stats(stats, perf_counts, dropped, exp: Expectation, errors: Errors, files, written=()):
    """dump_stats [C2]: once per dump per context that wrote or dropped anything since its last
    stats record; per context, since_last_dump sums = records in the file, totals are the running
    sums (so monotonic, the last equal to the sums); dropped as expected."""
    ctx_keys = set(stats) | {k[:3] for k in perf_counts}
    drops_by_ctx = collections.Counter()
    for (comm, rank, kind), n in dropped.items():
        drops_by_ctx[(comm, rank, kind)] += n * exp.multiplicity
    for (comm, rank, kind), n in drops_by_ctx.items():
        if n and not any(k[1:] == (comm, rank) for k in stats):
            errors.add("comm 0x%x rank %d: %d %s records expected dropped, but no dump_stats record"
                       % (comm, rank, n, kind))
    for ck in sorted(ctx_keys):
        path, comm, rank = ck
        lines = stats.get(ck, [])
        name = "%s comm 0x%x rank %d" % (os.path.basename(path), comm, rank)
        sums = collections.Counter()
        last_total = {}
        bad = False
        if exp.single_dump and len(lines) != 1:
            errors.add("%s: %d dump_stats records, expected exactly one (a single dump at "
                       "finalize)" % (name, len(lines)))
        for line in lines:
            s = line.obj["dump_stats"]
            if isinstance(s, dict) and exp.sampling is not None:
                if "sampling" not in s:
                    errors.add("%s: dump_stats has no \"sampling\" object, though sampling is on"
                               % line.where())
                else:
                    for p in exp.sampling(s["sampling"]):
                        errors.add("%s: dump_stats sampling: %s" % (line.where(), p))
                s = {k: v for k, v in s.items() if k != "sampling"}
            if isinstance(s, dict) and "gpu_timer" in s:
                # HIP in the process (README "AMD GPUs"): its shape here; its values are
                # judged by tests/test_rccl_timer.py
                g = s["gpu_timer"]
                if not (isinstance(g, dict) and set(g) == {"unit", "rate_khz", "basis", "ratio"}
                        and g["unit"] in ("ns", "ticks", "pending") and _is_int(g["rate_khz"])
                        and g["rate_khz"] > 0 and g["basis"] in ("measured", "assumed", "pending")
                        and isinstance(g["ratio"], (int, float)) and g["ratio"] >= 0):
                    errors.add("%s: dump_stats gpu_timer malformed: %s" % (line.where(),
                                                                          json.dumps(g)))
                s = {k: v for k, v in s.items() if k != "gpu_timer"}
            full = s
            s = check_untimed(s, line.where(), errors) if isinstance(s, dict) else s
            if s is None:
                bad = True
                continue
            if not isinstance(s, dict) or set(s) != set(STATS_KEYS) or \
                    not all(_is_int(s[k]) and s[k] >= 0 for k in STATS_KEYS):
                errors.add("%s: dump_stats must have exactly the non-negative ints %s: got %s"
                           % (line.where(), STATS_KEYS, json.dumps(s)))
                bad = True
                continue
            if not any(s[k] for k in STATS_KEYS if k.endswith("_since_last_dump")) and \
                    untimed_sig(full) == last_total.get("sig", untimed_sig({})):
                errors.add("%s: dump_stats for a context that wrote, dropped and left out nothing "
                           "since its last stats record" % line.where())
            last_total["sig"] = untimed_sig(full)
            last_stats = full
            for kind in ("coll", "p2p"):
                for what in ("records", "dropped"):
                    sums[(kind, what)] += s["%s_%s_since_last_dump" % (kind, what)]
                    total = s["%s_%s_total" % (kind, what)]
                    prev = last_total.get((kind, what))
                    if prev is not None and total < prev and exp.multiplicity == 1:
                        errors.add("%s: %s: %s_%s_total goes backwards in the file (%d after %d): "
                                   "the lines of two dumps are out of order" % (
                                       line.where(), name, kind, what, total, prev))
                    last_total[(kind, what)] = total
                    # With --repeat the same (comm, rank) is several contexts in a row: totals
                    # restart with each, so only the sums are checked then.
                    if exp.multiplicity == 1 and total != sums[(kind, what)]:
                        errors.add("%s: %s: %s_%s_total %d is not the running sum %d of "
                                   "%s_%s_since_last_dump" % (line.where(), name, kind, what, total,
                                                              sums[(kind, what)], kind, what))
        if bad:
            continue
        # ops left without a record, by reason, and partial records: as the oracle says [C2]
        want = next((c.get("untimed") for c in exp.contexts
                     if (c["comm"], c["rank"]) == (comm, rank)), None)
        if want is not None and exp.multiplicity == 1 and lines:
            got = {k: last_stats[k + "_untimed"] for k in ("coll", "p2p")}
            if got != want:
                errors.add("%s: dump_stats untimed %s, expected %s" % (name, json.dumps(got),
                                                                       json.dumps(want)))
            for kind in ("coll", "p2p"):
                npart = sum(1 for r in written if (r["comm"], r["rank"], r["kind"]) == (comm, rank, kind)
                            and r["perf"][kind + "_stale_channels"] > 0)
                if last_stats[kind + "_partial_total"] != npart:
                    errors.add("%s: dump_stats %s_partial_total %d, expected %d (records with stale "
                               "channels)" % (name, kind, last_stats[kind + "_partial_total"], npart))
        elif want is not None and exp.multiplicity == 1 and not lines and \
                any(v for k in want.values() for v in k.values()):
            errors.add("%s: no dump_stats record, though the oracle expects ops left without a "
                       "record: %s" % (name, json.dumps(want)))
        for kind in ("coll", "p2p"):
            n = perf_counts.get(ck + (kind,), 0)
            if sums[(kind, "records")] != n:
                errors.add("%s: dump_stats %s_records_since_last_dump sum to %d, but the file has "
                           "%d %s records" % (name, kind, sums[(kind, "records")], n, kind))
            want_drop = drops_by_ctx.get((comm, rank, kind), 0)
            if sums[(kind, "dropped")] != want_drop:
                errors.add("%s: dump_stats %s_dropped_since_last_dump sum to %d, expected %d"
                           % (name, kind, sums[(kind, "dropped")], want_drop))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump_dir")
    ap.add_argument("--trace", action="append", required=True)
    ap.add_argument("--min-size", type=int, default=8192)
    ap.add_argument("--no-p2p", action="store_true")
    ap.add_argument("--no-require-kernel", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="records carry the verbose blocks")
    a = ap.parse_args(argv)
    cfg = oracle.Config(min_size=a.min_size, p2p=not a.no_p2p,
                        require_kernel=not a.no_require_kernel)
    recs, ctxs = [], []
    for t in a.trace:
        c, r = oracle.expected_records(t, cfg)
        ctxs += c
        recs += r
    errors, summary = check_dump(a.dump_dir, Expectation(recs, ctxs, verbose=a.verbose))
    if errors:
        print(errors.render(), file=sys.stderr)
        print("FAIL: %d problems; records expected %d, found %d"
              % (len(errors), summary["expected"], summary["found"]), file=sys.stderr)
        return 1
    print("OK: records expected %d, found %d" % (summary["expected"], summary["found"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

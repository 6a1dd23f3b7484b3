#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report answers a hang (docs/report.md "Hangs"): logs of stuck jobs written here line
by line as the plugin writes them (tests/lib/hang_logs.py: records, dump_stats, and the hang,
hang_resolved and comm_idle lines of docs/CONTRACTS.md section 2), each checked against what was
planted and against hang_logs.expected(), the rules computed again in Python from the lines:
--json's `hangs` entry per stuck op (its waiting, queued, missing, completed and unknown ranks;
every rank's state, host, pid, time in flight, last op and its age, whether its process still
writes), the text HANG line, hangs.csv and the HTML page's section (its tags closed in order).
16 ranks on 4 nodes, one process each, HANG_SECONDS 2, the logs copied 9 s after the stuck op:
  hangs.coll-alive   one AllGather stuck: rank 9 never issues it and stays alive (its comm_idle
                     lines go on after the hang began), rank 5 issues it but its kernel never
                     starts (queued), the 14 others wait inside its kernel
  hangs.coll-dead    the same with rank 9 dead (its log ends before the others issue the op:
                     alive false, "died or froze"), and ranks 14 and 15 with no log (unknown)
  hangs.p2p          Send/Recv in pairs (even ranks send to the next): rank 4 never issues its
                     Send, so rank 5's Recv waits for it (missing: [4]); rank 2's Send and rank
                     3's Recv both hang (a transfer stuck on both sides: each is waiting, on its
                     own op, never missing)
  hangs.group        the stuck AllReduce issued in a group with an AllGather and a
                     ReduceScatter that complete: the hang is the AllReduce's alone, rank 9 is
                     missing it with its last op the group before
  hangs.two-comms    two communicators, the hang on the second; rank 15 has no log (unknown):
                     no hang is reported on the first, rank 9's last op is the second's
  hangs.resolved     the stuck op completes 5 s later (rank 9 issues it late): hang_resolved
                     lines on every rank that had hang lines, reported under hangs_resolved and
                     "HANG (resolved)", none under hangs
  hangs.no-records   only hang and comm_idle lines (a hung job with the default dump interval
                     writes no record until it finalizes): exit 0, the same answer; a copy of
                     the logs taken 4 s earlier beside them is known by the first (hang) line
                     of each log and skipped, the later copy read
  hangs.none         a job with no hang line: no HANG in the text, `hangs` and `hangs_resolved`
                     empty, hangs.csv its header alone, the page's section says none
  hangs.hostile      hang lines with wrong types, out-of-range or huge numbers, missing fields,
                     two bodies, a peer outside the communicator: each rejected (counted, named
                     by FILE:LINE) or, where the field is context, read as absent; the report
                     answers from the good lines and never crashes
  hangs.read-order   hangs.p2p and hangs.coll-dead logs read by 1 thread in name order and
                     reversed, and by 4 threads: every output byte-identical
The plugin's own lines (inspector-replay --hang-rank under the plugin, NCCL_INSPECTOR_HANG_SECONDS=1,
tests/lib/hang_common.py; the logs copied and reported while every process holds): the stuck op's
entry has exactly the truth file's missing, queued and waiting ranks, every figure as the oracle
computes it from those lines:
  hangs.plugin-coll         16 ranks on 4 nodes: rank 5 never issues the AllReduce, rank 9 queued
  hangs.plugin-p2p          a ring exchange: rank 3 never issues its Send, rank 6 queued (its Recv's
                            peer, whose Send completed, is not blamed)
  hangs.plugin-group-comms  two communicators, the stuck AllReduce on the second in a group of 3
"""
import csv
import html.parser
import io
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import hang_logs as H  # noqa: E402

STATES = ("waiting", "queued", "missing", "completed", "unknown")


def report_exe(a):
    return os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")


def run(a, args, timeout=60):
    p = subprocess.run([report_exe(a)] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, universal_newlines=True)
    return p.returncode, p.stdout, p.stderr


def coll_steps(n=8):
    return [[H.Op("AllReduce")], [H.Op("AllGather", 4 << 20)]] * (n // 2)


def key_of(e):
    kind = "p2p" if "p2p" in e else "coll"
    return (int(e["comm"], 16), kind, e[kind], e[kind + "_sn"])


def near(x, y, tol=2e-6):
    if x is None or y is None:
        return x is y
    return abs(x - y) <= tol * max(1.0, abs(y))


# ---------------------------------------------------------------------------- checks

def check_json(rep, want, truth, problems):
    """The --json hangs against the oracle (every figure) and against what was planted."""
    got = {key_of(e): e for e in rep["hangs"] + rep["hangs_resolved"]}
    if sorted(got) != sorted(want):
        problems.append("stuck ops %s; expected %s" % (sorted(got), sorted(want)))
        return
    for e in rep["hangs"]:
        if e["resolved"]:
            problems.append("%s under hangs, resolved" % (key_of(e),))
    for e in rep["hangs_resolved"]:
        if not e["resolved"]:
            problems.append("%s under hangs_resolved, not resolved" % (key_of(e),))
    for key, w in want.items():
        e = got[key]
        if e["resolved"] != w["resolved"]:
            problems.append("%s: resolved %s, expected %s" % (key, e["resolved"], w["resolved"]))
        if truth is not None and key in truth and (w["resolved"] or True):
            for st in STATES:
                if truth[key][st] != w["states"][st]:
                    problems.append("the oracle's %s ranks of %s are %s, planted %s (a broken test)"
                                    % (st, key, w["states"][st], truth[key][st]))
        for st in STATES:
            if e[st + "_ranks"] != w["states"][st]:
                problems.append("%s: %s_ranks %s, expected %s" % (key, st, e[st + "_ranks"], w["states"][st]))
            if e["counts"][st] != len(w["states"][st]):
                problems.append("%s: counts.%s %d, expected %d" % (key, st, e["counts"][st], len(w["states"][st])))
        if not near(e["stuck_s"], w["stuck_s"]):
            problems.append("%s: stuck_s %s, expected %s" % (key, e["stuck_s"], w["stuck_s"]))
        if (e["began_us"] or 0) != w["began_us"]:
            problems.append("%s: began_us %s, expected %s" % (key, e["began_us"], w["began_us"]))
        ranks = {r["rank"]: r for r in e["ranks"]}
        listed = sorted(set(w["ranks"]) | set(w["states"]["unknown"]))
        if sorted(ranks) != listed:
            problems.append("%s: ranks listed %s, expected %s" % (key, sorted(ranks), listed))
            continue
        for r in w["states"]["unknown"]:
            if ranks[r]["state"] != "unknown" or ranks[r]["host"] is not None or ranks[r]["alive"] is not None:
                problems.append("%s rank %d: %s, expected unknown with no host" % (key, r, ranks[r]))
        for r, x in w["ranks"].items():
            g = ranks[r]
            for k in ("state", "host", "pid", "last_op", "last_op_age_exact"):
                if k in x and g.get(k) != x[k]:
                    problems.append("%s rank %d: %s %r, expected %r" % (key, r, k, g.get(k), x[k]))
            for k in ("last_op_age_s", "last_line_age_s", "in_flight_s"):
                if k in x and not near(g.get(k), x[k]):
                    problems.append("%s rank %d: %s %r, expected %r" % (key, r, k, g.get(k), x[k]))
            if x["state"] == "missing":
                if g.get("alive") != x["alive"]:
                    problems.append("%s rank %d: alive %r, expected %r" % (key, r, g.get("alive"), x["alive"]))
                si = g.get("stuck_in")
                si = (si.get("coll") or si.get("p2p"), si.get("coll_sn", si.get("p2p_sn"))) if si else None
                xi = (x["stuck_in"][2], x["stuck_in"][3]) if x.get("stuck_in") else None
                if si != xi:
                    problems.append("%s rank %d: stuck_in %r, expected %r" % (key, r, si, xi))


def ranges(v):
    out, i = [], 0
    while i < len(v):
        k = i
        while k + 1 < len(v) and v[k + 1] == v[k] + 1:
            k += 1
        out.append("%d" % v[i] if k == i else "%d-%d" % (v[i], v[k]))
        i = k + 1
    return ", ".join(out)


def check_text(text, rep, problems):
    """A HANG line per stuck op, saying what --json says; HANG (resolved) per resolved one."""
    lines = [l for l in text.splitlines() if "HANG" in l]
    hangs = [l for l in lines if l.startswith("  HANG: ")]
    resolved = [l for l in lines if l.startswith("  HANG (resolved): ")]
    if len(hangs) != len(rep["hangs"]) or len(resolved) != len(rep["hangs_resolved"]):
        problems.append("%d HANG and %d HANG (resolved) lines for %d and %d stuck ops"
                        % (len(hangs), len(resolved), len(rep["hangs"]), len(rep["hangs_resolved"])))
        return
    for l, e in zip(hangs, rep["hangs"]):
        kind = "p2p" if "p2p" in e else "coll"
        c = e["counts"]
        want = ["%s #%d" % (e[kind], e[kind + "_sn"]), "(0x%x)" % int(e["comm"], 16),
                "stuck for %.1f s" % e["stuck_s"],
                "%d rank%s wait%s inside its kernel" % (c["waiting"], "" if c["waiting"] == 1 else "s",
                                                         "s" if c["waiting"] == 1 else ""),
                "%d rank%s issued it but" % (c["queued"], "" if c["queued"] == 1 else "s"),
                "%d rank%s unknown" % (c["unknown"], "" if c["unknown"] == 1 else "s")]
        if kind == "coll":
            want.append("%d rank%s never issued it" % (c["missing"], "" if c["missing"] == 1 else "s"))
        else:
            want.append("%d peer%s never issued the matching" % (c["missing"], "" if c["missing"] == 1 else "s"))
        if e["unknown_ranks"]:
            want.append("ranks %s)" % ranges(e["unknown_ranks"]) if len(e["unknown_ranks"]) > 1
                        else "rank %s)" % ranges(e["unknown_ranks"]))
        for r in e["ranks"]:
            if r["state"] == "queued":
                want.append("rank %d on %s pid %d" % (r["rank"], r["host"], r["pid"]))
            if r["state"] != "missing":
                continue
            want.append("rank %d on %s pid %d: " % (r["rank"], r["host"], r["pid"]))
            if r["last_op"]:
                k = "p2p" if "p2p" in r["last_op"] else "coll"
                want.append("its last op %s #%d ended %s%.1f s ago" % (
                    r["last_op"][k], r["last_op"][k + "_sn"], "" if r["last_op_age_exact"] else "at least ",
                    r["last_op_age_s"]))
            if r["alive"] is True:
                want.append("its log is live, last line %.1f s ago" % r["last_line_age_s"])
            elif r["alive"] is False:
                want.append("its log stops %.1f s ago, before the hang began: its process died or froze"
                            % r["last_line_age_s"])
        for w in want:
            if w not in l:
                problems.append("the HANG line lacks %r:\n      %s" % (w, l))
    for l, e in zip(resolved, rep["hangs_resolved"]):
        kind = "p2p" if "p2p" in e else "coll"
        for w in ("%s #%d" % (e[kind], e[kind + "_sn"]), "stuck for up to %.1f s on %d rank" % (
                e["stuck_s"], e["counts"]["completed"]), "then completed"):
            if w not in l:
                problems.append("the HANG (resolved) line lacks %r:\n      %s" % (w, l))


def check_csv(path, rep, problems):
    """hangs.csv: a row per listed rank of each stuck op, with its state, host and pid."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    if head[:3] != ["comm", "comm_name", "kind"] or any(len(r) != len(head) for r in rows):
        problems.append("hangs.csv: header %s, rows of %s columns" % (head, sorted({len(r) for r in rows})))
        return
    got = [dict(zip(head, r)) for r in rows[1:]]
    want = []
    for e in rep["hangs"] + rep["hangs_resolved"]:
        kind = "p2p" if "p2p" in e else "coll"
        for r in e["ranks"]:
            want.append((e["comm"], kind, e[kind], str(e[kind + "_sn"]), str(int(e["resolved"])), str(r["rank"]),
                         r["state"], r["host"] or "", "" if r["pid"] is None else str(r["pid"]),
                         "" if r.get("alive") is None else str(int(r["alive"]))))
    have = [(g["comm"], g["kind"], g["op"], g["sn"], g["resolved"], g["rank"], g["state"], g["hostname"],
             g["pid"], g["alive"]) for g in got]
    if sorted(have) != sorted(want):
        problems.append("hangs.csv rows %s; --json says %s" % (have[:6], want[:6]))


class Nesting(html.parser.HTMLParser):
    """Every element closed, in order (void elements aside)."""
    VOID = {"meta", "br", "img", "input", "hr", "link", "circle", "line", "rect", "path", "polyline", "text"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes <%s>" % (tag, self.stack[-1] if self.stack else "nothing"))
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def check_html(path, rep, problems):
    with open(path, encoding="utf-8") as f:
        page = f.read()
    p = Nesting()
    p.feed(page)
    p.close()
    if p.errors or p.stack:
        problems.append("the page's tags: %s, left open %s" % (p.errors[:5], p.stack[:5]))
    if 'id="hangs"' not in page:
        problems.append("no hangs section on the page")
        return
    section = page[page.index('id="hangs"'):page.index('id="stragglers"')]
    stuck = section.count("<b>Stuck:</b>")
    done = section.count("<b>Resolved:</b>")
    if stuck != len(rep["hangs"]) or done != len(rep["hangs_resolved"]):
        problems.append("the page shows %d stuck and %d resolved ops; --json %d and %d"
                        % (stuck, done, len(rep["hangs"]), len(rep["hangs_resolved"])))
    if not rep["hangs"] and not rep["hangs_resolved"] and "None: no op in flight" not in section:
        problems.append("the page's hangs section does not say none")
    for e in rep["hangs"]:
        c = e["counts"]
        w = "%d waiting inside its kernel, %d queued (kernel never started), %d never issued it" % (
            c["waiting"], c["queued"], c["missing"])
        if w not in section:
            problems.append("the page lacks %r" % w)
        for r in e["ranks"]:
            if r["state"] == "missing" and r["alive"] is False and "died or froze" not in section:
                problems.append("the page does not say rank %d died or froze" % r["rank"])


def answer(a, wd, job, expect_rc=0, extra_checks=None, earlier_copy=False):
    """Writes the job's logs, runs the report (text with --csv and --html, then --json) and checks
    every output. earlier_copy: a copy of the logs taken 4 s earlier is read too (each log is
    read once: the longer copy). Returns (ok, message)."""
    paths = job.write(wd.dump)
    inputs = [wd.dump]
    if earlier_copy:
        inputs.append(os.path.join(wd.path, "earlier"))
        job.write(inputs[-1], earlier_s=4.0)
    out = os.path.join(wd.path, "out")
    os.makedirs(os.path.join(out, "csv"))
    problems = []
    rc, text, err = run(a, ["--csv", os.path.join(out, "csv"), "--html", os.path.join(out, "page.html")] + inputs)
    rcj, js, errj = run(a, ["--json"] + inputs)
    if rc != expect_rc or rcj != expect_rc:
        return False, "report rc %d / %d, expected %d: %s" % (rc, rcj, expect_rc, (err + errj)[-2000:])
    if "lines rejected" in err or "not Inspector records" in err:
        problems.append("lines left out of the plugin's own logs: %s" % err.strip()[-500:])
    try:
        rep = json.loads(js)
    except ValueError as e:
        return False, "--json is not JSON (%s): %s" % (e, js[-1000:])
    if rep["inputs"]["duplicates_skipped"] != (len(paths) if earlier_copy else 0):
        problems.append("%d files skipped as copies; %d expected" % (
            rep["inputs"]["duplicates_skipped"], len(paths) if earlier_copy else 0))
    want, now = H.expected(wd.dump)
    if rep["inputs"]["last_line_us"] != now:
        problems.append("inputs.last_line_us %s, the newest line %d" % (rep["inputs"]["last_line_us"], now))
    check_json(rep, want, job.truth(), problems)
    check_text(text, rep, problems)
    check_csv(os.path.join(out, "csv", "hangs.csv"), rep, problems)
    check_html(os.path.join(out, "page.html"), rep, problems)
    if extra_checks:
        extra_checks(rep, text, problems)
    if problems:
        wd.failed = True
        return False, "\n  ".join(problems[:30]) + "\n--- text:\n" + text[:4000]
    hang = (rep["hangs"] or rep["hangs_resolved"] or [{}])[0]
    return True, "%d files; %s" % (len(paths), ", ".join(
        "%s %s" % (st, hang.get(st + "_ranks")) for st in STATES if hang.get(st + "_ranks")))


def case(name, make, doc, timeout=60, **kw):
    def fn(a):
        with harness.Workdir(a.keep, "report-hangs") as wd:
            ok, msg = answer(a, wd, make(), **kw)
            return ok, ("OK %s: " if ok else "FAIL %s: ") % name + msg
    return harness.Case(name, fn, labels=["report"], timeout=timeout)


# ---------------------------------------------------------------------------- the jobs

def coll_job(dead=False, unknown=()):
    return H.Job(ranks=16, per_node=4, comms=[H.Comm(0x5EED0001, "dp", coll_steps())],
                 hang=H.Hang(comm=0, step=5, missing={9: "dead" if dead else "alive"}, queued=[5]), unknown=unknown)


def alive_checks(want_alive):
    def fn(rep, text, problems):
        e = rep["hangs"][0]
        r9 = [r for r in e["ranks"] if r["rank"] == 9][0]
        if e["missing_ranks"] != [9] or r9["alive"] is not want_alive:
            problems.append("rank 9: missing %s, alive %s; planted missing, alive %s" % (
                e["missing_ranks"], r9["alive"], want_alive))
        if e["queued_ranks"] != [5]:
            problems.append("queued %s; planted [5]" % e["queued_ranks"])
    return fn


def p2p_job():
    return H.Job(ranks=16, per_node=4, comms=[H.Comm(0x9A1B5, "pp", [[H.pairs()] for _ in range(8)])],
                 hang=H.Hang(comm=0, step=5, missing={4: "alive"}, both_sides=[2]))


def p2p_checks(rep, text, problems):
    by = {(e["p2p"], e["p2p_sn"]): e for e in rep["hangs"]}
    recv, send = by.get(("Recv", 5)), by.get(("Send", 5))
    if not recv or not send or len(by) != 2:
        problems.append("stuck P2P ops %s; planted Recv #5 and Send #5" % sorted(by))
        return
    if recv["waiting_ranks"] != [2, 3, 5] or recv["missing_ranks"] != [4]:
        problems.append("Recv #5: waiting %s, missing %s; planted waiting [2 (its own Send), 3, 5], missing [4]"
                        % (recv["waiting_ranks"], recv["missing_ranks"]))
    r2 = [r for r in recv["ranks"] if r["rank"] == 2]
    if not r2 or r2[0].get("own_op") != {"p2p": "Send", "p2p_sn": 5}:
        problems.append("Recv #5: rank 2 %s; it waits in its own Send #5" % r2)
    if send["waiting_ranks"] != [2, 3] or send["missing_ranks"]:
        problems.append("Send #5: waiting %s, missing %s; planted waiting [2, 3 (its own Recv)], none missing"
                        % (send["waiting_ranks"], send["missing_ranks"]))
    r5 = [r for r in recv["ranks"] if r["rank"] == 5]
    if not r5 or r5[0].get("p2p_peer") != 4:
        problems.append("Recv #5: rank 5 %s; its peer is 4" % r5)


def group_job():
    steps = [[H.Op("AllGather"), H.Op("AllReduce"), H.Op("ReduceScatter")] for _ in range(8)]
    return H.Job(ranks=16, per_node=4, comms=[H.Comm(0x6B0, "grouped", steps)],
                 hang=H.Hang(comm=0, step=5, stuck=1, missing={9: "alive"}))


def group_checks(rep, text, problems):
    if [(e["coll"], e["coll_sn"]) for e in rep["hangs"]] != [("AllReduce", 5)]:
        problems.append("stuck ops %s; planted AllReduce #5 alone" % [(e["coll"], e["coll_sn"]) for e in rep["hangs"]])
        return
    e = rep["hangs"][0]
    r9 = [r for r in e["ranks"] if r["rank"] == 9][0]
    if e["missing_ranks"] != [9] or r9["last_op"] != {"coll": "ReduceScatter", "coll_sn": 4,
                                                      "end_ts_ns": r9["last_op"] and r9["last_op"].get("end_ts_ns")}:
        problems.append("missing %s, rank 9's last op %s; planted [9], the group before's ReduceScatter #4"
                        % (e["missing_ranks"], r9["last_op"]))
    w = [r for r in e["ranks"] if r["state"] == "waiting"][0]
    if w.get("ops_in_flight") != 1:
        problems.append("a waiting rank's ops_in_flight %s: the group's other ops completed" % w.get("ops_in_flight"))


def two_comms_job():
    return H.Job(ranks=16, per_node=4, comms=[H.Comm(0xA0, "first", coll_steps()), H.Comm(0xB0, "second", coll_steps())],
                 hang=H.Hang(comm=1, step=3, missing={9: "alive"}), unknown=[15])


def two_comms_checks(rep, text, problems):
    if [e["comm"] for e in rep["hangs"]] != ["0xb0"]:
        problems.append("hangs on %s; planted on 0xb0 alone" % [e["comm"] for e in rep["hangs"]])
        return
    e = rep["hangs"][0]
    if e["unknown_ranks"] != [15] or e["missing_ranks"] != [9]:
        problems.append("unknown %s, missing %s; planted [15], [9]" % (e["unknown_ranks"], e["missing_ranks"]))


def resolved_job():
    return H.Job(ranks=16, per_node=4, comms=[H.Comm(0x2E5, "dp", coll_steps())],
                 hang=H.Hang(comm=0, step=5, missing={9: "alive"}, queued=[5], resolve_after_s=5.0))


def resolved_checks(rep, text, problems):
    if rep["hangs"] or len(rep["hangs_resolved"]) != 1:
        problems.append("%d hangs, %d resolved; planted one, resolved" % (len(rep["hangs"]), len(rep["hangs_resolved"])))
        return
    e = rep["hangs_resolved"][0]
    if e["counts"]["completed"] != 16 or e["missing_ranks"] or e["waiting_ranks"]:
        problems.append("resolved: %s" % e["counts"])
    if rep["inputs"]["hang_resolved_lines"] != 15:
        problems.append("%d hang_resolved lines read; 15 written" % rep["inputs"]["hang_resolved_lines"])


class NoRecords(H.Job):
    """A job whose logs hold no record: the default dump interval (-1) writes them at finalize."""

    def _put(self, r, dump_us, comm, body_key, body):
        if body_key.endswith("_perf") or body_key == "dump_stats":
            return
        H.Job._put(self, r, dump_us, comm, body_key, body)


def no_records_job():
    return NoRecords(ranks=16, per_node=4, comms=[H.Comm(0x0DD, "dp", coll_steps())],
                     hang=H.Hang(comm=0, step=5, missing={9: "alive"}, queued=[5]))


def none_job():
    return H.Job(ranks=8, per_node=4, comms=[H.Comm(0x00E, "dp", coll_steps())])


def none_checks(rep, text, problems):
    if rep["hangs"] or rep["hangs_resolved"] or "HANG" in text:
        problems.append("a hang reported in a job with none")


# ---------------------------------------------------------------------------- hostile lines

HDR = '"header":{"id":"0x7e57","comm_name":"hostile","rank":%d,"n_ranks":4,"nnodes":1}'
META = '"metadata":{"dump_timestamp_us":%d,"hostname":"h","pid":%d}'


def hline(rank, body, t=1748030000000000, key="hang"):
    return "{" + HDR % rank + "," + META % (t, 100 + rank) + ',"%s":%s}' % (key, body)


GOOD = ('{"coll":"AllReduce","coll_sn":3,"coll_msg_size_bytes":64,"in_flight_s":5.000000,'
        '"first_seen_us":1748029995000000,"kernel_started":true,"channels_started":2,"channels_stopped":0,'
        '"ops_in_flight":1,"repeat":0,"last_completed":{"coll":"AllReduce","coll_sn":2,"end_ts_ns":1}}')

# (line, rejected?): rejected lines are counted and named; the others are read (context read as absent)
HOSTILE = [
    (hline(1, '{"coll":"AllReduce","coll_sn":"3","in_flight_s":5.0,"kernel_started":true}'), True),
    (hline(1, '{"coll":"AllReduce","coll_sn":-1,"in_flight_s":5.0,"kernel_started":true}'), True),
    (hline(1, '{"coll":"AllReduce","coll_sn":99999999999999999999,"in_flight_s":5,"kernel_started":true}'), True),
    (hline(1, '{"coll":"AllReduce","coll_sn":3,"in_flight_s":1e300,"kernel_started":true}'), True),
    (hline(1, '{"coll":"AllReduce","coll_sn":3,"in_flight_s":-2.5,"kernel_started":true}'), True),
    (hline(1, '{"coll":"AllReduce","coll_sn":3,"in_flight_s":"5","kernel_started":true}'), True),
    (hline(1, '{"coll":"AllReduce","coll_sn":3,"kernel_started":true}'), True),
    (hline(1, '{"coll":"AllReduce","coll_sn":3,"in_flight_s":5.0,"kernel_started":1}'), True),
    (hline(1, '{"coll":"AllReduce","coll_sn":3,"in_flight_s":5.0}'), True),
    (hline(1, '{"coll_sn":3,"in_flight_s":5.0,"kernel_started":true}'), True),
    (hline(1, '{"coll":"","coll_sn":3,"in_flight_s":5.0,"kernel_started":true}'), True),
    (hline(1, '{"coll":"AllReduce","p2p":"Send","coll_sn":3,"p2p_sn":3,"in_flight_s":5.0,"kernel_started":true}'), True),
    (hline(1, '{"p2p":"Recv","p2p_sn":3,"p2p_peer":4,"in_flight_s":5.0,"kernel_started":true}'), True),
    (hline(1, '[1,2,3]'), True),
    (hline(1, 'null'), True),
    (hline(1, '{"coll":"AllReduce","coll_sn":3}', key="hang_resolved")[:-1] + ',"comm_idle":{"idle_s":1}}', True),
    (hline(1, '{"idle_s":-1}', key="comm_idle"), True),
    (hline(1, '{"idle_s":"x","last_completed":null}', key="comm_idle"), True),
    (hline(1, '{"coll":"AllReduce"}', key="hang_resolved"), True),
    (hline(1, '{"coll":"AllReduce","coll_sn":3,"in_flight_s":5.0,"kernel_started":true,' +
           '"first_seen_us":-5,"channels_started":"x","ops_in_flight":1e99,"repeat":-1,' +
           '"coll_msg_size_bytes":99999999999999999,"last_completed":{"coll":7}}'), False),
    (hline(2, GOOD), False),
    (hline(0, '{"idle_s":3.0,"last_completed":{"coll":"AllReduce","coll_sn":2,"end_ts_ns":"soon"}}',
           t=1748030001000000, key="comm_idle"), False),
    (hline(3, '{"idle_s":3.0,"last_completed":[1]}', t=1748030001000000, key="comm_idle"), False),
]


def hostile_case():
    def fn(a):
        with harness.Workdir(a.keep, "report-hangs") as wd:
            os.makedirs(wd.dump)
            log = os.path.join(wd.dump, "hostile.log")
            with open(log, "w") as f:
                f.write("\n".join(l for l, _ in HOSTILE) + "\n")
            problems = []
            rc, out, err = run(a, ["--json", log])
            rejected = sum(1 for _, bad in HOSTILE if bad)
            try:
                rep = json.loads(out)
            except ValueError:
                wd.failed = True
                return False, "FAIL hangs.hostile: rc %d, no JSON: %s" % (rc, (out + err)[-2000:])
            if rc != 0 or rep["inputs"]["lines_rejected"] != rejected:
                problems.append("rc %d, %d lines rejected; %d expected" % (rc, rep["inputs"]["lines_rejected"], rejected))
            for i, (_, bad) in enumerate(HOSTILE):
                named = "hostile.log:%d: rejected" % (i + 1) in err
                if bad and i < 10 and not named:  # stderr names the first ten
                    problems.append("line %d not named as rejected" % (i + 1))
                if not bad and "hostile.log:%d:" % (i + 1) in err:
                    problems.append("line %d (context ill-formed only) named: %s" % (i + 1, err))
            hangs = rep["hangs"]
            if len(hangs) != 1 or hangs[0]["coll"] != "AllReduce" or hangs[0]["coll_sn"] != 3:
                problems.append("hangs %s; the good lines give AllReduce #3" % hangs)
            else:
                e = hangs[0]
                if e["waiting_ranks"] != [1, 2] or e["missing_ranks"] != [0, 3] or e["size_bytes"] != 64:
                    problems.append("waiting %s, missing %s, size %s; expected [1, 2], [0, 3], 64"
                                    % (e["waiting_ranks"], e["missing_ranks"], e["size_bytes"]))
                r1 = [r for r in e["ranks"] if r["rank"] == 1][0]
                if r1.get("first_seen_us") is not None or "channels_started" in r1 or "ops_in_flight" in r1:
                    problems.append("rank 1's ill-formed context read as values: %s" % r1)
                r0 = [r for r in e["ranks"] if r["rank"] == 0][0]
                if r0["last_op"] != {"coll": "AllReduce", "coll_sn": 2} or r0["alive"] is not True:
                    problems.append("rank 0 (comm_idle, end_ts_ns not a number): %s" % r0)
                r3 = [r for r in e["ranks"] if r["rank"] == 3][0]
                if r3["last_op"] is not None or r3["alive"] is not True:
                    problems.append("rank 3 (comm_idle, last_completed not an object): %s" % r3)
            # the same lines through every output, and one line of each kind a million times
            rc2, text, err2 = run(a, ["--csv", os.path.join(wd.path, "csv"), "--html", os.path.join(wd.path, "p.html"),
                                      log])
            if rc2 != 0 or "HANG: AllReduce #3" not in text:
                problems.append("text rc %d: %s" % (rc2, (text + err2)[-1000:]))
            if problems:
                wd.failed = True
                return False, "FAIL hangs.hostile: " + "\n  ".join(problems)
            return True, "OK hangs.hostile: %d of %d lines rejected, each named; the answer from the rest" % (
                rejected, len(HOSTILE))
    return harness.Case("hangs.hostile", fn, labels=["report"], timeout=60)


def read_order_case():
    def fn(a):
        problems = []
        with harness.Workdir(a.keep, "report-hangs") as wd:
            for tag, job in (("p2p", p2p_job()), ("dead", coll_job(dead=True, unknown=(14, 15)))):
                d = os.path.join(wd.path, tag)
                paths = job.write(d)
                exe = report_exe(a)
                out = os.path.join(wd.path, "out")
                ref, err = harness.report_outputs(exe, out, paths, threads=1)
                rev, err2 = harness.report_outputs(exe, out, paths[::-1], threads=1) if ref else (None, "")
                four, err3 = harness.report_outputs(exe, out, paths[::-1], threads=4) if rev else (None, "")
                if not ref or not rev or not four:
                    problems.append("%s: %s" % (tag, err or err2 or err3))
                    continue
                if not json.loads(ref["json"])["hangs"]:
                    problems.append("%s: no hang found" % tag)
                for k in sorted(ref):
                    if ref[k] != rev.get(k) or ref[k] != four.get(k):
                        problems.append("%s: %s differs with the files reversed or 4 threads" % (tag, k))
            if problems:
                wd.failed = True
                return False, "FAIL hangs.read-order: " + "; ".join(problems)
            return True, "OK hangs.read-order: text, --json, --csv, --html, --trace byte-identical"
    return harness.Case("hangs.read-order", fn, labels=["report"], timeout=120)


# ---------------------------------------------------------------------------- the plugin's own lines

def plugin_case(name, args, doc):
    """A synthetic job hung by inspector-replay (--hang-rank, hang_common.HangJob) under the plugin
    with NCCL_INSPECTOR_HANG_SECONDS=1; its logs copied while every process holds; the report on
    the copy: a `hangs` entry for the truth file's stuck op with exactly its missing, queued and
    waiting ranks, and every figure as hang_logs.expected() computes it from the plugin's lines."""
    def fn(a):
        import hang_common
        problems = []
        with harness.Workdir(a.keep, "report-hangs") as wd:
            with hang_common.HangJob(a.replay, a.plugin, wd, args, env_extra={"NCCL_INSPECTOR_HANG_SECONDS": "1"},
                                     hold_s=a.timeout) as job:
                h = rep = None
                copy = os.path.join(wd.path, "copy")
                if job.wait_ready(a.timeout / 4):
                    h = job.truth_hang()
                    if job.copy_logs_when(copy, hang_common.stuck_seen(h), a.timeout / 4) is not None:
                        rc, js, err = run(a, ["--json", copy])  # while the job still holds
                        if rc != 0:
                            problems.append("report rc %d: %s" % (rc, err[-1500:]))
                        else:
                            rep = json.loads(js)
                        if not job.running():
                            problems.append("a process exited before the report ran: not a live copy")
                job.release(a.timeout / 4)
                problems += job.problems
            if h is not None and rep is not None:
                key = (int(h["comm"], 16), h["kind"], h["func"], h["sn"])
                got = {key_of(e): e for e in rep["hangs"]}
                e = got.get(key)
                if not e:
                    problems.append("no hangs entry for %s; entries %s" % (key, sorted(got)))
                else:
                    for st in ("missing", "queued", "waiting"):
                        if e[st + "_ranks"] != sorted(h[st]):
                            problems.append("%s_ranks %s; the truth file says %s" % (st, e[st + "_ranks"], sorted(h[st])))
                    if e["unknown_ranks"]:
                        problems.append("unknown ranks %s: every rank wrote a log" % e["unknown_ranks"])
                want, _ = H.expected(copy)
                check_json(rep, want, None, problems)
            elif not problems:
                problems.append("no truth or no report")
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s" % (name, "\n  ".join(problems[:20]))
            return True, "OK %s: %s %s #%d: missing %s, queued %s, %d waiting" % (
                name, h["kind"], h["func"], h["sn"], h["missing"], h["queued"], len(h["waiting"]))
    return harness.Case(name, fn, labels=["report"], timeout=90)


def cases():
    return [
        plugin_case("hangs.plugin-coll", ["--ranks", "16", "--nodes", "4", "--colls", "AllReduce", "--sizes",
                                          "16K:256K", "--hang-rank", "5", "--hang-queued-rank", "9"], ""),
        plugin_case("hangs.plugin-p2p", ["--ranks", "8", "--nodes", "2", "--colls", "AllReduce", "--p2p", "--iters", "2",
                                         "--sizes", "16K:64K", "--hang-kind", "p2p", "--hang-rank", "3",
                                         "--hang-queued-rank", "6"], ""),
        plugin_case("hangs.plugin-group-comms", ["--ranks", "8", "--comms", "2", "--colls", "AllReduce", "--iters", "2",
                                                 "--sizes", "16K:64K", "--hang-comm", "1", "--hang-group", "3",
                                                 "--hang-rank", "2", "--hang-queued-rank", "6", "--threads"], ""),
        case("hangs.coll-alive", coll_job, "", extra_checks=alive_checks(True)),
        case("hangs.coll-dead", lambda: coll_job(dead=True, unknown=(14, 15)), "", extra_checks=alive_checks(False)),
        case("hangs.p2p", p2p_job, "", extra_checks=p2p_checks),
        case("hangs.group", group_job, "", extra_checks=group_checks),
        case("hangs.two-comms", two_comms_job, "", extra_checks=two_comms_checks),
        case("hangs.resolved", resolved_job, "", extra_checks=resolved_checks),
        case("hangs.no-records", no_records_job, "", extra_checks=alive_checks(True), earlier_copy=True),
        case("hangs.none", none_job, "", extra_checks=none_checks),
        hostile_case(),
        read_order_case(),
    ]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

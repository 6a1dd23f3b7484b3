#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report reads each log once, however often it is reached (a copied folder, a .log
beside its .log.gz, the same path twice, a link to it), and never merges two processes' logs.
The job: inspector-replay --synthetic --procs, 8 ranks on 2 nodes, collectives and P2P, one log
per rank; its report (--json) read from the plain folder is the reference.
  dupes.copied-folder     the folder and two copies of it, side by side under one directory:
                          the same report as the folder alone (every figure but the inputs'
                          file count and bytes), duplicates_skipped 16, and one warning that
                          names each copy with the file it repeats
  dupes.log-and-gz        every log beside its gzip (.log.gz): the same report, the plain
                          files read, the .gz named as copies; then each .log cut to its first
                          half (a copy taken while the job was writing): the .gz, the whole
                          log, is read instead, and the report is again the reference's
  dupes.same-path         one log named twice, the folder named twice, the folder with a
                          symbolic link and a hard link to one of its logs inside, and a log
                          named beside the folder that holds it: the reference each time,
                          the warning saying "named twice" / "the same file as"
  dupes.other-processes   hand-written logs whose first lines differ in one field only: the
                          hostname (pid reuse across hosts), the dump time (a process
                          restarted with the same pid), or that name no process at all
                          (identical lines without hostname and pid): every file read, no
                          duplicate claimed
  dupes.contradictions    hand-written logs that contradict each other: communicator 0xd0b5
                          named "comm-m", "comm-a", "comm-z", "comm-y" in five files (of one
                          size: the report reads the largest first), its rank 0 on
                          (node-b, pid 7), (node-a, pid 7) and (node-c, pid 5), its rank 1 on
                          (node-d, pid 9) and (node-d, pid 3); read by one thread from the
                          files in name order and reversed, and by 4 threads: every output
                          (text, --json, --csv, --html, --trace) byte-identical, the name the
                          smallest ("comm-a"), each rank on its smallest (host, pid):
                          node-a pid 7 and node-d pid 3
"""
import gzip
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

SYN = ["--ranks", "8", "--nodes", "2", "--procs", "--iters", "3", "--sizes", "64K:1M", "--p2p", "--seed", "5"]
WARN = "file%s skipped: the same log as another input (each log is read once)"


def report(a, paths):
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    r = subprocess.run([exe, "--json", "--threads", "2"] + list(paths), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, universal_newlines=True)
    try:
        return r.returncode, json.loads(r.stdout), r.stderr
    except ValueError:
        return r.returncode, None, r.stdout + r.stderr


def figures(rep):
    """Everything the report says but where it read it from (file count, bytes, duplicates)."""
    rep = dict(rep)
    rep["inputs"] = {k: v for k, v in rep["inputs"].items()
                     if k not in ("files", "bytes", "duplicates_skipped")}
    return rep


def make_job(a, wd):
    """The job's logs in wd.dump, and its reference report; (logs, reference) or raises."""
    os.makedirs(wd.dump)
    r = harness.run(harness.replay_cmd(a.replay, a.plugin, synthetic=SYN),
                    harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
    if r.rc != 0:
        raise RuntimeError("replay rc %s: %s" % (r.rc, r.stderr[-600:]))
    logs = sorted(f for f in os.listdir(wd.dump) if f.endswith(".log"))
    rc, ref, err = report(a, [wd.dump])
    if rc != 0 or ref is None or len(logs) != 8 or ref["inputs"]["duplicates_skipped"] != 0:
        raise RuntimeError("reference: rc %d, %d logs, %s" % (rc, len(logs), err[-600:]))
    if not ref["inputs"]["p2p"] or not ref["inputs"]["collective"]:
        raise RuntimeError("reference: no P2P or no collective records: %s" % ref["inputs"])
    return logs, ref


def check(problems, what, a, paths, ref, dups, named=()):
    """The report of paths equals ref, with `dups` duplicates skipped, and one warning holding
    each line of `named` ("SKIPPED: a copy of KEPT ...")."""
    rc, rep, err = report(a, paths)
    if rc != 0 or rep is None:
        problems.append("%s: rc %d: %s" % (what, rc, err[-600:]))
        return
    if figures(rep) != figures(ref):
        diff = {k: (rep["inputs"].get(k), ref["inputs"].get(k)) for k in ref["inputs"]
                if rep["inputs"].get(k) != ref["inputs"].get(k)}
        problems.append("%s: not the reference's report (inputs, got/want: %s)" % (what, diff))
    if rep["inputs"]["duplicates_skipped"] != dups or rep["inputs"]["files"] != ref["inputs"]["files"]:
        problems.append("%s: duplicates_skipped %d, files %d, want %d and %d" % (
            what, rep["inputs"]["duplicates_skipped"], rep["inputs"]["files"], dups, ref["inputs"]["files"]))
    head = "inspector-report: %d %s" % (dups, WARN % ("" if dups == 1 else "s"))
    if dups and err.count(head) != 1 or not dups and "skipped: the same log" in err:
        problems.append("%s: want the warning %r once, stderr %r" % (what, head if dups else None, err[-800:]))
    lines = err.splitlines()
    for n in named:
        want = "inspector-report:   " + n
        if want not in lines:
            problems.append("%s: no warning line %r in %r" % (what, want, err[-800:]))


def copied_folder_case():
    def fn(a):
        problems = []
        with harness.Workdir(a.keep, "report-dupes") as wd:
            logs, ref = make_job(a, wd)
            job = os.path.join(wd.path, "job")
            for d in ("a-logs", "b-copy", "c-copy"):
                shutil.copytree(wd.dump, os.path.join(job, d))
            # equal copies: the first in walk order is read; each other names the one read
            rc, rep, err = report(a, [job])
            kept = {}
            for line in err.splitlines():
                if ": a copy of " in line:
                    skipped, k = line.split("inspector-report:   ", 1)[1].split(": a copy of ")
                    kept[skipped] = k.split(" (the same first line)")[0]
            want = {os.path.join(job, d, f) for d in ("a-logs", "b-copy", "c-copy") for f in logs}
            if len(kept) != 10 or not set(kept) <= want or any(
                    os.path.basename(s) != os.path.basename(k) or s == k for s, k in kept.items()):
                problems.append("the warning's lines (10 shown of 16) %s" % sorted(kept.items()))
            if "inspector-report:   and 6 more" not in err.splitlines():
                problems.append("no 'and 6 more' line: %r" % err[-800:])
            check(problems, "three copies of the folder", a, [job], ref, 16)
            # one copy: every skipped file named, with the log it repeats
            shutil.rmtree(os.path.join(job, "c-copy"))
            rc, rep, err = report(a, [job])
            named = [l for l in err.splitlines() if ": a copy of " in l]
            if len(named) != 8 or rep is None or rep["inputs"]["duplicates_skipped"] != 8:
                problems.append("two copies: %d lines name a copy, want 8: %r" % (len(named), err[-800:]))
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL dupes.copied-folder: %s" % "; ".join(problems)
        return True, ("OK dupes.copied-folder: 3 copies of %d logs (%d records) read as one, 16 duplicates "
                      "named" % (len(logs), ref["inputs"]["records"]))
    return harness.Case("dupes.copied-folder", fn, labels=["report"], timeout=120)


def log_and_gz_case():
    def fn(a):
        problems = []
        with harness.Workdir(a.keep, "report-dupes") as wd:
            logs, ref = make_job(a, wd)
            for f in logs:
                p = os.path.join(wd.dump, f)
                with open(p, "rb") as fi, gzip.open(p + ".gz", "wb") as fo:
                    shutil.copyfileobj(fi, fo)
            copy = "%s: a copy of %s (the same first line)"
            check(problems, ".log beside .log.gz", a, [wd.dump], ref, 8,
                  [copy % (os.path.join(wd.dump, f + ".gz"), os.path.join(wd.dump, f)) for f in logs])
            # the plain copies cut in half (whole lines): the gzip files hold more and are read
            for f in logs:
                p = os.path.join(wd.dump, f)
                with open(p) as fi:
                    lines = fi.readlines()
                with open(p, "w") as fo:
                    fo.writelines(lines[:len(lines) // 2])
            check(problems, "a half .log beside its whole .log.gz", a, [wd.dump], ref, 8,
                  [copy % (os.path.join(wd.dump, f), os.path.join(wd.dump, f + ".gz")) for f in logs])
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL dupes.log-and-gz: %s" % "; ".join(problems)
        return True, "OK dupes.log-and-gz: each log read once, from the file that holds all of it"
    return harness.Case("dupes.log-and-gz", fn, labels=["report"], timeout=120)


def same_path_case():
    def fn(a):
        problems = []
        with harness.Workdir(a.keep, "report-dupes") as wd:
            logs, ref = make_job(a, wd)
            one = os.path.join(wd.dump, logs[0])
            rc, single, err = report(a, [one])
            if rc != 0 or single is None:
                return False, "FAIL dupes.same-path: one log: rc %d %s" % (rc, err[-600:])
            check(problems, "one log named twice", a, [one, one], single, 1, [one + ": named twice"])
            check(problems, "the folder named twice", a, [wd.dump, wd.dump], ref, 8,
                  [os.path.join(wd.dump, f) + ": named twice" for f in logs])
            check(problems, "a log named beside its folder", a, [one, wd.dump], ref, 1, [one + ": named twice"])
            link = os.path.join(wd.dump, "link-to-r0.log")
            os.symlink(logs[0], link)
            hard = os.path.join(wd.dump, "hard-link-to-r1.jsonl")
            os.link(os.path.join(wd.dump, logs[1]), hard)
            rc, rep, err = report(a, [wd.dump])
            # which of two names of one file is read depends on the walk's order; the other is named
            got = sorted(l.split("inspector-report:   ", 1)[1] for l in err.splitlines()
                         if ": the same file as " in l)
            want = []
            for x, y in ((one, link), (os.path.join(wd.dump, logs[1]), hard)):
                want.append(["%s: the same file as %s" % (x, y), "%s: the same file as %s" % (y, x)])
            if len(got) != 2 or not all(any(w in got for w in pair) for pair in want):
                problems.append("a link and a hard link: warning lines %s, want one of each of %s" % (got, want))
            check(problems, "a link and a hard link in the folder", a, [wd.dump], ref, 2)
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL dupes.same-path: %s" % "; ".join(problems)
        return True, "OK dupes.same-path: a path twice, a folder twice, links: each log read once"
    return harness.Case("dupes.same-path", fn, labels=["report"], timeout=120)


def line(host, pid, dump_us, rank, sn, comm=0xD0B5, name="dupes"):
    meta = {} if host is None else {"hostname": host, "pid": pid, "dump_timestamp_us": dump_us}
    return json.dumps({
        "header": {"id": "0x%x" % comm, "comm_name": name, "rank": rank, "n_ranks": 2, "nnodes": 2},
        "metadata": meta,
        "coll_perf": {"coll": "AllReduce", "coll_sn": sn, "coll_msg_size_bytes": 1 << 20,
                      "coll_exec_time_ns": 200000 + sn, "coll_timing_source": "kernel_gpu",
                      "coll_busbw_gbs": 50.0, "coll_start_ts_ns": 10**18 + sn * 10**7}},
        separators=(",", ":")) + "\n"


def other_processes_case():
    def fn(a):
        problems = []
        with harness.Workdir(a.keep, "report-dupes") as wd:
            os.makedirs(wd.dump)
            pairs = {
                # pid 4242 on two hosts, the same moment, the same op: two processes
                "pid reuse across hosts": [[line("node-a", 4242, 1800000000000000, 0, sn) for sn in range(5)],
                                           [line("node-b", 4242, 1800000000000000, 0, sn) for sn in range(5)]],
                # one host, one pid, a later start: a restarted process
                "a restart with the same pid": [[line("node-a", 4242, 1800000000000000, 0, sn) for sn in range(5)],
                                                [line("node-a", 4242, 1800000000500000, 0, sn) for sn in range(5)]],
                # lines that name no process: nothing says they are one log
                "lines naming no process": [[line(None, 0, 0, 0, sn) for sn in range(5)],
                                            [line(None, 0, 0, 0, sn) for sn in range(5)]],
            }
            for what, (x, y) in pairs.items():
                d = os.path.join(wd.dump, what.replace(" ", "-"))
                os.makedirs(d)
                for name, lines in (("x.log", x), ("y.log", y)):
                    with open(os.path.join(d, name), "w") as f:
                        f.writelines(lines)
                rc, rep, err = report(a, [d])
                if rc != 0 or rep is None:
                    problems.append("%s: rc %d %s" % (what, rc, err[-600:]))
                    continue
                got = (rep["inputs"]["files"], rep["inputs"]["records"], rep["inputs"]["duplicates_skipped"])
                if got != (2, len(x) + len(y), 0) or "skipped: the same log" in err:
                    problems.append("%s: (files, records, duplicates) %s, want (2, %d, 0); stderr %r" % (
                        what, got, len(x) + len(y), err[-600:]))
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL dupes.other-processes: %s" % "; ".join(problems)
        return True, "OK dupes.other-processes: another host, a restart, no process named: both files read"
    return harness.Case("dupes.other-processes", fn, labels=["report"], timeout=60)


def contradictions_case():
    """A communicator under several names, a rank on several (host, pid): what the report
    says is decided by the data (the smallest name, the smallest (host, pid)), not by which
    line was read first or last (tools/report/acc.c, comm_slot, note_rank, the merge)."""
    def fn(a):
        problems = []
        with harness.Workdir(a.keep, "report-dupes") as wd:
            os.makedirs(wd.dump)
            t0 = 1800000000000000
            # (file, name, rank, host, pid, sequence numbers): rank 0's three processes and
            # rank 1's two each log a part of the job; the smallest of each is in no end file,
            # so neither the first line read nor the last one holds it, in either order. The
            # files are all one size: the report reads the largest first, then in the order given
            parts = [("1.log", "comm-m", 0, "node-b", 7, range(10, 16)),
                     ("2.log", "comm-a", 0, "node-a", 7, range(20, 26)),   # pid 7 again, another host
                     ("3.log", "comm-z", 0, "node-c", 5, range(30, 36)),
                     ("4.log", "comm-m", 1, "node-d", 9, range(10, 16)),
                     ("5.log", "comm-y", 1, "node-d", 3, range(20, 26))]
            for f, name, rank, host, pid, sns in parts:
                with open(os.path.join(wd.dump, f), "w") as fo:
                    fo.writelines(line(host, pid, t0 + pid, rank, sn, name=name) for sn in sns)
            files = [os.path.join(wd.dump, p[0]) for p in parts]
            if len({os.path.getsize(f) for f in files}) != 1:
                raise RuntimeError("the logs differ in size: the report would not read them in the order given")
            exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
            out = os.path.join(wd.path, "out")
            runs = {}
            for what, threads, fs in (("one thread, name order", 1, files),
                                      ("one thread, reversed", 1, files[::-1]),
                                      ("4 threads", 4, files)):
                runs[what], err = harness.report_outputs(exe, out, fs, threads=threads, timeout=120)
                if runs[what] is None:
                    problems.append("%s: %s" % (what, err))
            if not problems:
                ref = runs["one thread, name order"]
                for what, got in runs.items():
                    for k in sorted(set(ref) | set(got)):
                        if ref.get(k) != got.get(k):
                            problems.append("%s: %s differs from one thread's in name order" % (what, k))
                rep = json.loads(ref["json"].decode())
                names = [(c["id"], c["name"]) for c in rep["communicators"]]
                if names != [("0xd0b5", "comm-a")]:
                    problems.append("communicators %s, want [('0xd0b5', 'comm-a')]" % names)
                if b'communicator 0xd0b5 "comm-a"' not in ref["text"]:
                    problems.append("the text names no communicator 0xd0b5 \"comm-a\"")
                page = ref["page.html"].decode()
                for want in ("rank 0 \u00b7 node-a pid 7", "rank 1 \u00b7 node-d pid 3"):
                    if want not in page:
                        problems.append("the page has no %r" % want)
                for other in ("node-b pid", "node-c pid", "node-d pid 9"):
                    if other in page:
                        problems.append("the page places a rank on %r" % other)
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL dupes.contradictions: %s" % "; ".join(problems)
        return True, ("OK dupes.contradictions: %d outputs byte-identical in both file orders and on 4 threads; "
                      "\"comm-a\", node-a pid 7, node-d pid 3" % len(ref))
    return harness.Case("dupes.contradictions", fn, labels=["report"], timeout=120)


def cases():
    return [copied_folder_case(), log_and_gz_case(), same_path_case(), other_processes_case(),
            contradictions_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

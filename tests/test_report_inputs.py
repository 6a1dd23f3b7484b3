#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report against hostile or unusual inputs and output paths, on logs written here
(the report binary sits next to inspector-replay; nothing else is run):
  inputs.nranks-mixed   one communicator whose lines give n_ranks 2 (ranks 0, 1) and n_ranks 4
                        (ranks 2, 3), in either order, in one file or two: the report reads it
                        with 4 ranks (every rank's stats, rank 3 named the straggler it is),
                        and says once on stderr how many lines gave fewer ranks and why. The
                        report used to size its per-rank buckets by the first n_ranks it saw
                        and wrote past them (a heap overflow under ASan)
  inputs.nranks-huge    256 communicators of n_ranks 16,777,216 (the largest a line may give),
                        ranks 0 and 16,777,215 in each, matched across ranks: every rank's
                        stats reported. Per-rank buckets were sized by the sum of the
                        communicators' n_ranks in an int, which wrapped to 0 (a crash)
  inputs.streams        a shell's <(cat a.log) <(cat b.log.gz) (/dev/fd/N pipes) and a named
                        pipe fed by a writer, named on the command line: read to their end,
                        every record counted (a pipe used to read as empty: the gzip sniffing
                        took its first bytes, and its size is 0)
  inputs.huge-line-stream  a named pipe fed more than 2 GiB: records, a record padded to 1 MiB less
                        one byte (read), a line of 1 MiB (rejected: no Inspector line is that
                        long), a line of 2 GiB + 7 bytes (rejected, never held in memory), then
                        records past 2^31 bytes: every record counted, both long lines named by
                        line number, every byte counted. The reader used to grow its buffer to
                        hold the whole line, rescanning it at every read (200 s), until zlib
                        refused a read of 2^31 bytes ("request does not fit in an int"): the
                        records after the line were lost. Half a second of piping (1 CPU)
  inputs.fifo-in-dir    a named pipe (and a link to one) named like a log in a directory, with
                        no writer: skipped with a warning naming it, the report returns (a 30 s
                        guard catches a hang), the directory's regular log read
  inputs.bound-lines    a job's records and, beside them, bound lines (coll_bound, p2p_bound: ops
                        the plugin left out, bracketed by their neighbours; NCCL_INSPECTOR_BOUNDS)
                        of a late rank, wider than every record: the report counts them apart
                        (text and --json), says nothing was left out, and its figures are those
                        of the records alone
  inputs.threads-same   a planted job (tp, pipeline pairs, world, all-pairs; a late rank, a slow link) in 8
                        files of plugin-format lines, whose records repeat their header and
                        metadata (the scanner's per-thread prefix cache), cut into 16 KiB units
                        (INSPECTOR_REPORT_CHUNK_BYTES) so that neighbouring lines go to different
                        threads: text, --json and --csv of --threads 4 byte for byte those of
                        --threads 1, every record counted. Labelled threads: the ThreadSanitizer
                        tier runs it (a cache or table the reading threads shared unlocked is a
                        race there, whatever the bytes)
  inputs.deep-tree      logs 64 directory levels down are read; the two directories one level
                        deeper are not, and one warning says so with their count
  inputs.planted-links  --csv DIR with ranks.csv planted as a link to a file outside, and
                        --html / --trace paths planted as links (one dangling): each refused
                        with an error naming it, exit 1, the targets untouched (the dangling
                        one not created), no temporary file left; without links the same
                        outputs are written, replacing a regular file there, and a hard link
                        planted at clocks.csv is replaced, not written through
  inputs.many-comms     50,000 communicators (3 ranks each, collectives and P2P, one slow link
                        each): text, --csv and --json count every communicator, group, rank
                        and link; then 300,000 communicators of one line each, each from its
                        own process: text, --csv, --html and --trace count every one of them
                        and every process. No time is asserted: the inputs are sized so that
                        each quadratic pass this replaced takes minutes on its own (measured,
                        Debug: the outputs' per-communicator searches of the groups and rank
                        stats > 300 s, the link tallies' search 229 s on the first input; the
                        merge's search per communicator and per process > 400 s on the
                        second), while the report takes seconds (a few more under ASan);
                        the per-run guard (half the case's timeout) catches a regression
"""
import fcntl
import gzip
import json
import os
import re
import stat
import subprocess
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

COMM = 0xABC0DE


def report_exe(a):
    return os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")


def run(a, args, timeout=60, **kw):
    r = subprocess.run([report_exe(a)] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, universal_newlines=True, **kw)
    return r.returncode, r.stdout, r.stderr


def coll_line(comm, rank, nranks, sn, start, exec_ns, host, pid):
    return json.dumps({
        "header": {"id": "0x%x" % comm, "comm_name": "mixed", "rank": rank, "n_ranks": nranks,
                   "nnodes": 1},
        "metadata": {"hostname": host, "pid": pid},
        "coll_perf": {"coll": "AllReduce", "coll_sn": sn, "coll_msg_size_bytes": 1 << 20,
                      "coll_exec_time_ns": exec_ns, "coll_timing_source": "kernel_gpu",
                      "coll_busbw_gbs": 50.0, "coll_start_ts_ns": start}},
        separators=(",", ":")) + "\n"


def job_lines(ranks, nranks, ops=5, late_rank=3, late_ns=500_000):
    """Collectives of COMM as `ranks` saw them: each rank its own process; late_rank starts
    late_ns after the others and, every rank ending together, runs that much shorter."""
    out = []
    for r in ranks:
        for sn in range(ops):
            t0 = 10**15 + sn * 10**7
            skew = late_ns if r == late_rank else r * 1000
            out.append(coll_line(COMM, r, nranks, sn, t0 + skew, 2_000_000 - skew, "host%d" % r, 100 + r))
    return out


def write(path, lines):
    with open(path, "w") as f:
        f.writelines(lines)


def nranks_mixed_case():
    def fn(a):
        problems = []
        few, many = job_lines([0, 1], 2, ops=10), job_lines([2, 3], 4, ops=10)  # 10: >= 8 late ops to name
        want_warn = ("%d lines of 1 communicator give fewer ranks (n_ranks) than other lines of the same "
                     "communicator (e.g. 0x%x: 2 and 4" % (len(few), COMM))
        with harness.Workdir(a.keep, "report-inputs") as wd:
            os.makedirs(wd.dump)
            layouts = {"fewer first": [few + many], "more first": [many + few], "two files": [few, many]}
            for name, files in layouts.items():
                paths = []
                for i, lines in enumerate(files):
                    paths.append(os.path.join(wd.dump, "%s-%d.log" % (name.replace(" ", "-"), i)))
                    write(paths[-1], lines)
                threads = "2" if len(files) > 1 else "1"
                rc, out, err = run(a, ["--json", "--threads", threads] + paths)
                if rc != 0:
                    problems.append("%s: rc %d: %s" % (name, rc, err[-1500:]))
                    continue
                if err.count(want_warn) != 1 or err.count("give fewer ranks") != 1:
                    problems.append("%s: want one warning %r, stderr %r" % (name, want_warn, err))
                o = json.loads(out)
                c = o["communicators"]
                if len(c) != 1 or c[0]["n_ranks"] != 4 or c[0]["ranks_seen"] != 4:
                    problems.append("%s: communicators %s" % (name, [(x["id"], x["n_ranks"], x["ranks_seen"])
                                                                   for x in c]))
                    continue
                ranks = [(x["rank"], x["ops"]) for x in c[0]["ranks"]]
                if ranks != [(r, 10) for r in range(4)]:
                    problems.append("%s: rank stats %s, want ranks 0..3 with 10 ops each" % (name, ranks))
                s = [(x["rank"], x["hostname"]) for x in o["stragglers"]]
                if s != [(3, "host3")]:
                    problems.append("%s: stragglers %s, want rank 3 on host3" % (name, s))
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL inputs.nranks-mixed: %s" % "; ".join(problems)
        return True, "OK inputs.nranks-mixed: 3 layouts, n_ranks 4, ranks 0..3, one warning: %s" % want_warn
    return harness.Case("inputs.nranks-mixed", fn, labels=["report"], timeout=60)


def nranks_huge_case():
    def fn(a):
        problems = []
        top = (1 << 24) - 1
        with harness.Workdir(a.keep, "report-inputs") as wd:
            os.makedirs(wd.dump)
            lines = []
            for c in range(256):
                for r in (0, top):
                    for sn in range(2):
                        lines.append(coll_line(COMM + c, r, top + 1, sn, 10**15 + sn * 10**7 + (300_000 if r else 0),
                                               1000, "host", 1))
            write(os.path.join(wd.dump, "huge.log"), lines)
            rc, out, err = run(a, ["--json", wd.dump])
            if rc != 0:
                problems.append("rc %d: %s" % (rc, err[-1500:]))
            else:
                o = json.loads(out)
                got = [(c["n_ranks"], [(r["rank"], r["ops"]) for r in c["ranks"]]) for c in o["communicators"]]
                want = [(top + 1, [(0, 2), (top, 2)])] * 256
                if got != want:
                    problems.append("communicators (n_ranks, [(rank, ops)]): %s..., want %s..." % (got[:2], want[:1]))
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL inputs.nranks-huge: %s" % "; ".join(problems)
        return True, "OK inputs.nranks-huge: 256 communicators of 2^24 ranks, ranks 0 and 2^24 - 1 each"
    return harness.Case("inputs.nranks-huge", fn, labels=["report"], timeout=60)


def records_of(out):
    m = re.search(r"Inspector report: (\d+) files?, (\d+) records", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def streams_case():
    def fn(a):
        problems = []
        a_lines, b_lines = job_lines([0, 1], 4), job_lines([2, 3], 4)
        with harness.Workdir(a.keep, "report-inputs") as wd:
            os.makedirs(wd.dump)
            pa, pb = os.path.join(wd.dump, "a.log"), os.path.join(wd.dump, "b.log.gz")
            write(pa, a_lines)
            with gzip.open(pb, "wt") as f:
                f.writelines(b_lines)
            want = (2, len(a_lines) + len(b_lines))
            # bash process substitution: the report is given /dev/fd/63 and /dev/fd/62, two pipes
            r = subprocess.run(["bash", "-c", '"$0" --threads 2 <(cat "$1") <(cat "$2")', report_exe(a), pa, pb],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                               universal_newlines=True)
            got = records_of(r.stdout)
            if r.returncode != 0 or got != want:
                problems.append("<(...): rc %d, (files, records) %s, want %s: %s" %
                                (r.returncode, got, want, (r.stdout + r.stderr)[-800:]))
            # a named pipe with a writer, and a plain log beside it
            fifo = os.path.join(wd.path, "feed.log")
            os.mkfifo(fifo)
            wrote = []

            def writer():
                try:
                    with open(fifo, "w") as f:  # blocks until the report opens it
                        f.writelines(b_lines)
                    wrote.append(True)
                except OSError as e:  # the reader closed early: the bug this case is about
                    wrote.append(e)
            t = threading.Thread(target=writer, daemon=True)
            t.start()
            try:
                rc, out, err = run(a, [fifo, pa], timeout=60)
                got = records_of(out)
                if rc != 0 or got != want:
                    problems.append("named pipe: rc %d, (files, records) %s, want %s: %s" %
                                    (rc, got, want, (out + err)[-800:]))
            except subprocess.TimeoutExpired:
                problems.append("named pipe with a writer: the report did not finish in 60 s")
            finally:
                if t.is_alive():  # free the writer if the report never opened the pipe
                    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
                    t.join(5)
                    os.close(fd)
            if wrote != [True]:
                problems.append("the writer of the named pipe: %s" % wrote)
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL inputs.streams: %s" % "; ".join(problems)
        return True, "OK inputs.streams: <(cat log) <(cat log.gz) and a named pipe: %d records each way" % want[1]
    return harness.Case("inputs.streams", fn, labels=["report"], timeout=150)


LINE_MAX = 1 << 20  # tools/report/parse.h, RPT_LINE_MAX: a line this long or longer is rejected


def padded_line(length, sn):
    """A record of exactly `length` bytes with its newline aside (a member of spaces pads it)."""
    rec = json.loads(coll_line(COMM, 0, 4, sn, 10**15 + sn * 10**7, 2_000_000, "host0", 100))
    rec["pad"] = ""
    bare = len(json.dumps(rec, separators=(",", ":")))
    rec["pad"] = " " * (length - bare)
    line = json.dumps(rec, separators=(",", ":"))
    assert len(line) == length
    return line + "\n"


def huge_line_stream_case():
    def fn(a):
        problems = []
        before, after = job_lines([0, 1], 4), job_lines([2, 3], 4)
        near, at = padded_line(LINE_MAX - 1, 100), padded_line(LINE_MAX, 101)
        huge = (1 << 31) + 7
        head = "".join(before + [near, at]).encode()
        tail = b"\n" + "".join(after).encode()
        total = len(head) + huge + len(tail)
        with harness.Workdir(a.keep, "report-inputs") as wd:
            fifo = os.path.join(wd.path, "feed.log")
            os.mkfifo(fifo)
            wrote = []

            def writer():
                try:
                    fd = os.open(fifo, os.O_WRONLY)  # blocks until the report opens it
                    try:
                        fcntl.fcntl(fd, 1031, 1 << 20)  # F_SETPIPE_SZ: fewer switches
                    except OSError:
                        pass
                    with os.fdopen(fd, "wb", buffering=0) as f:
                        f.write(head)
                        block, left = b"x" * (1 << 20), huge
                        while left:
                            left -= f.write(block[:min(left, len(block))])
                        f.write(tail)
                    wrote.append(True)
                except OSError as e:  # the reader stopped early
                    wrote.append(e)
            t = threading.Thread(target=writer, daemon=True)
            t.start()
            try:
                rc, out, err = run(a, ["--json", fifo], timeout=60)
                try:
                    got = json.loads(out)["inputs"]
                except ValueError:
                    got = {}
                want = {"files": 1, "records": len(before) + 1 + len(after), "lines_rejected": 2, "bytes": total}
                seen = {k: got.get(k) for k in want}
                if rc != 0 or seen != want:
                    problems.append("rc %d, %s, want %s: %s" % (rc, seen, want, err[-800:]))
                n = len(before)
                for lineno, length in ((n + 2, LINE_MAX), (n + 3, huge)):
                    msg = "%s:%d: rejected: a line of %d bytes: longer than any Inspector line" % (fifo, lineno, length)
                    if err.count(msg) != 1:
                        problems.append("no %r on stderr: %s" % (msg, err[-800:]))
            except subprocess.TimeoutExpired:
                problems.append("the report did not finish in 60 s")
            finally:
                if t.is_alive():  # free the writer if the report never opened the pipe
                    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
                    t.join(5)
                    os.close(fd)
            if wrote != [True]:
                problems.append("the writer of the named pipe: %s" % wrote)
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL inputs.huge-line-stream: %s" % "; ".join(problems)
        return True, ("OK inputs.huge-line-stream: %d bytes through a pipe, lines of 1 MiB and 2 GiB + 7 "
                      "rejected, the records around them read" % total)
    return harness.Case("inputs.huge-line-stream", fn, labels=["report"], timeout=120)


def fifo_in_dir_case():
    def fn(a):
        problems = []
        lines = job_lines([0, 1, 2, 3], 4)
        with harness.Workdir(a.keep, "report-inputs") as wd:
            os.makedirs(wd.dump)
            write(os.path.join(wd.dump, "r.log"), lines)
            os.mkfifo(os.path.join(wd.dump, "nobody-writes.log"))
            os.symlink("nobody-writes.log", os.path.join(wd.dump, "link-to-fifo.jsonl"))
            try:
                rc, out, err = run(a, [wd.dump], timeout=30)
                if rc != 0 or records_of(out) != (1, len(lines)):
                    problems.append("rc %d, (files, records) %s, want (1, %d)" % (rc, records_of(out), len(lines)))
                for name in ("nobody-writes.log", "link-to-fifo.jsonl"):
                    want = "%s: skipped: a named pipe (FIFO), not a regular file" % os.path.join(wd.dump, name)
                    if err.count(want) != 1:
                        problems.append("no warning %r in %r" % (want, err))
            except subprocess.TimeoutExpired:
                problems.append("the report blocked on a named pipe found in the directory (30 s)")
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL inputs.fifo-in-dir: %s" % "; ".join(problems)
        return True, "OK inputs.fifo-in-dir: two pipes skipped with a warning each, %d records read" % len(lines)
    return harness.Case("inputs.fifo-in-dir", fn, labels=["report"], timeout=60)


def deep_tree_case():
    def fn(a):
        problems = []
        top, mid, deep = job_lines([0, 1], 4), job_lines([2], 4), job_lines([3], 4)
        with harness.Workdir(a.keep, "report-inputs") as wd:
            root = wd.dump
            os.makedirs(root)
            write(os.path.join(root, "top.log"), top)
            d = root
            for level in range(1, 65):  # levels 1..64 below root are read
                d = os.path.join(d, "d%d" % level)
            os.makedirs(d)
            write(os.path.join(d, "level64.log"), mid)
            for name in ("e", "f"):  # level 65: not read, counted
                os.makedirs(os.path.join(d, name))
                write(os.path.join(d, name, "level65.log"), deep)
            rc, out, err = run(a, [root])
            want = (2, len(top) + len(mid))
            if rc != 0 or records_of(out) != want:
                problems.append("rc %d, (files, records) %s, want %s" % (rc, records_of(out), want))
            msg = "%s: 2 directories more than 64 levels below it not read" % root
            if err.count(msg) != 1 or err.count("levels below") != 1:
                problems.append("want one warning %r, stderr %r" % (msg, err[-600:]))
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL inputs.deep-tree: %s" % "; ".join(problems)
        return True, "OK inputs.deep-tree: level 64 read, 2 directories at level 65 counted in one warning"
    return harness.Case("inputs.deep-tree", fn, labels=["report"], timeout=60)


CSV_TABLES = ["groups.csv", "ranks.csv", "stragglers.csv", "links.csv", "changes.csv", "clocks.csv"]


def planted_links_case():
    def fn(a):
        problems = []
        with harness.Workdir(a.keep, "report-inputs") as wd:
            os.makedirs(wd.dump)
            write(os.path.join(wd.dump, "r.log"), job_lines([0, 1, 2, 3], 4))
            out_dir = os.path.join(wd.path, "shared")  # where someone else can write too
            outside = os.path.join(wd.path, "outside")
            csv_dir = os.path.join(out_dir, "tables")
            os.makedirs(csv_dir)
            os.makedirs(outside)
            victims = {}
            for name in ("ranks.csv", "t.json"):
                victims[name] = os.path.join(outside, "victim-" + name)
                write(victims[name], ["keep me\n"])
                os.chmod(victims[name], 0o644)
            os.symlink(victims["ranks.csv"], os.path.join(csv_dir, "ranks.csv"))
            os.symlink(victims["t.json"], os.path.join(out_dir, "t.json"))
            never = os.path.join(outside, "never-created.html")  # a dangling link
            os.symlink(never, os.path.join(out_dir, "r.html"))
            before = {n: os.stat(p) for n, p in victims.items()}
            planted = [os.path.join(csv_dir, "ranks.csv"), os.path.join(out_dir, "r.html"),
                       os.path.join(out_dir, "t.json")]
            rc, out, err = run(a, ["--csv", csv_dir, "--html", planted[1], "--trace", planted[2], wd.dump])
            if rc != 1:
                problems.append("rc %d with planted links, want 1" % rc)
            for p in planted:
                want = "refusing to write %s: it is a symbolic link" % p
                if err.count(want) != 1:
                    problems.append("no error %r" % want)
                if not os.path.islink(p):
                    problems.append("%s is no longer the planted link" % p)
            for n, p in victims.items():
                with open(p) as f:
                    if f.read() != "keep me\n" or os.stat(p).st_mtime_ns != before[n].st_mtime_ns:
                        problems.append("the link's target %s was written" % p)
            if os.path.lexists(never):
                problems.append("the dangling link's target %s was created" % never)
            if not os.path.isfile(os.path.join(csv_dir, "groups.csv")):
                problems.append("groups.csv (before the planted ranks.csv) was not written")
            leftovers = [n for d in (csv_dir, out_dir, outside) for n in os.listdir(d) if n.startswith(".")]
            if leftovers:
                problems.append("temporary files left: %s" % leftovers)
            # no symbolic links: every output written as a regular file, an existing one replaced;
            # a hard link planted at clocks.csv is replaced too, its other name untouched
            for p in planted:
                os.unlink(p)
            write(planted[1], ["old page\n"])
            hard = os.path.join(outside, "victim-hard")
            write(hard, ["keep me\n"])
            if os.path.lexists(os.path.join(csv_dir, "clocks.csv")):
                os.unlink(os.path.join(csv_dir, "clocks.csv"))
            os.link(hard, os.path.join(csv_dir, "clocks.csv"))
            rc, out, err = run(a, ["--csv", csv_dir, "--html", planted[1], "--trace", planted[2], wd.dump])
            if rc != 0:
                problems.append("rc %d without links: %s" % (rc, err[-600:]))
            for p in [os.path.join(csv_dir, t) for t in CSV_TABLES] + planted[1:]:
                st = os.lstat(p) if os.path.lexists(p) else None
                if not st or not stat.S_ISREG(st.st_mode) or st.st_size == 0:
                    problems.append("%s not written as a regular file" % p)
            with open(hard) as f:
                if f.read() != "keep me\n" or os.stat(hard).st_nlink != 1:
                    problems.append("the file hard-linked at clocks.csv was written")
            with open(planted[1]) as f:
                if not f.read().startswith("<!DOCTYPE html>"):
                    problems.append("the existing %s was not replaced by the page" % planted[1])
            with open(os.path.join(csv_dir, "ranks.csv")) as f:
                if len(f.read().splitlines()) != 5:
                    problems.append("ranks.csv: want a header and 4 ranks")
            leftovers = [n for d in (csv_dir, out_dir) for n in os.listdir(d) if n.startswith(".")]
            if leftovers:
                problems.append("temporary files left: %s" % leftovers)
            if problems:
                wd.failed = True
            # the report's own streams are not planted links: /dev/stdout (a link under /dev)
            # and "-" write to standard output
            rc, out, err = run(a, ["--trace", "/dev/stdout", "--html", "-", wd.dump])
            if rc != 0 or out.count('"traceEvents"') != 1 or out.count("<!DOCTYPE html>") != 1:
                problems.append("--trace /dev/stdout --html -: rc %d, trace %d, page %d"
                                % (rc, out.count('"traceEvents"'), out.count("<!DOCTYPE html>")))
        if problems:
            return False, "FAIL inputs.planted-links: %s\n%s" % ("; ".join(problems), err[-1000:])
        return True, "OK inputs.planted-links: 3 planted links refused, targets untouched; written without them"
    return harness.Case("inputs.planted-links", fn, labels=["report"], timeout=60)


MANY = 50_000
ONE_LINE = 300_000


def write_many_comms(path, n):
    """n communicators of 3 ranks (3 processes on one host): an AllReduce on each rank, P2P
    Sends around the ring, rank 0's 3 Sends at a fifth of the others' busbw (a slow link)."""
    h = ('{"header":{"id":"0x%x","comm_name":"c","rank":%d,"n_ranks":3,"nnodes":1},'
         '"metadata":{"hostname":"node","pid":%d},')
    coll = ('"coll_perf":{"coll":"AllReduce","coll_sn":0,"coll_msg_size_bytes":1048576,'
            '"coll_exec_time_ns":10000,"coll_timing_source":"kernel_gpu","coll_busbw_gbs":10.0,'
            '"coll_start_ts_ns":%d}}\n')
    p2p = ('"p2p_perf":{"p2p":"Send","p2p_sn":%d,"p2p_peer":%d,"p2p_msg_size_bytes":1048576,'
           '"p2p_exec_time_ns":10000,"p2p_timing_source":"kernel_gpu","p2p_busbw_gbs":%s}}\n')
    with open(path, "w") as f:
        for c in range(n):
            for r in range(3):
                hd = h % (0x100000 + c, r, 100 + r)
                f.write(hd + coll % (10**12 + c * 10**6 + r * 100))
                for sn in range(3 if r == 0 else 1):
                    f.write(hd + p2p % (sn, (r + 1) % 3, "2.0" if r == 0 else "10.0"))
    return n * (3 + 5)


def write_one_line_comms(path, n):
    """n communicators of one rank and one line each, each rank its own process."""
    line = ('{"header":{"id":"0x%x","rank":0,"n_ranks":1,"nnodes":1},"metadata":{"hostname":"h","pid":%d},'
            '"coll_perf":{"coll":"AllReduce","coll_sn":0,"coll_msg_size_bytes":1024,"coll_exec_time_ns":1000,'
            '"coll_timing_source":"kernel_gpu","coll_busbw_gbs":1.0,"coll_start_ts_ns":%d}}\n')
    with open(path, "w") as f:
        for c in range(n):
            f.write(line % (0x100000 + c, 1000 + c, 10**12 + c * 1000))


def csv_rows(path):
    with open(path) as f:
        return sum(1 for _ in f) - 1


def many_comms_case():
    def fn(a):
        problems = []
        guard = a.timeout / 2  # per run; the case's timeout is the last resort
        with harness.Workdir(a.keep, "report-inputs") as wd:
            os.makedirs(wd.dump)
            log = os.path.join(wd.dump, "many.log")
            records = write_many_comms(log, MANY)
            csv_dir = os.path.join(wd.path, "tables")
            try:
                rc, out, err = run(a, ["--csv", csv_dir, log], timeout=guard)
                if rc != 0 or records_of(out) != (1, records):
                    problems.append("text: rc %d, (files, records) %s, want (1, %d)" % (rc, records_of(out), records))
                n_tables = len(re.findall(r"^communicator 0x", out, re.M))
                # rank 0's Sends to rank 1 are slow, not rank 1's way back: one way (links.c)
                n_slow = len(re.findall(r"^  SLOW LINK: ranks 0 -> 1 on node", out, re.M))
                if n_tables != MANY or n_slow != MANY:
                    problems.append("text: %d communicator tables, %d slow links, want %d each" %
                                    (n_tables, n_slow, MANY))
                for table, rows in (("groups.csv", 2 * MANY), ("ranks.csv", 3 * MANY), ("links.csv", MANY)):
                    got = csv_rows(os.path.join(csv_dir, table))
                    if got != rows:
                        problems.append("%s: %d rows, want %d" % (table, got, rows))
                # --json: one object per communicator, each with its 3 ranks (counted, not parsed:
                # the object is 150 MB)
                r = subprocess.run([report_exe(a), "--json", log], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=guard)
                n_comms = r.stdout.count(b'"n_ranks":3,')
                n_ranks = len(re.findall(rb'"rank":[012],"hostname":"node"', r.stdout))
                if r.returncode != 0 or n_comms != MANY or n_ranks != 3 * MANY:
                    problems.append("--json: rc %d, %d communicators, %d rank stats" %
                                    (r.returncode, n_comms, n_ranks))
                os.unlink(log)  # 115 MB: not kept, even when the case fails
                write_one_line_comms(log, ONE_LINE)
                html, trace = os.path.join(wd.path, "r.html"), os.path.join(wd.path, "t.json")
                rc, out, err = run(a, ["--csv", csv_dir, "--html", html, "--trace", trace, log], timeout=guard)
                n_tables = len(re.findall(r"^communicator 0x", out, re.M))
                if rc != 0 or records_of(out) != (1, ONE_LINE) or n_tables != ONE_LINE:
                    problems.append("one-line communicators: rc %d, (files, records) %s, %d tables, want %d" %
                                    (rc, records_of(out), n_tables, ONE_LINE))
                got = (csv_rows(os.path.join(csv_dir, "groups.csv")), csv_rows(os.path.join(csv_dir, "clocks.csv")))
                if got != (ONE_LINE, ONE_LINE):
                    problems.append("one-line communicators: (groups, clocks) rows %s, want %d each" % (got, ONE_LINE))
                with open(trace) as f:
                    n_procs = len(re.findall(r'"name":"process_name"', f.read()))
                if n_procs != ONE_LINE or os.path.getsize(html) == 0:
                    problems.append("one-line communicators: %d processes in the trace, html %d bytes" %
                                    (n_procs, os.path.getsize(html)))
            except subprocess.TimeoutExpired as e:
                problems.append("a run did not finish in %.0f s (%s): quadratic in communicators again?" %
                                (guard, " ".join(str(x) for x in e.cmd[1:])))
            if os.path.exists(log):
                os.unlink(log)
            if problems:
                wd.failed = True
        if problems:
            return False, "FAIL inputs.many-comms: %s" % "; ".join(problems)
        return True, ("OK inputs.many-comms: %d communicators (%d records): text, CSV and JSON complete; %d "
                      "one-line communicators: text, CSV, HTML and trace complete" % (MANY, records, ONE_LINE))
    return harness.Case("inputs.many-comms", fn, labels=["report"], timeout=180)


def bound_lines_case():
    def bound_line(rank, sn, kind):
        o = json.loads(coll_line(COMM, rank, 4, sn, 10**15, 50_000_000, "host%d" % rank, 100 + rank))
        body = o.pop("coll_perf")
        if kind == "p2p":
            body = {"p2p": "Send", "p2p_sn": sn, "p2p_peer": (rank + 1) % 4, "p2p_msg_size_bytes": 1 << 20,
                    "p2p_exec_time_ns": 50_000_000, "p2p_start_ts_ns": 10**15}
        body[kind + "_timing_source"] = "bound"
        body[kind + "_end_ts_ns"] = 10**15 + 50_000_000
        body[kind + "_bound_ops"] = 2
        o[kind + "_bound"] = body
        return json.dumps(o, separators=(",", ":")) + "\n"

    def fn(a):
        with harness.Workdir(a.keep, "report-inputs") as wd:
            plain, bounds = os.path.join(wd.path, "plain"), os.path.join(wd.path, "bounds")
            os.makedirs(plain)
            os.makedirs(bounds)
            recs = job_lines(range(4), 4)
            extra = [bound_line(3, 100 + k, "coll" if k % 2 else "p2p") for k in range(6)]
            write(os.path.join(plain, "job.log"), recs)
            write(os.path.join(bounds, "job.log"), recs[:7] + extra + recs[7:])
            problems = []
            outs = {}
            for name, d in (("plain", plain), ("bounds", bounds)):
                rc, out, err = run(a, ["--json", d])
                rc2, text, err2 = run(a, [d])
                if rc or rc2:
                    problems.append("%s: exit %s/%s: %s" % (name, rc, rc2, (err + err2)[-300:]))
                    continue
                outs[name] = (json.loads(out), text, err + err2)
            if not problems:
                j, text, err = outs["bounds"]
                if j["inputs"].get("bound_lines") != 6 or j["inputs"]["lines_not_records"] != 0:
                    problems.append("inputs %s" % j["inputs"])
                if records_of(text) != (1, 20) or "6 bound lines" not in text or "left out" in text.split("\n")[0]:
                    problems.append("text: %r" % text[:400])
                if "not Inspector records" in err:
                    problems.append("stderr: %r" % err[:300])
                strip = lambda o: {k: v for k, v in o.items() if k != "inputs"}
                if strip(j) != strip(outs["plain"][0]):
                    problems.append("the figures differ from those of the records alone")
            if problems:
                wd.failed = True
                return False, "FAIL inputs.bound-lines: " + "; ".join(problems)
            return True, "OK inputs.bound-lines: 6 bound lines counted apart, the figures the records'"
    return harness.Case("inputs.bound-lines", fn, labels=["report"], timeout=60)


def threads_same_case():
    def fn(a):
        import report_planted
        job = report_planted.Job(13, nodes=4, gpn=2, iters=24, tp_ops=2, late=5, a2a=True, slow_dir=(0, 1))
        with harness.Workdir(a.keep, "report-inputs") as wd:
            os.makedirs(wd.dump)
            files = job.write(wd.dump)
            nrec = sum(len(v) for v in job.lines.values())
            env = dict(os.environ, INSPECTOR_REPORT_CHUNK_BYTES=str(16 << 10))
            outs, problems = {}, []
            for threads in (1, 4):
                got = {}
                for fmt, extra in (("text", ["--csv", os.path.join(wd.path, "csv%d" % threads)]), ("json", ["--json"])):
                    rc, out, err = run(a, ["--threads", str(threads)] + extra + files, timeout=240, env=env)
                    if rc or "ThreadSanitizer" in err:
                        said = [l for l in err.splitlines() if "ThreadSanitizer" in l or "SUMMARY" in l]
                        problems.append("--threads %d %s: exit %d: %s" % (threads, fmt, rc, "; ".join(said[:3]) or err[-1500:]))
                    got[fmt] = out
                csv_dir = os.path.join(wd.path, "csv%d" % threads)
                for n in sorted(os.listdir(csv_dir)) if os.path.isdir(csv_dir) else []:
                    with open(os.path.join(csv_dir, n)) as f:
                        got["csv/" + n] = f.read()
                outs[threads] = got
            if not problems:
                diff = sorted(k for k in set(outs[1]) | set(outs[4]) if outs[1].get(k) != outs[4].get(k))
                if diff:
                    problems.append("--threads 4 differs from --threads 1 in %s" % diff)
                rep = json.loads(outs[1]["json"])
                if rep["inputs"]["records"] != nrec or not rep["stragglers"] or not rep["slow_links"]:
                    problems.append("records %d of %d, stragglers %d, slow links %d (a late rank and a slow link "
                                    "planted)" % (rep["inputs"]["records"], nrec, len(rep["stragglers"]),
                                                  len(rep["slow_links"])))
            if problems:
                wd.failed = True
                return False, "FAIL inputs.threads-same: " + "; ".join(problems)
            return True, "OK inputs.threads-same: %d records in %d files, %d outputs the same on 1 and 4 threads" % (
                nrec, len(files), len(outs[1]))
    return harness.Case("inputs.threads-same", fn, labels=["report", "threads"], timeout=120)


def cases():
    return [threads_same_case(), nranks_mixed_case(), bound_lines_case(), nranks_huge_case(), streams_case(), huge_line_stream_case(), fifo_in_dir_case(),
            deep_tree_case(), planted_links_case(), many_comms_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0], needs_binaries=False))

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile and clumsy inputs to inspector-report and inspector-replay (issue 11): each is either
rejected, naming FILE:LINE and why, or refused as a whole with a clear message and exit 1 -- never
read as data. The report binary sits next to inspector-replay.
  report.negative-exec      a log with a negative exec time among valid records: that line is
                            rejected with FILE:LINE, the valid ones are reported with right totals
  report.negative-size      the same with a negative message size
  report.bad-nranks         n_ranks -3 on one line: rejected, never printed as "-3 ranks"
  report.rank-out-of-comm   rank 2 of n_ranks 2: rejected
  report.trace-file         a replay trace (decompressed fixture) given as a log: exit 1, "no
                            Inspector records", and its lines counted as not records
  report.random-bytes       random bytes given as a log: exit 1, lines rejected, a clear message
  report.empty-dir          a directory with no .log file: exit 1, a message naming the directory
  replay.start-no-type      a start line without "type": exit non-zero, "FILE:LINE: ..." naming it
  replay.undefined-ctx      a start naming a ctx no init line defined: the same
  replay.negative-count     a Coll start with count -1: the same
"""
import gzip
import os
import random
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

COMM = "0x5eed0000000000aa"


def record(sn, rank=0, nranks=2, size=1048576, exec_ns=100000, busbw=10.5):
    """One collective record as the plugin writes it (docs/CONTRACTS.md section 2)."""
    return ('{"header":{"id":"%s","comm_name":"hostile","rank":%d,"n_ranks":%d,"nnodes":1},'
            '"metadata":{"inspector_output_format_version":"v4.0","hostname":"h","pid":1},'
            '"coll_perf":{"coll":"AllReduce","coll_sn":%d,"coll_msg_size_bytes":%d,'
            '"coll_exec_time_us":%d,"coll_timing_source":"kernel_gpu","coll_algobw_gbs":%s,'
            '"coll_busbw_gbs":%s,"coll_exec_time_ns":%d,"coll_start_ts_ns":%d,'
            '"coll_datatype":"ncclFloat32","coll_count":%d,"coll_nchannels":2,'
            '"coll_stale_channels":0,"coll_algo":"RING","coll_proto":"SIMPLE"}}\n'
            % (COMM, rank, nranks, sn, size, exec_ns // 1000, busbw, busbw, exec_ns,
               1800000000000000000 + sn * 1000000 + rank, abs(size) // 4))


def report(a, paths):
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    r = subprocess.run([exe] + list(paths), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60, universal_newlines=True, errors="replace")
    return r.returncode, r.stdout, r.stderr


def bad_line_case(name, bad_line, bad_desc):
    """Four valid records of rank 0 and 1 around one bad line (line 3): the bad line is named
    on stderr as FILE:3 and counted; the report counts 4 records and exits 0."""
    def fn(a):
        with harness.Workdir(a.keep, "hostile") as wd:
            log = os.path.join(wd.path, "h-pid1.log")
            lines = [record(0, 0), record(0, 1), bad_line, record(1, 0), record(1, 1)]
            with open(log, "w") as f:
                f.writelines(lines)
            rc, out, err = report(a, [wd.path])
            problems = []
            if rc != 0:
                problems.append("exit %d, expected 0 (valid records remain)" % rc)
            m = re.search(r"(\d+) records \((\d+) collective", out)
            if not m or m.group(1) != "4":
                problems.append("expected 4 records, report says %s" % (m.group(1) if m else "?"))
            if not re.search(re.escape(log) + r":3: .*rejected", err):
                problems.append("stderr does not name %s:3 as rejected (%s)" % (log, bad_desc))
            if not re.search(r"\b1 lines? rejected", err):
                problems.append("no '1 lines rejected' count on stderr")
            if re.search(r"-3 ranks|18446744073709", out):
                problems.append("the impossible value reached the report's output")
            if not re.search(r"AllReduce\s+1\.0 MiB\s+4\s", out):
                problems.append("expected one AllReduce 1.0 MiB row with 4 records")
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\nstdout:\n%s\nstderr:\n%s" % (
                    name, "; ".join(problems), out, err)
            return True, "OK %s: %s" % (name, err.splitlines()[0] if err else "")
    return harness.Case(name, fn, labels=["report", "hostile"], timeout=60)


def refused_case(name, make, want_err):
    """`make(wd)` returns the report's arguments: the report must exit 1 and say `want_err`."""
    def fn(a):
        with harness.Workdir(a.keep, "hostile") as wd:
            rc, out, err = report(a, make(wd))
            problems = []
            if rc != 1:
                problems.append("exit %d, expected 1" % rc)
            for pat in want_err:
                if not re.search(pat(wd) if callable(pat) else pat, err):
                    problems.append("stderr lacks /%s/" % (pat(wd) if callable(pat) else pat))
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\nstdout:\n%s\nstderr:\n%s" % (
                    name, "; ".join(problems), out, err[-3000:])
            return True, "OK %s: %s" % (name, err.strip().splitlines()[-1])
    return harness.Case(name, fn, labels=["report", "hostile"], timeout=60)


def trace_file(wd):
    p = os.path.join(wd.path, "ar.log")  # named .log, as a clumsy user would
    with gzip.open(harness.fixture("2.28.9/ar"), "rt") as fi, open(p, "w") as fo:
        fo.write(fi.read())
    return [p]


def random_bytes(wd):
    p = os.path.join(wd.path, "noise.log")
    rnd = random.Random(11)
    with open(p, "wb") as f:
        f.write(bytes(rnd.randrange(256) for _ in range(8192)))
    return [p]


def empty_dir(wd):
    d = os.path.join(wd.path, "empty")
    os.makedirs(d)
    return [d]


# --- replay ---------------------------------------------------------------------------------

INIT = '{"t":1,"tid":100,"cb":"init","ver":5,"ctx":1,"comm":"0x77","name":"","nnodes":1,' \
       '"nranks":2,"rank":0,"mask":70}\n'
GROUP = '{"t":2,"tid":100,"cb":"start","ctx":1,"id":3,"type":1,"parent":0,"rank":0}\n'
COLL = ('{"t":3,"tid":100,"cb":"start","ctx":%d,"id":4,%s"parent":0,"rank":0,"seq":0,'
        '"func":"AllReduce","count":%d,"root":0,"dtype":"ncclFloat32","nch":1,"nwarps":16,'
        '"algo":"RING","proto":"SIMPLE","pgroup":3}\n')
TAIL = ['{"t":4,"tid":100,"cb":"stop","id":4}\n', '{"t":5,"tid":100,"cb":"stop","id":3}\n',
        '{"t":6,"tid":100,"cb":"finalize","ctx":1}\n']


def replay_case(name, coll_line, want):
    """A five-line trace whose line 3 is bad: the replay must exit non-zero and print
    `inspector-replay: FILE:3: <want>`."""
    def fn(a):
        with harness.Workdir(a.keep, "hostile") as wd:
            tr = os.path.join(wd.path, "bad.jsonl")
            with open(tr, "w") as f:
                f.writelines([INIT, GROUP, coll_line] + TAIL)
            os.makedirs(wd.dump)
            r = harness.run(harness.replay_cmd(a.replay, a.plugin, [tr]),
                            harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
            pat = r"inspector-replay: %s:3: .*%s" % (re.escape(tr), want)
            problems = []
            if r.timed_out or r.rc in (0, None):
                problems.append("replay exit %s, expected non-zero" % r.rc)
            if not re.search(pat, r.stderr):
                problems.append("stderr lacks /%s/" % pat)
            problems += harness.sanitizer_reports(r.stderr)
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\nstderr:\n%s" % (name, "; ".join(problems),
                                                             r.stderr[-2000:])
            return True, "OK %s: %s" % (name, r.stderr.strip().splitlines()[0])
    return harness.Case(name, fn, labels=["replay-input", "hostile"], timeout=60)


def cases():
    return [
        bad_line_case("report.negative-exec", record(7, exec_ns=-5000), "negative exec time"),
        bad_line_case("report.negative-size", record(7, size=-4096), "negative size"),
        bad_line_case("report.bad-nranks", record(7, nranks=-3), "n_ranks -3"),
        bad_line_case("report.rank-out-of-comm", record(7, rank=2, nranks=2), "rank 2 of 2"),
        refused_case("report.trace-file", trace_file,
                     [r"no Inspector records", r"\d+ lines not Inspector records",
                      lambda wd: re.escape(os.path.join(wd.path, "ar.log")) + r":1: "]),
        refused_case("report.random-bytes", random_bytes,
                     [r"no Inspector records", r"\d+ lines rejected",
                      lambda wd: re.escape(os.path.join(wd.path, "noise.log")) + r":1: "]),
        refused_case("report.empty-dir", empty_dir,
                     [lambda wd: re.escape(os.path.join(wd.path, "empty")) + r": no \.log or \.jsonl files"]),
        replay_case("replay.start-no-type", COLL % (1, "", 1048576), r'no "type"'),
        replay_case("replay.undefined-ctx", COLL % (9, '"type":2,', 1048576), r"ctx 9"),
        replay_case("replay.negative-count", COLL % (1, '"type":2,', -1), r'"count" -1'),
    ]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

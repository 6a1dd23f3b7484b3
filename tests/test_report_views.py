#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report's views of a synthetic job (--trace FILE, --html FILE); the report binary
sits next to inspector-replay. The job: 8 ranks (one process each) on 2 nodes whose GPU clocks
differ by milliseconds, with a point-to-point ring, rank 3 arriving 250 us late to every op.
  views.trace        the Perfetto / Chrome trace is JSON with a complete event (ph X: ts, dur,
                     pid, tid) per record of the logs, read here independently of the report;
                     every process and thread named; per track, time never goes back and ops do
                     not overlap; each process's ops keep their own clock's spacing; on the
                     aligned timeline rank 3 starts ~250 us after the other ranks' median
  views.html         the page alone (no browser): one self-contained file (no URL, one script),
                     valid UTF-8, the sections and an SVG per chart, and a communicator named
                     with markup, quotes and non-ASCII shown as text, never as markup
  views.chromium     the page in headless Chromium: the screenshot is a PNG of the window's
                     size with drawn content (decoded here: share of non-white pixels, and file
                     size against a blank page's), the rendered DOM holds the charts and the
                     page's script ran to its end (body data-ok="1"), no script error logged.
                     Skipped, and passed, when no `chromium` is installed (Debian: apt-get
                     install chromium)

  views.widths       the page fits the window at 1280, 1400 and 1920 px (headless Chromium): the
                     README's screenshot job and `make demo`'s synthetic job (its arguments read
                     from tools/demo.sh), every <details> opened as a reader would: no horizontal
                     scroll (scrollWidth <= clientWidth) and every table cell and chart frame
                     inside the window and inside any box that clips it. One browser run: each
                     (page, width) an iframe of that width, whose script writes its measures into
                     the outer page's DOM (--dump-dom). Skipped, and passed, without chromium

  views.screenshot-fresh  the README's screenshot (docs/report-screenshot.png) was made after the
                     last change to the page's code (tools/report/html_*, out_html.c): no
                     commit since the screenshot's touches them (`make screenshot` remakes it).
                     Passed, saying so, outside a git checkout

The README's screenshot is made by the same code (`make screenshot`):
  python3 tests/test_report_views.py --make-screenshot docs/report-screenshot.png \\
      [--replay build/bin/inspector-replay --plugin build/lib/libnccl-profiler-inspector.so]
(64 ranks on 8 nodes with skewed GPU clocks, a late rank, P2P between nodes over one slow
link, bandwidth halving 60% of the way through; optipng when installed).
"""
import collections
import html as htmlmod
import json
import os
import re
import shlex
import shutil
import statistics
import struct
import subprocess
import sys
import time
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

# two nodes whose GPU clocks differ by milliseconds: the trace must align them
SYN = ["--ranks", "8", "--nodes", "2", "--procs", "--iters", "4", "--sizes", "64K:4M", "--p2p",
       "--clock-offset-ms", "5", "--seed", "5", "--late-rank", "3", "--late-us", "250"]
LATE_RANK, LATE_US = 3, 250.0
# markup, quotes, an ampersand, non-ASCII (e acute, a snowman)
HOSTILE = "<script>alert(1)</script>\"q\" 'a' & caf\u00e9 \u2603"
HOSTILE_HTML = ("&lt;script&gt;alert(1)&lt;/script&gt;&quot;q&quot; &#39;a&#39; &amp; "
                "caf\u00e9 \u2603")


def report_exe(a):
    return os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")


def make_job(a, wd, syn=SYN, extra=()):
    """Runs the synthetic job into wd.dump; returns a list of problems."""
    os.makedirs(wd.dump)
    cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=list(syn) + list(extra))
    r = harness.run(cmd, harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
    if r.rc != 0:
        return ["replay failed: rc %s\n%s" % (r.rc, r.stderr[-2000:])]
    return []


def run_report(a, wd, *args):
    """inspector-report ARGS DUMP; returns (rc, output)."""
    r = subprocess.run([report_exe(a)] + list(args) + [wd.dump], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, universal_newlines=True)
    return r.returncode, r.stdout + r.stderr


def log_records(dump):
    """Every record of the logs, read here: (comm id, rank, kind, op, sn) -> record fields."""
    recs = {}
    for name in sorted(os.listdir(dump)):
        with open(os.path.join(dump, name), encoding="utf-8") as f:
            for line in f:
                o = json.loads(line)
                for kind in ("coll", "p2p"):
                    perf = o.get(kind + "_perf")
                    if perf is None:
                        continue
                    h = o["header"]
                    key = (int(h["id"], 16), h["rank"], kind, perf[kind], perf[kind + "_sn"])
                    assert key not in recs, "a record twice in the logs: %r" % (key,)
                    recs[key] = {"start": perf.get(kind + "_start_ts_ns"),
                                 "exec": perf[kind + "_exec_time_ns"],
                                 "bytes": perf[kind + "_msg_size_bytes"],
                                 "pid": o["metadata"]["pid"], "host": o["metadata"]["hostname"]}
    return recs


# ---------------------------------------------------------------------------- views.trace

def check_trace(path, recs):
    """(problems, facts) of the trace at path against the records of the logs."""
    problems = []
    with open(path, encoding="utf-8") as f:
        try:
            t = json.load(f)
        except ValueError as e:
            return ["the trace is not JSON: %s" % e], {}
    if not isinstance(t, dict) or not isinstance(t.get("traceEvents"), list):
        return ["no traceEvents list at the top"], {}
    if t.get("displayTimeUnit") != "ns":
        problems.append("displayTimeUnit is %r, not 'ns'" % t.get("displayTimeUnit"))
    ev = t["traceEvents"]
    procs, threads, xs = {}, {}, []
    for e in ev:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "X":
            xs.append(e)
    bad = [e for e in xs if not all(isinstance(e.get(k), (int, float)) and e[k] >= 0
                                    for k in ("ts", "dur", "pid", "tid"))
           or not isinstance(e.get("name"), str) or not isinstance(e.get("args"), dict)]
    if bad:
        return problems + ["%d X events lack a number ts/dur/pid/tid, a name or args: %s"
                           % (len(bad), bad[:2])], {}

    # every record once
    seen = collections.Counter()
    for e in xs:
        g = e["args"]
        seen[(int(g["comm"], 16), g["rank"], e.get("cat"), e["name"].split(" ")[0], g["sn"])] += 1
    twice = [k for k, n in seen.items() if n > 1]
    missing = [k for k in recs if k not in seen]
    extra = [k for k in seen if k not in recs]
    if twice or missing or extra:
        problems.append("records: %d in the logs, %d X events; %d twice %s, %d missing %s, "
                        "%d not in the logs %s" % (len(recs), len(xs), len(twice), twice[:3],
                                                   len(missing), missing[:3], len(extra),
                                                   extra[:3]))

    # names: a process per pid "host pid N" of the records' processes, a thread per track
    want_procs = {"%s pid %d" % (r["host"], r["pid"]) for r in recs.values()}
    if set(procs.values()) != want_procs:
        problems.append("process names %s, the logs' processes %s"
                        % (sorted(procs.values())[:4], sorted(want_procs)[:4]))
    unnamed = {(e["pid"], e["tid"]) for e in xs} - set(threads)
    if unnamed:
        problems.append("tracks without a thread_name: %s" % sorted(unnamed)[:4])
    for e in xs:
        name = threads.get((e["pid"], e["tid"]), "")
        if not re.match(r"comm .* rank %d( \(\d+\))?$" % e["args"]["rank"], name):
            problems.append("an op of rank %d on the thread %r" % (e["args"]["rank"], name))
            break

    # per track: in file order, no step back in time and no overlap
    last = {}
    back = 0
    for e in xs:
        k = (e["pid"], e["tid"])
        if k in last and e["ts"] < last[k] - 1e-6:
            back += 1
        last[k] = e["ts"] + e["dur"]
    if back:
        problems.append("%d events start before the end of the previous one on their track" % back)

    # each op's duration is its record's time, and a process keeps its clock's spacing
    by_pid = collections.defaultdict(set)
    for e in xs:
        g = e["args"]
        r = recs.get((int(g["comm"], 16), g["rank"], e.get("cat"), e["name"].split(" ")[0],
                      g["sn"]))
        if not r:
            continue
        if round(e["dur"] * 1000) != r["exec"]:
            problems.append("dur %s us for a record of %d ns" % (e["dur"], r["exec"]))
            break
        by_pid[e["pid"]].add(r["start"] - round(e["ts"] * 1000))
    uneven = {p: sorted(v)[:3] for p, v in by_pid.items() if max(v) - min(v) > 1}
    if uneven:
        problems.append("start - ts is not one constant per process (offsets not per clock): %s"
                        % uneven)

    # the late rank, on the aligned timeline
    starts = collections.defaultdict(dict)
    for e in xs:
        if e.get("cat") == "coll":
            g = e["args"]
            starts[(g["comm"], e["name"], g["sn"])][g["rank"]] = e["ts"]
    lates = []
    for ranks in starts.values():
        if LATE_RANK in ranks and len(ranks) > 2:
            lates.append(ranks[LATE_RANK] - statistics.median(
                v for r, v in ranks.items() if r != LATE_RANK))
    late = statistics.median(lates) if lates else None
    if late is None or abs(late - LATE_US) > 10:
        problems.append("rank %d starts a median %s us after the others' median, want ~%g"
                        % (LATE_RANK, late, LATE_US))
    return problems, {"events": len(xs), "records": len(recs), "tracks": len(last),
                      "late_us": late}


def trace_case():
    def fn(a):
        with harness.Workdir(a.keep, "views") as wd:
            problems = make_job(a, wd)
            out, info = "", {}
            if not problems:
                path = os.path.join(wd.path, "trace.json")
                rc, out = run_report(a, wd, "--trace", path)
                if rc != 0:
                    problems.append("report rc %d" % rc)
                elif not os.path.exists(path):
                    problems.append("no trace written")
                else:
                    p, info = check_trace(path, log_records(wd.dump))
                    problems += p
            if problems:
                wd.failed = True
                return False, "FAIL views.trace: %s\n%s" % ("\n  ".join(problems), out[-3000:])
            return True, ("OK views.trace: %(events)d events for %(records)d records on %(tracks)d "
                          "tracks, rank 3 late by %(late_us).1f us" % info)
    return harness.Case("views.trace", fn, labels=["report"], timeout=120)


# ---------------------------------------------------------------------------- views.html

def check_page(html):
    """Problems of the page alone."""
    problems = []
    for sid in ("input", "comms", "findings", "stragglers", "links", "nodes", "changes", "time"):
        if 'id="%s"' % sid not in html:
            problems.append("no section id=%r" % sid)
    if html.count("<svg") < 4 or html.count("<svg") != html.count("</svg>"):
        problems.append("%d <svg> and %d </svg>: want 4 or more charts, each closed"
                        % (html.count("<svg"), html.count("</svg>")))
    if html.count("<script") != 1:
        problems.append("%d script elements: the page has one" % html.count("<script"))
    if re.search(r"(src|href)\s*=\s*[\"']?(https?:|//)|@import|url\(\s*[\"']?https?:", html):
        problems.append("the page refers to something outside itself")
    return problems


def html_case():
    def fn(a):
        with harness.Workdir(a.keep, "views") as wd:
            problems = make_job(a, wd, extra=["--comm-name", HOSTILE])
            out = ""
            if not problems:
                path = os.path.join(wd.path, "report.html")
                rc, out = run_report(a, wd, "--html", path)
                if rc != 0 or not os.path.exists(path):
                    problems.append("report rc %d, page written: %s" % (rc, os.path.exists(path)))
                else:
                    with open(path, "rb") as f:
                        raw = f.read()
                    try:
                        html = raw.decode("utf-8")
                    except UnicodeDecodeError as e:
                        html = raw.decode("utf-8", "replace")
                        problems.append("the page is not UTF-8: %s" % e)
                    problems += check_page(html)
                    if "<script>alert" in html:
                        problems.append("the communicator's name reached the page as markup")
                    if HOSTILE_HTML not in html:
                        problems.append("the communicator's name is not on the page, escaped: %r"
                                        % HOSTILE_HTML)
                    if "data-tip=\"rank %d" % LATE_RANK not in html:
                        problems.append("no heat-map cell for rank %d" % LATE_RANK)
            if problems:
                wd.failed = True
                return False, "FAIL views.html: %s\n%s" % ("\n  ".join(problems), out[-3000:])
            return True, "OK views.html: %d bytes, %d charts" % (len(raw), html.count("<svg"))
    return harness.Case("views.html", fn, labels=["report"], timeout=120)


# ---------------------------------------------------------------------------- views.chromium

def chromium_exe():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


def chromium(exe, wd, args, timeout=90):
    """Headless Chromium with its profile, caches and temporary files inside wd (nothing left in
    the home directory or /tmp); returns harness.Run."""
    home = os.path.join(wd.path, "chrome")
    for d in ("home", "tmp", "profile"):
        os.makedirs(os.path.join(home, d), exist_ok=True)
    env = dict(os.environ, HOME=os.path.join(home, "home"), TMPDIR=os.path.join(home, "tmp"),
               XDG_CONFIG_HOME=os.path.join(home, "home"), XDG_CACHE_HOME=os.path.join(home, "home"))
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", "--disable-dev-shm-usage",
           "--enable-logging=stderr", "--v=0",
           "--user-data-dir=" + os.path.join(home, "profile")] + list(args)
    return harness.run(cmd, env, wd.cwd, timeout)


def png_info(path):
    """(width, height, share of pixels that are not near-white or None if the PNG's format is
    not the plain 8-bit RGB/RGBA this decoder reads)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat.append(body)
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        return w, h, None
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    ink = 0
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):   # PNG filters (RFC 2083 section 6)
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        for x in range(0, stride, bpp * 2):  # every other pixel is enough
            if min(line[x], line[x + 1], line[x + 2]) < 200:
                ink += 1
    return w, h, ink / (w * h / 2)


def render(a, wd, html, png, size):
    """Screenshot and DOM of the page in headless Chromium: (problems, facts)."""
    exe = chromium_exe()
    url = "file://" + os.path.abspath(html)
    problems, facts = [], {}
    t0 = time.time()
    r = chromium(exe, wd, ["--screenshot=" + png, "--window-size=%d,%d" % size, url])
    facts["render_s"] = time.time() - t0
    if r.timed_out or r.rc != 0 or not os.path.exists(png):
        return ["chromium --screenshot: rc %s, timed out %s, PNG written %s\n%s"
                % (r.rc, r.timed_out, os.path.exists(png), r.stderr[-2000:])], facts
    errors = [l for l in r.stderr.splitlines() if "Uncaught" in l or "CONSOLE" in l]
    if errors:
        problems.append("the page logged script errors: %s" % errors[:3])
    d = chromium(exe, wd, ["--dump-dom", "--window-size=%d,%d" % size, url])
    dom = d.stdout
    if d.rc != 0 or "</html>" not in dom:
        problems.append("chromium --dump-dom: rc %s, %d bytes" % (d.rc, len(dom)))
    if not re.search(r"<body[^>]*\bdata-ok=\"1\"", dom):
        problems.append("the page's script did not run to its end (no data-ok=\"1\" on body)")
    facts["svg"] = dom.count("<svg")
    facts["png_bytes"] = os.path.getsize(png)
    facts["html_bytes"] = os.path.getsize(html)
    return problems, facts


def chromium_case():
    def fn(a):
        if not chromium_exe():
            return True, ("SKIP views.chromium: no chromium installed (Debian/Ubuntu: apt-get "
                          "install chromium), the page was not rendered")
        with harness.Workdir(a.keep, "views") as wd:
            problems = make_job(a, wd, extra=["--comm-name", HOSTILE])
            out, facts = "", {}
            if not problems:
                html = os.path.join(wd.path, "report.html")
                rc, out = run_report(a, wd, "--html", html)
                if rc != 0:
                    problems.append("report rc %d" % rc)
            if not problems:
                with open(html, encoding="utf-8") as f:
                    charts = f.read().count("<svg")
                png = os.path.join(wd.path, "page.png")
                problems, facts = render(a, wd, html, png, (1400, 3000))
                if facts.get("svg", 0) < charts:
                    problems.append("%s svg elements in the rendered DOM, %d in the file"
                                    % (facts.get("svg"), charts))
                if not problems:
                    blank_html = os.path.join(wd.path, "blank.html")
                    with open(blank_html, "w") as f:
                        f.write("<!DOCTYPE html><html><body></body></html>")
                    blank_png = os.path.join(wd.path, "blank.png")
                    chromium(chromium_exe(), wd, ["--screenshot=" + blank_png,
                                                  "--window-size=1400,3000",
                                                  "file://" + blank_html])
                    w, h, ink = png_info(png)
                    facts["ink"] = ink
                    blank = os.path.getsize(blank_png) if os.path.exists(blank_png) else 0
                    if (w, h) != (1400, 3000):
                        problems.append("screenshot is %dx%d, the window 1400x3000" % (w, h))
                    if ink is not None and ink < 0.005:
                        problems.append("screenshot nearly blank: %.2f%% of pixels drawn"
                                        % (100 * ink))
                    if facts["png_bytes"] < max(5 * blank, 40000):
                        problems.append("screenshot of %d bytes, a blank page's is %d"
                                        % (facts["png_bytes"], blank))
            if problems:
                wd.failed = True
                return False, "FAIL views.chromium: %s\n%s" % ("\n  ".join(problems), out[-2000:])
            return True, ("OK views.chromium: rendered in %.1fs, %d svg in the DOM, PNG %d bytes "
                          "(%s of pixels drawn), page %d bytes"
                          % (facts["render_s"], facts["svg"], facts["png_bytes"],
                             "?" if facts.get("ink") is None else "%.0f%%" % (100 * facts["ink"]),
                             facts["html_bytes"]))
    return harness.Case("views.chromium", fn, labels=["report", "browser"], timeout=240)


# ---------------------------------------------------------------------------- views.widths

# The README's screenshot's job (make_screenshot): 64 ranks on 8 nodes with skewed GPU clocks, a
# late rank, P2P between nodes over one slow link, bandwidth halving 60% of the way through.
SCREENSHOT_JOB = ["--ranks", "64", "--nodes", "8", "--procs", "--iters", "24", "--sizes", "64K:64M",
                  "--order", "iters", "--p2p", "--p2p-pattern", "nodes", "--slow-link", "2:3",
                  "--clock-offset-ms", "4", "--late-rank", "42", "--late-us", "180",
                  "--late-jitter-us", "40", "--degrade", "0.6:2", "--comm-name", "world", "--seed", "7"]
WIDTHS = (1280, 1400, 1920)

# Appended to each page copy (after `var TAG=...`): opens every <details>, then measures against
# the frame's layout width every table cell and chart frame (figure) laid out, each against the
# window and against any ancestor that clips or scrolls it (a table in an overflow:auto box would
# not widen the page, yet its columns would be out of view), and writes the result into the outer
# page's <body> (a srcdoc frame shares its parent's origin).
MEASURE = r"""<script>(function(){
document.querySelectorAll('details').forEach(function(d){d.open=true;});
var de=document.documentElement,W=de.clientWidth,out=[],n=0,right=0;
function edge(el){var r=W;for(var p=el.parentElement;p&&p!==document.body;p=p.parentElement)
  if(getComputedStyle(p).overflowX!=='visible')r=Math.min(r,p.getBoundingClientRect().right);return r;}
var els=document.querySelectorAll('th,td,figure');
for(var i=0;i<els.length;i++){var e=els[i],b=e.getBoundingClientRect();if(!b.width&&!b.height)continue;
  n++;right=Math.max(right,b.right);
  if(b.left<-0.5||b.right>edge(e)+0.5)out.push(e.tagName.toLowerCase()+' "'+e.textContent.trim().slice(0,40)+
    '" at '+Math.round(b.left)+'-'+Math.round(b.right)+' px');}
parent.document.body.setAttribute('data-m-'+TAG,JSON.stringify({w:W,scroll:de.scrollWidth,n:n,
  right:Math.round(right),out:out.slice(0,4),nout:out.length}));})();</script>"""


def demo_job():
    """The synthetic job's arguments in tools/demo.sh (its `$out/synthetic` replay), or None."""
    with open(os.path.join(harness.REPO, "tools", "demo.sh"), encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    m = re.search(r"^NCCL_INSPECTOR_DUMP_DIR=\$out/synthetic .*--synthetic (.*)$", text, re.M)
    return shlex.split(m.group(1)) if m else None


def measure_widths(wd, pages):
    """pages: [(name, html path)]. Every page at every width of WIDTHS in one headless Chromium
    run; returns (problems, {"name@width": measures})."""
    frames = []
    for name, path in pages:
        with open(path, encoding="utf-8") as f:
            page = f.read()
        for w in WIDTHS:
            doc = page.replace("</body>", "<script>var TAG='%s-%d';</script>%s</body>" % (name, w, MEASURE))
            frames.append('<iframe style="display:block;border:0;width:%dpx;height:1200px" srcdoc="%s">'
                          "</iframe>" % (w, htmlmod.escape(doc, quote=True)))
    outer = os.path.join(wd.path, "widths.html")
    with open(outer, "w", encoding="utf-8") as f:
        f.write("<!DOCTYPE html><html><body style=\"margin:0\">%s</body></html>" % "".join(frames))
    r = chromium(chromium_exe(), wd, ["--dump-dom", "--window-size=1400,1200", "file://" + outer],
                 timeout=180)
    got = {k: json.loads(htmlmod.unescape(v))
           for k, v in re.findall(r'data-m-([\w.-]+)="([^"]*)"', r.stdout)}
    problems, facts = [], {}
    for name, _ in pages:
        for w in WIDTHS:
            m = got.get("%s-%d" % (name, w))
            key = "%s@%d" % (name, w)
            if m is None:
                problems.append("%s: not measured (chromium rc %s, timed out %s)\n%s"
                                % (key, r.rc, r.timed_out, r.stderr[-1500:]))
                continue
            facts[key] = m
            if m["w"] != w or m["n"] < 20:
                problems.append("%s: laid out %d px wide with %d cells and frames" % (key, m["w"], m["n"]))
            if m["scroll"] > m["w"]:
                problems.append("%s: scrolls sideways (%d px of content in %d)" % (key, m["scroll"], m["w"]))
            if m["out"]:
                problems.append("%s: %d cells or frames out of view, e.g. %s" % (key, m["nout"], m["out"]))
    return problems, facts


def widths_case():
    def fn(a):
        if not chromium_exe():
            return True, ("SKIP views.widths: no chromium installed (Debian/Ubuntu: apt-get "
                          "install chromium), the page was not measured")
        demo = demo_job()
        if not demo:
            return False, "FAIL views.widths: no `$out/synthetic` replay with --synthetic in tools/demo.sh"
        with harness.Workdir(a.keep, "views") as wd:
            problems, pages = [], []
            for name, syn in (("screenshot", SCREENSHOT_JOB), ("demo", demo)):
                wd.dump = os.path.join(wd.path, "dump-" + name)
                problems = make_job(a, wd, syn)
                if problems:
                    break
                html = os.path.join(wd.path, name + ".html")
                rc, out = run_report(a, wd, "--html", html)
                if rc != 0:
                    problems.append("report rc %d on the %s job\n%s" % (rc, name, out[-2000:]))
                    break
                pages.append((name, html))
            facts = {}
            if not problems:
                problems, facts = measure_widths(wd, pages)
            if problems:
                wd.failed = True
                return False, "FAIL views.widths: " + "\n  ".join(problems)
            return True, "OK views.widths: " + "; ".join(
                "%s: %d cells and frames, right edge %d px" % (k, m["n"], m["right"])
                for k, m in sorted(facts.items()))
    return harness.Case("views.widths", fn, labels=["report", "browser"], timeout=240)


# ---------------------------------------------------------------------------- the README's picture

def make_screenshot(argv):
    """--make-screenshot OUT [--replay BIN --plugin SO]: the README's picture of a 64-rank job."""
    ap = harness.common_args("make the README's screenshot")
    ap.add_argument("--make-screenshot", required=True, metavar="PNG")
    ap.add_argument("--size", default="1280,2400")
    a = ap.parse_args(argv)
    if not chromium_exe():
        print("no chromium installed", file=sys.stderr)
        return 1
    with harness.Workdir(a.keep, "views") as wd:
        problems = make_job(a, wd, SCREENSHOT_JOB)
        html = os.path.join(wd.path, "report.html")
        if not problems:
            t0 = time.time()
            rc, out = run_report(a, wd, "--html", html, "--trace", os.path.join(wd.path, "t.json"))
            report_s = time.time() - t0
            if rc != 0:
                problems.append("report rc %d\n%s" % (rc, out))
        if problems:
            wd.failed = True
            print("\n".join(problems), file=sys.stderr)
            return 1
        size = tuple(int(v) for v in a.size.split(","))
        png = os.path.join(wd.path, "shot.png")
        problems, facts = render(a, wd, html, png, size)
        if problems:
            wd.failed = True
            print("\n".join(problems), file=sys.stderr)
            return 1
        if shutil.which("optipng"):
            subprocess.run(["optipng", "-quiet", "-o5", png], check=False)
        shutil.copyfile(png, a.make_screenshot)
        print("%s: %d bytes; report %.2fs, page %d bytes, rendered in %.1fs, %d svg"
              % (a.make_screenshot, os.path.getsize(a.make_screenshot), report_s,
                 facts["html_bytes"], facts["render_s"], facts["svg"]))
    return 0


PAGE_CODE = ["tools/report/out_html.c", "tools/report/html_page.h", "tools/report/html_findings.c",
             "tools/report/html_charts.c", "tools/report/html_charts.h",
             "tools/report/html_style.c", "tools/report/html_svg.c", "tools/report/html_svg.h"]
SCREENSHOT = "docs/report-screenshot.png"


def screenshot_fresh_case():
    """No commit after the screenshot's last one changed the page's code."""
    def fn(a):
        root = harness.REPO
        def git(*args):
            return subprocess.run(["git", "-C", root] + list(args), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, universal_newlines=True)
        shot = git("log", "-1", "--format=%H", "--", SCREENSHOT)
        if shot.returncode != 0 or not shot.stdout.strip():
            return True, "OK views.screenshot-fresh: skipped (not a git checkout with the screenshot's history)"
        later = git("log", "--format=%h %s", shot.stdout.strip() + "..HEAD", "--", *PAGE_CODE)
        dirty = git("status", "--porcelain", "--", *PAGE_CODE).stdout.strip()
        if later.stdout.strip() or dirty:
            return False, ("FAIL views.screenshot-fresh: the page's code changed after %s was made; run "
                           "`make screenshot` and commit it. Changes: %s" % (
                               SCREENSHOT, (later.stdout.strip() or dirty).splitlines()[:5]))
        return True, "OK views.screenshot-fresh: %s made after the page's last change" % SCREENSHOT
    return harness.Case("views.screenshot-fresh", fn, labels=["report"], timeout=60)


def cases():
    return [trace_case(), html_case(), chromium_case(), widths_case(), screenshot_fresh_case()]


if __name__ == "__main__":
    if any(x.startswith("--make-screenshot") for x in sys.argv[1:]):
        sys.exit(make_screenshot(sys.argv[1:]))
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

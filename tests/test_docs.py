#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The numbers the docs quote, against the commands they show (README.md, docs/*.md, the man
pages). Each case finds its command in a code block by its shape (a doc that loses the command
fails the case, saying so), runs it with the test's build in place of `build/` and a fresh
directory in place of the doc's /tmp one, and compares what the doc quotes with what the command
gives. Only commands that run here in a second or two: the benchmark's figures (docs/BENCHMARKS.md,
`make bench`, a Release build and minutes) are not measured again, but their copies must agree.
  docs:prom-excerpt     reference.md's Prometheus excerpt: its replay, run as shown; every quoted
                        line is a line of the GPU0 file, in the same order, values included (the
                        node label is the host's name: compared as such); the file is named
                        nccl_inspector_metrics_<uuid>.prom as grafana/README.md says
  docs:report-example   the findings reference.md and the README quote: reference.md's synthetic
                        job and report, run as shown; each quoted line is a line of the report's
                        findings, but for the pid
  docs:late-ranks       every synthetic job in the docs' code blocks that plants a late rank
                        (inspector-replay --synthetic ... --late-rank R [--late-us U]), but those
                        report-example runs: the report (--json) names rank R and no other as a
                        straggler, U us late (100 unless given) within 5%
  docs:memory           reference.md's Memory table, BENCHMARKS' headline and accuracy-and-overhead.md against
                        `inspector-bench mem` as BENCHMARKS shows it (--comms 1000; verbose: --comms
                        10): a context created, after its first op, with 1,000 records waiting
                        (verbose: that one only), within 5% of the figure quoted. Skipped in
                        sanitizer builds (their RSS is the sanitizer's)
  docs:bench-quotes     accuracy-and-overhead.md quotes BENCHMARKS' headline figures: each row it
                        copies holds BENCHMARKS' numbers
  docs:quickstart-build the README's `cmake -B build && cmake --build build` comment: a tree
                        configured that way (CMake's file API) builds the programs the comment
                        names, the plugin, as many helper libraries as it says, and no test
  docs:package-version  deploy.md's package file names carry CMakeLists.txt's version
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

REPO = harness.REPO


def read(rel):
    with open(os.path.join(REPO, rel), encoding="utf-8") as f:
        return f.read()


def md_blocks(rel):
    """The fenced code blocks of a Markdown file: [(info string, body, start, end offsets)]."""
    return [(m.group(1), m.group(2), m.start(), m.end())
            for m in re.finditer(r"^```(\w*)\n(.*?)^```\n", read(rel), re.M | re.S)]


def man_blocks(rel):
    """The example blocks (.EX/.EE, .nf/.fi) of a man page, as shell text (roff escapes undone)."""
    out = []
    for m in re.finditer(r"^\.(?:EX|nf)\n(.*?)^\.(?:EE|fi)\n", read(rel), re.M | re.S):
        out.append(("sh", m.group(1).replace("\\e\n", "\\\n").replace("\\-", "-").replace("\\e", "\\"),
                    m.start(), m.end()))
    return out


def doc_files():
    """The user's docs: README, docs/*.md (not docs/internal/, the lab's history), grafana's
    README and the man pages."""
    md = ["README.md", "grafana/README.md"] + sorted(
        "docs/" + n for n in os.listdir(os.path.join(REPO, "docs")) if n.endswith(".md"))
    man = sorted("man/" + n for n in os.listdir(os.path.join(REPO, "man")) if re.search(r"\.\d$", n))
    return md, man


def commands(body):
    """The command lines of a shell block: continuations joined, comments and blank lines out."""
    return [l for l in (x.strip() for x in body.replace("\\\n", " ").splitlines())
            if l and not l.startswith("#")]


def build_dir(a):
    """The build tree of the test's binaries (<build>/bin/inspector-replay)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(a.replay)))


def as_shell(a, line, tmp_from, tmp_to):
    """A doc's command line made to run here: `build/` is the test's build, tmp_from its dir."""
    line = re.sub(r"(?<![\w/.-])build/", build_dir(a) + "/", line)
    return line.replace(tmp_from, tmp_to)


def run_shell(a, wd, lines, tmp_from, tmp_to):
    """Runs a doc's command lines in bash from the source tree (its paths are relative to it) with
    none of the caller's NCCL_INSPECTOR_* variables; returns harness.Run."""
    script = "set -e\n" + "\n".join(as_shell(a, l, tmp_from, tmp_to) for l in lines) + "\n"
    env = {k: v for k, v in os.environ.items() if not harness.SCRUB.match(k)}
    return harness.run(["bash", "-c", script], env, REPO, a.timeout)


def report_exe(a):
    return os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")


def fail(name, wd, problems):
    wd.failed = True
    return False, "FAIL docs:%s: %s" % (name, "\n  ".join(problems))


# ---------------------------------------------------------------------------- prom-excerpt

def prom_case():
    def fn(a):
        blocks = md_blocks("docs/reference.md")
        at = [i for i, b in enumerate(blocks) if b[0] == "sh" and "--no-finalize" in b[1]
              and "PROM_DUMP=1" in b[1]]
        if not at or at[0] + 1 >= len(blocks) or blocks[at[0] + 1][0] != "":
            return False, ("FAIL docs:prom-excerpt: reference.md has no Prometheus replay (a sh block "
                           "with PROM_DUMP=1 and --no-finalize) followed by its excerpt")
        cmd, quoted = blocks[at[0]][1], blocks[at[0] + 1][1].splitlines()
        m = re.search(r"NCCL_INSPECTOR_DUMP_DIR=(\S+)", cmd)
        with harness.Workdir(a.keep, "docs") as wd:
            r = run_shell(a, wd, commands(cmd), m.group(1), wd.dump)
            if r.rc != 0:
                return fail("prom-excerpt", wd, ["the command failed: rc %s\n%s" % (r.rc, r.stderr[-2000:])])
            names = sorted(os.listdir(wd.dump))
            problems = []
            bad = [n for n in names if not re.fullmatch(r"nccl_inspector_metrics_[\w.-]+\.prom", n)]
            if not names or bad:
                problems.append("files %s, want nccl_inspector_metrics_<uuid>.prom (grafana/README.md)" % names)
            gpu0 = []
            for n in names:
                with open(os.path.join(wd.dump, n), encoding="utf-8") as f:
                    text = f.read()
                if 'gpu="GPU0"' in text:
                    gpu0 = text.splitlines()
            if not gpu0:
                problems.append("no file of GPU0 among %s" % names)
            host = re.compile(r'node="[^"]*"')
            got = [host.sub('node="H"', l) for l in gpu0]
            pos = 0
            for q in quoted:
                k = host.sub('node="H"', q)
                try:
                    pos = got.index(k, pos) + 1
                except ValueError:  # the file's line of the same series, if any
                    near = [gpu0[i] for i, g in enumerate(got)
                            if " " in k and g.rsplit(" ", 1)[0] == k.rsplit(" ", 1)[0]]
                    problems.append("quoted %r: %s" % (q[-110:], "the file has %r" % near[0][-110:] if near
                                                       else "not in the file (or out of order)"))
            if problems:
                return fail("prom-excerpt", wd, problems)
            return True, "OK docs:prom-excerpt: %d quoted lines of %d in the GPU0 file, in order" % (
                len(quoted), len(gpu0))
    return harness.Case("prom-excerpt", fn, labels=["docs"], timeout=60)


# ---------------------------------------------------------------------------- report-example

def findings_lines(text):
    """The lines under "findings:" up to the first blank one, the pid masked."""
    m = re.search(r"^findings:\n(.*?)(?:^\s*$|\Z)", text, re.M | re.S)
    return [re.sub(r"\(pid \d+\)", "(pid N)", l) for l in (m.group(1).splitlines() if m else [])]


def report_example_case():
    def fn(a):
        blocks = md_blocks("docs/reference.md")
        at = [i for i, b in enumerate(blocks) if b[0] == "sh" and "--synthetic" in b[1]
              and "inspector-report" in b[1] and i + 1 < len(blocks) and blocks[i + 1][1].startswith("findings:")]
        if not at:
            return False, ("FAIL docs:report-example: reference.md shows no synthetic job and report "
                           "followed by its findings")
        cmd = blocks[at[0]][1]
        quotes = {"docs/reference.md": findings_lines(blocks[at[0] + 1][1])}
        readme = [b[1] for b in md_blocks("README.md") if b[1].startswith("findings:")]
        if len(readme) != 1:
            return False, "FAIL docs:report-example: %d findings blocks in the README, want 1" % len(readme)
        quotes["README.md"] = findings_lines(readme[0])
        m = re.search(r"NCCL_INSPECTOR_DUMP_DIR=(\S+)", cmd)
        with harness.Workdir(a.keep, "docs") as wd:
            r = run_shell(a, wd, commands(cmd), m.group(1), wd.dump)
            if r.rc != 0:
                return fail("report-example", wd, ["the command failed: rc %s\n%s" % (r.rc, r.stderr[-2000:])])
            got = findings_lines(r.stdout)
            problems = []
            for doc, lines in sorted(quotes.items()):
                if not lines:
                    problems.append("%s quotes no finding" % doc)
                for l in lines:
                    if l not in got:
                        problems.append("%s quotes\n    %s\n  the report says\n    %s" % (doc, l, "\n    ".join(got)))
            if problems:
                return fail("report-example", wd, problems)
            return True, "OK docs:report-example: %d findings, as reference.md and the README quote them" % len(got)
    return harness.Case("report-example", fn, labels=["docs"], timeout=120)


# ---------------------------------------------------------------------------- late-ranks

def late_rank_jobs():
    """[(doc, replay arguments)] of every synthetic job with --late-rank in the docs' code blocks."""
    md, man = doc_files()
    jobs = []
    for doc in md + man:
        blocks = md_blocks(doc) if doc.endswith(".md") else man_blocks(doc)
        for k, (info, body, _, end) in enumerate(blocks):
            # a job right above the findings it gives is report-example's (all of them compared)
            if info not in ("sh", "bash", "") or (k + 1 < len(blocks) and blocks[k + 1][2] == end
                                                  and blocks[k + 1][1].startswith("findings:")):
                continue
            for line in commands(body):
                if "--synthetic" not in line or "--late-rank" not in line:
                    continue
                toks = shlex.split(line, comments=True)
                i = next((j for j, t in enumerate(toks) if t.endswith("inspector-replay")), None)
                if i is not None:
                    jobs.append((doc, toks[i + 1:]))
    return jobs


def late_ranks_case():
    def fn(a):
        jobs = late_rank_jobs()
        if not jobs:
            return False, "FAIL docs:late-ranks: no synthetic job with --late-rank in the docs"
        problems, told = [], []
        with harness.Workdir(a.keep, "docs") as wd:
            for k, (doc, args) in enumerate(jobs):
                opt = dict(zip(args, args[1:]))
                rank, late = int(opt["--late-rank"]), float(opt.get("--late-us", 100))
                dump = os.path.join(wd.path, "job%d" % k)
                # the plugin beside the replay, as in the docs (they name none)
                r = harness.run([a.replay] + args, harness.make_env({}, dump_dir=dump, debug=False), wd.cwd,
                                 a.timeout)
                if r.rc != 0:
                    problems.append("%s: inspector-replay %s: rc %s\n%s"
                                    % (doc, " ".join(args), r.rc, r.stderr[-1500:]))
                    continue
                rep = subprocess.run([report_exe(a), "--json", dump], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, universal_newlines=True, timeout=a.timeout)
                try:
                    named = [(s["rank"], s["median_late_us"]) for s in json.loads(rep.stdout)["stragglers"]]
                except (ValueError, KeyError) as e:
                    problems.append("%s: the report's --json: %s (rc %d)" % (doc, e, rep.returncode))
                    continue
                if [x[0] for x in named] != [rank] or abs(named[0][1] - late) > 0.05 * late:
                    problems.append("%s: inspector-replay %s: stragglers (rank, us late) %s, want rank %d "
                                    "%g us late" % (doc, " ".join(args), named, rank, late))
                told.append("%s rank %d %g us" % (doc, rank, late))
        if problems:
            wd.failed = True
            return False, "FAIL docs:late-ranks: " + "\n  ".join(problems)
        return True, "OK docs:late-ranks: %d jobs, each names its late rank: %s" % (len(told), "; ".join(told))
    return harness.Case("late-ranks", fn, labels=["docs"], timeout=120)


# ---------------------------------------------------------------------------- memory

def build_sanitizer(a):
    """The INSPECTOR_SANITIZE of the test's build tree ("" for none)."""
    try:
        with open(os.path.join(build_dir(a), "CMakeCache.txt"), errors="replace") as f:
            m = re.search(r"^INSPECTOR_SANITIZE:\w+=(.*)$", f.read(), re.M)
    except OSError:
        return ""
    return m.group(1).strip() if m else ""


def kib(s):
    """'18.5 KiB' / '3 MiB' -> KiB."""
    v, unit = re.fullmatch(r"([\d.]+) (KiB|MiB)", s).groups()
    return float(v) * (1024 if unit == "MiB" else 1)



MEM_RUNS = 3


def memory_checks(rows, bm, am, got):
    """(what, the doc's KiB, the measured KiB) for each memory figure the docs quote; the
    verbose one only once its run is in got."""
    checks = [("reference.md: created, no op yet", rows["init"][0], got[False]["kib_per_comm_at_init"]),
              ("reference.md: after its first op", rows["first"][0], got[False]["kib_per_comm_after_traffic"]),
              ("reference.md: 1,000 records waiting", rows["waiting"][0],
               got[False]["kib_per_busy_comm_unwritten"]),
              ("BENCHMARKS.md headline: at init", float(bm.group(1)), got[False]["kib_per_comm_at_init"]),
              ("accuracy-and-overhead.md: idle", float(am.group(1)), got[False]["kib_per_comm_at_init"]),
              ("accuracy-and-overhead.md: 1,000 records waiting", float(am.group(2)),
               got[False]["kib_per_busy_comm_unwritten"])]
    if rows["waiting"][1] is not None and True in got:
        checks.append(("reference.md: verbose, 1,000 records waiting", rows["waiting"][1],
                       got[True]["kib_per_busy_comm_unwritten"]))
    return checks


def memory_problems(checks):
    return ["%s: the doc says %.1f KiB, inspector-bench mem %.1f KiB" % (what, doc, meas)
            for what, doc, meas in checks if abs(meas - doc) > 0.05 * doc]


def memory_case():
    def fn(a):
        san = build_sanitizer(a)
        if san:
            return True, "SKIP docs:memory: a sanitizer build (%s: its RSS is the sanitizer's)" % san
        bench = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-bench")
        if not os.path.exists(bench):
            return False, "FAIL docs:memory: no inspector-bench beside the replay (%s)" % bench
        ref = read("docs/reference.md")
        sec = ref[ref.find("\n## Memory\n"):]
        rows = {}
        for key, label in (("init", "created, no op yet"), ("first", "after its first op"),
                           ("waiting", "1,000 records waiting to be written")):
            m = re.search(r"^\| %s \| ([\d.]+ [KM]iB)(?: \(verbose: ([\d.]+ [KM]iB)\))? \|" % re.escape(label),
                          sec, re.M)
            if not m:
                return False, "FAIL docs:memory: reference.md's Memory table has no row %r with its figure" % label
            rows[key] = (kib(m.group(1)), kib(m.group(2)) if m.group(2) else None)
        bm = re.search(r"^### Figures .*?^\| resident memory per communicator[^|]*\| ([\d.]+) KiB at init",
                       read("docs/BENCHMARKS.md"), re.M | re.S)
        if not bm:
            return False, ("FAIL docs:memory: BENCHMARKS.md's headline table has no 'resident memory per "
                           "communicator' row")
        am = re.search(r"^- Memory: ([\d.]+) KiB per idle communicator, about ([\d.]+) KiB with 1,000 records waiting",
                       read("docs/accuracy-and-overhead.md"), re.M)
        if not am:
            return False, ("FAIL docs:memory: accuracy-and-overhead.md has no '- Memory: N KiB per idle "
                           "communicator' line")
        with harness.Workdir(a.keep, "docs") as wd:
            got = {}
            # verbose: 10 communicators, not BENCHMARKS' 100 (whose run writes 300 MiB of records:
            # 25 s); the figure of 1,000 records waiting (3 MiB a communicator) is the same within
            # 0.2% either way, while the process's own pages touched during the few inits (up to
            # 80 KiB) would move the idle figure by 8 KiB each: that one is not compared
            # Each figure is the least of up to MEM_RUNS runs: what else a process's resident memory
            # holds at a reading (a huge page the kernel made of the heap, the dump thread's
            # buffers if a pass came meanwhile) only ever adds to it; one CI run read 162.6 KiB
            # where quiet runs read 152.3, beside 8 spinning processes 152.8.
            for verbose, comms in ((False, 1000), (True, 10)):
                extra = {"NCCL_INSPECTOR_DUMP_VERBOSE": "1"} if verbose else {}
                for run in range(MEM_RUNS):
                    dump = os.path.join(wd.path, "mem%d.%d" % (verbose, run))
                    r = harness.run([bench, "mem", "--plugin", a.plugin, "--comms", str(comms)],
                                    harness.make_env(extra, dump_dir=dump, debug=False), wd.cwd, a.timeout)
                    vals = dict(re.findall(r"^mem\.inspector\.(\w+) ([\d.]+)$", r.stdout, re.M))
                    if r.rc != 0 or "kib_per_comm_at_init" not in vals:
                        return fail("memory", wd, ["inspector-bench mem: rc %s\n%s" % (r.rc, r.stderr[-1500:])])
                    old = got.get(verbose, {})
                    got[verbose] = {k: min(float(v), old.get(k, float(v))) for k, v in vals.items()}
                    if not memory_problems(memory_checks(rows, bm, am, got)) or verbose:
                        break
            checks = memory_checks(rows, bm, am, got)
            problems = memory_problems(checks)
            if problems:
                return fail("memory", wd, problems)
            return True, "OK docs:memory: " + "; ".join("%s %.1f (doc %.1f) KiB" % (w, m, d) for w, d, m in checks)
    return harness.Case("memory", fn, labels=["docs"], timeout=120)


# ---------------------------------------------------------------------------- bench-quotes

def table_rows(text):
    """{first cell: [other cells]} of the Markdown table rows in text."""
    rows = {}
    for l in text.splitlines():
        if l.startswith("| ") and not l.startswith("| ---"):
            cells = [c.strip() for c in l.strip().strip("|").split("|")]
            if any(re.search(r"\d", c) for c in cells[1:]):  # a header row has no figure
                rows.setdefault(cells[0], cells[1:])
    return rows


def bench_quotes_case():
    def fn(a):
        bench = read("docs/BENCHMARKS.md")
        m = re.search(r"^### Figures \(.*?\)\n(.*?)(?=^#)", bench, re.M | re.S)
        if not m:
            return False, "FAIL docs:bench-quotes: BENCHMARKS.md has no '### Figures (...)' headline section"
        head = table_rows(m.group(1))
        acc = read("docs/accuracy-and-overhead.md")
        quoted = {k: v for k, v in table_rows(acc).items() if k in head}
        problems = []
        if not quoted:
            problems.append("accuracy-and-overhead.md quotes no row of BENCHMARKS' headline")
        for k, v in sorted(quoted.items()):
            # the cells it copies: as many as it has, BENCHMARKS' first ones
            if v != head[k][:len(v)]:
                problems.append("%r: accuracy-and-overhead.md %s, BENCHMARKS.md %s" % (k, v, head[k][:len(v)]))
        if problems:
            return False, "FAIL docs:bench-quotes: " + "\n  ".join(problems)
        return True, "OK docs:bench-quotes: %d rows of BENCHMARKS' headline quoted alike: %s" % (
            len(quoted), "; ".join(sorted(quoted)))
    return harness.Case("bench-quotes", fn, labels=["docs"], timeout=30)


# ---------------------------------------------------------------------------- quickstart-build

def quickstart_case():
    def fn(a):
        line = next((l for _, b, _, _ in md_blocks("README.md") for l in b.splitlines()
                     if l.startswith("cmake -B build && cmake --build build")), None)
        if not line or "#" not in line:
            return False, "FAIL docs:quickstart-build: the README's quick start has no commented `cmake -B build` line"
        comment = line.split("#", 1)[1]
        named = set(re.findall(r"\binspector-\w+", comment))
        helpers = re.search(r"(\d+) helper librar", comment)
        cmake = shutil.which("cmake")
        if not cmake:
            return True, "SKIP docs:quickstart-build: no cmake"
        with harness.Workdir(a.keep, "docs") as wd:
            b = os.path.join(wd.path, "build")
            q = os.path.join(b, ".cmake", "api", "v1", "query")
            os.makedirs(q)
            open(os.path.join(q, "codemodel-v2"), "w").close()
            # the README's command as a user runs it: no option (no -DBUILD_TESTING)
            r = harness.run([cmake, "-S", REPO, "-B", b], {k: v for k, v in os.environ.items()
                                                          if not k.startswith("CMAKE")}, wd.cwd, a.timeout)
            if r.rc != 0:
                return fail("quickstart-build", wd, ["cmake -B build: rc %s\n%s" % (r.rc, r.stderr[-1500:])])
            reply = os.path.join(b, ".cmake", "api", "v1", "reply")
            targets = []
            for n in sorted(os.listdir(reply)):
                if n.startswith("target-"):
                    with open(os.path.join(reply, n)) as f:
                        t = json.load(f)
                    targets.append((t["name"], t["type"], [x["path"] for x in t.get("artifacts", [])]))
            exes = {n for n, ty, _ in targets if ty == "EXECUTABLE"}
            libs = {n for n, ty, _ in targets if ty in ("SHARED_LIBRARY", "MODULE_LIBRARY")}
            problems = []
            if exes != named:
                problems.append("the comment names %s, the build makes the programs %s" % (sorted(named), sorted(exes)))
            if "rccl-profiler-inspector" not in libs or "plugin" not in comment:
                problems.append("the plugin: built %s, named in the comment %s"
                                % ("rccl-profiler-inspector" in libs, "plugin" in comment))
            rest = libs - {"rccl-profiler-inspector", "inspector-spank"}  # the SPANK plugin: where Slurm's headers are
            if not helpers or int(helpers.group(1)) != len(rest):
                problems.append("the comment says %s helper libraries, the build makes %d: %s"
                                % (helpers.group(1) if helpers else "no count of", len(rest), sorted(rest)))
            tests = [n for n, _, _ in targets if "unit" in n or "test" in n]
            if tests or "no test" not in comment:
                problems.append("test programs %s; the comment says 'no test': %s" % (tests, "no test" in comment))
            if problems:
                return fail("quickstart-build", wd, problems)
            return True, "OK docs:quickstart-build: programs %s, the plugin, %d helper libraries %s%s" % (
                sorted(exes), len(rest), sorted(rest),
                ", the SPANK plugin" if "inspector-spank" in libs else "")
    return harness.Case("quickstart-build", fn, labels=["docs"], timeout=120)


# ---------------------------------------------------------------------------- package-version

def package_version_case():
    def fn(a):
        v = re.search(r"^project\(inspector VERSION ([\d.]+)", read("CMakeLists.txt"), re.M)
        names = re.findall(r"nccl-inspector[_-]([\d.]+\d)[_-]", read("docs/deploy.md"))
        names += re.findall(r"nccl-inspector:([\d.]+\d)", read("docs/deploy.md"))
        if not v or not names:
            return False, "FAIL docs:package-version: version %s, package names in deploy.md %s" % (
                v and v.group(1), names)
        bad = sorted(set(n for n in names if n != v.group(1)))
        if bad:
            return False, "FAIL docs:package-version: deploy.md names version(s) %s, CMakeLists.txt %s" % (
                bad, v.group(1))
        return True, "OK docs:package-version: %d package names in deploy.md, all %s" % (len(names), v.group(1))
    return harness.Case("package-version", fn, labels=["docs"], timeout=30)


def cases():
    return [prom_case(), report_example_case(), late_ranks_case(), memory_case(), bench_quotes_case(),
            quickstart_case(), package_version_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))

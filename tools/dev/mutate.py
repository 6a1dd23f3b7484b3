#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/dev/mutate.py: mutation testing. Do the tests catch realistic one-line bugs?

Each mutant in tools/dev/mutants.txt (the format is described at its top) is a small change
to one file: an off-by-one, < for <=, a wrong variable, a dropped statement, a relaxed memory
order. The tool plants them one at a time in a copy of the project, rebuilds, runs the ctest
subset that should catch the mutant, and puts the file back:

  killed        a test of the subset failed or timed out: the tests hold that behaviour
  SURVIVED      every test passed: no test holds it (write one, or explain the mutant as
                equivalent in mutants.txt and docs/internal/mutation-testing.md)
  not compiled  the mutant does not build (-Werror): the compiler caught it; not a kill,
                not counted in the score
  error         the snippet is not in the file exactly once, or its test regex names no
                test: the list needs updating (counted as not caught)
  equivalent    marked so in the list (no behaviour differs): not run, not counted

score = killed / (killed + survived + error). Exit 1 below --min-score (percent), 2 on
usage or setup errors.

The copy: by default the committed HEAD (`git archive`, which changes nothing in the
repository), or --rev REV, or --worktree (tracked and untracked, not ignored files of the
working tree: to try new tests before they are committed), or --tree DIR (a tree of yours,
mutated in place and restored). It is configured as CI's plain build (`make test`:
-DINSPECTOR_WERROR=ON), plus a ThreadSanitizer build (`make test-tsan`) when a selected
mutant is marked `tsan` (memory orders: only TSan sees them on x86). Builds and tests run
with --jobs parallel jobs (default 2). The subsets are first run once unmutated (the
baseline); a failing baseline stops the run, since a mutant cannot be judged against it.

  tools/dev/mutate.py                       # every mutant, HEAD, 2 jobs
  tools/dev/mutate.py --only op.span-equal,ring.commit-relaxed --keep
  tools/dev/mutate.py --list                # the mutants and their line in the copy
  nice -n 19 tools/dev/mutate.py --worktree --min-score 95

Python 3 standard library only.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIELDS = ("id", "file", "find", "replace", "tests", "what", "tsan", "equivalent")
REQUIRED = ("id", "file", "find", "replace", "tests", "what")


class Mutant:
    def __init__(self, fields, lineno):
        self.lineno = lineno
        for k in FIELDS:
            setattr(self, k, fields.get(k))
        self.tsan = (self.tsan or "").strip().lower() in ("1", "yes", "true")
        self.line = None  # where the snippet is, in the copy


def parse_mutants(path):
    """Blocks of `key: value` lines separated by blank lines; `#` starts a comment line.
    A line `  | text` continues the previous value on a new line (multi-line snippets)."""
    mutants, cur, start, last = [], {}, 0, None
    problems = []

    def close():
        if not cur:
            return
        missing = [k for k in REQUIRED if k not in cur]
        if missing:
            problems.append("%s:%d: missing %s" % (path, start, ", ".join(missing)))
        else:
            mutants.append(Mutant(cur.copy(), start))

    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.lstrip().startswith("#") and not line.startswith("  |"):
                continue
            if not line.strip():
                close()
                cur, last = {}, None
                continue
            if line.startswith("  |"):
                if last is None:
                    problems.append("%s:%d: a continuation without a value" % (path, n))
                    continue
                cur[last] += "\n" + line[4:] if line.startswith("  | ") else "\n"
                continue
            m = re.match(r"^([a-z]+):(?: (.*))?$", line)
            if not m or m.group(1) not in FIELDS:
                problems.append("%s:%d: not a `key: value` line: %r" % (path, n, line))
                continue
            if not cur:
                start = n
            if m.group(1) in cur:
                problems.append("%s:%d: %s given twice" % (path, n, m.group(1)))
            last = m.group(1)
            cur[last] = (m.group(2) or "").rstrip()
    close()
    seen = set()
    for m in mutants:
        if m.id in seen:
            problems.append("%s:%d: id %s used twice" % (path, m.lineno, m.id))
        seen.add(m.id)
        if m.find == m.replace:
            problems.append("%s:%d: %s changes nothing" % (path, m.lineno, m.id))
    return mutants, problems


def locate(tree, m):
    """(line number, the line) of the mutant's snippet, or an error string."""
    path = os.path.join(tree, m.file)
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        return "cannot read %s: %s" % (m.file, e.strerror)
    n = text.count(m.find)
    if n != 1:
        return "the snippet is %s in %s" % ("not" if n == 0 else "%d times" % n, m.file)
    at = text.index(m.find)
    lineno = text.count("\n", 0, at) + 1
    return lineno, text.splitlines()[lineno - 1].strip()


def descendants(pid):
    """Every process below pid (from /proc's parent links), children first listed last."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def kill_tree(pid):
    """SIGKILL pid's process group and every process below it: the tests' harness starts each
    replay in a session of its own (tests/lib/harness.py run), which the group's kill misses,
    and a mutant that hangs a replay would leave it spinning, slowing every later mutant."""
    below = descendants(pid)
    for target in [pid] + below:
        try:
            os.killpg(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def run(cmd, log, timeout=None, env=None, cwd=None):
    """Run cmd with its output into the file log; (rc, seconds). rc 124: timed out."""
    t0 = time.monotonic()
    with open(log, "ab") as out:
        out.write(("\n$ %s\n" % " ".join(cmd)).encode())
        out.flush()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(p.pid)  # ctest, the tests it started and the replays they started
            p.wait()
            rc = 124
    return rc, time.monotonic() - t0


class Tree:
    """A source copy and its build trees."""

    def __init__(self, args, work):
        self.args, self.work = args, work
        self.src = os.path.abspath(args.tree) if args.tree else os.path.join(work, "src")
        self.builds = {}

    def export(self):
        """Copy the sources into work/src. A kept work directory (--keep, the same --workdir)
        is updated in place: only files whose bytes differ are written (with a new mtime),
        so that its builds stay incremental and rebuild what changed."""
        if self.args.tree:
            return
        if self.args.worktree:
            self.sync(ROOT, subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "-co", "--exclude-standard"],
                                           check=True, stdout=subprocess.PIPE).stdout)
            return
        staging = tempfile.mkdtemp(prefix="archive-", dir=self.work)
        try:
            arch = subprocess.Popen(["git", "-C", ROOT, "archive", self.args.rev], stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", staging], stdin=arch.stdout, check=True)
            if arch.wait() != 0:
                raise SystemExit("git archive %s failed" % self.args.rev)
            names = []
            for d, _, fs in os.walk(staging):
                names += [os.path.relpath(os.path.join(d, f), staging).encode() for f in fs]
            self.sync(staging, b"\0".join(names))
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def sync(self, root, names):
        os.makedirs(self.src, exist_ok=True)
        for f in names.split(b"\0"):
            f = f.decode()
            src, dst = os.path.join(root, f), os.path.join(self.src, f)
            if not f or not os.path.isfile(src):
                continue
            with open(src, "rb") as a:
                data = a.read()
            if os.path.isfile(dst):
                with open(dst, "rb") as b:
                    if b.read() == data:
                        continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(dst, "wb") as b:
                b.write(data)
            shutil.copymode(src, dst)

    def build_dir(self, kind):
        return os.path.join(self.work, "build-" + kind)

    def configure(self, kind):
        b = self.build_dir(kind)
        flags = ["-DINSPECTOR_WERROR=ON", "-DBUILD_TESTING=ON"]
        if kind == "tsan":
            flags.append("-DINSPECTOR_SANITIZE=thread")
        log = os.path.join(self.work, "setup-%s.log" % kind)
        rc, _ = run(["cmake", "-S", self.src, "-B", b] + flags, log)
        if rc == 0:
            rc, secs = run(["cmake", "--build", b, "-j", str(self.args.jobs)], log)
        if rc != 0:
            raise SystemExit("the unmutated %s build failed: see %s" % (kind, log))
        self.builds[kind] = b

    def build(self, kind, log):
        return run(["cmake", "--build", self.builds[kind], "-j", str(self.args.jobs)], log,
                   timeout=self.args.build_timeout)

    def ctest(self, kind, regex, log, timeout, numbers=None):
        """The tests regex names (or those numbered), stopping at the first failure."""
        env = dict(os.environ)
        # what failing tests keep for a look (harness.Workdir) goes with the work directory
        env["TMPDIR"] = os.path.join(self.work, "tmp")
        os.makedirs(env["TMPDIR"], exist_ok=True)
        if kind == "tsan":  # as `make test-tsan`
            env["TSAN_OPTIONS"] = "halt_on_error=1:second_deadlock_stack=1"
        # numbers: for a union of many expressions (CMake's regular expressions allow few groups)
        select = ["-I", "0,0,0," + ",".join(map(str, sorted(numbers)))] if numbers else ["-R", regex]
        cmd = ["ctest", "--test-dir", self.builds[kind]] + select + ["-j", str(self.args.jobs),
               "--output-on-failure", "--stop-on-failure"]
        rc, secs = run(cmd, log, timeout=timeout, env=env)
        return rc, secs

    def count_tests(self, kind, regex):
        """The tests regex names: {number: name}."""
        out = subprocess.run(["ctest", "--test-dir", self.builds[kind], "-N", "-R", regex],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
        found = (re.match(r"^\s*Test\s+#(\d+): (\S+)", l) for l in out.splitlines())
        return {int(m.group(1)): m.group(2) for m in found if m}


def failed_tests(log):
    """The tests ctest named as failed in its latest run in the log."""
    text = open(log, encoding="utf-8", errors="replace").read()
    text = text[text.rfind("\n$ ctest"):]
    names = re.findall(r"^\s*\d+ - (\S+) \(([^)]*)\)", text, re.M)
    if names:
        return ["%s (%s)" % (n, why) for n, why in names]
    return re.findall(r"Test\s+#\d+: (\S+) \.+\*+(\S[^\n]*)", text)


def write_file(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    now = time.time()
    os.utime(path, (now, now))  # newer than any object built from the other version


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--mutants", default=os.path.join(HERE, "mutants.txt"))
    ap.add_argument("--only", help="comma-separated ids (or id prefixes ending in '*')")
    ap.add_argument("--rev", default="HEAD", help="the revision to copy (default HEAD)")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--worktree", action="store_true", help="copy the working tree instead")
    src.add_argument("--tree", help="mutate this source tree in place (restored after each)")
    ap.add_argument("--workdir", help="where the copy and builds go (default: a new temporary "
                    "directory, removed at the end unless --keep)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, builds)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel build and test jobs (default 2)")
    ap.add_argument("--timeout", type=int, default=1200,
                    help="seconds for one mutant's tests; past it, killed (default 1200)")
    ap.add_argument("--build-timeout", type=int, default=1800)
    ap.add_argument("--min-score", type=float, default=0.0, help="exit 1 below this percentage")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the subsets")
    ap.add_argument("--list", action="store_true", help="print the mutants and where they are; run nothing")
    return ap.parse_args()


def select(mutants, only):
    """The mutants --only names (ids, or prefixes ending in '*'), and the names that match none."""
    def named(m, w):
        return m.id == w or (w.endswith("*") and m.id.startswith(w[:-1]))
    want = [w.strip() for w in only.split(",") if w.strip()]
    sel = [m for m in mutants if any(named(m, w) for w in want)]
    unknown = [w for w in want if not any(named(m, w) for m in mutants)]
    return sel, unknown


def print_list(mutants):
    for m in mutants:
        loc = "%s:%d" % (m.file, m.line[0]) if m.line else "%s: %s" % (m.file, m.locate_error)
        print("%-28s %-34s %s%s\n    %s" % (m.id, loc, "[tsan] " if m.tsan else "",
                                           "[equivalent] " if m.equivalent else "", m.what))


def baseline(tree, kinds, runnable, work):
    """The subsets' tests, unmutated, once per build kind: None, or why a mutant cannot be judged."""
    for kind in kinds:
        regexes = sorted({m.tests for m in runnable if (m.tsan and kind == "tsan") or
                          (not m.tsan and kind == "plain")})
        if not regexes:
            continue
        numbers = set()
        for r in regexes:
            numbers |= set(tree.count_tests(kind, r))
        if not numbers:
            continue
        log = os.path.join(work, "baseline-%s.log" % kind)
        print("baseline: the %d tests of the subsets, unmutated (%s) ..." % (len(numbers), kind), flush=True)
        rc, secs = tree.ctest(kind, None, log, None, numbers=numbers)
        if rc != 0:
            return "the baseline fails (%s): %s\nsee %s" % (kind, "; ".join(failed_tests(log)), log)
        print("  passed, %.0f s" % secs, flush=True)
    return None


def run_mutant(tree, args, m, logs, originals, restore_all):
    """Plants m, builds, runs its subset, puts the file back: (status, detail)."""
    kind = "tsan" if m.tsan else "plain"
    path = os.path.join(tree.src, m.file)
    text = open(path, encoding="utf-8").read()
    log = os.path.join(logs, m.id + ".log")
    if os.path.exists(log):
        os.unlink(log)
    originals[path] = text
    write_file(path, text.replace(m.find, m.replace, 1))
    try:
        rc, _ = tree.build(kind, log)
        if rc != 0:
            errs = re.findall(r"error: ([^\n]*)", open(log, errors="replace").read())
            return "not compiled", errs[0] if errs else ("build timed out" if rc == 124 else "build failed")
        rc, _ = tree.ctest(kind, m.tests, log, args.timeout)
        if rc == 0:
            return "SURVIVED", ""
        if rc == 124:
            return "killed", "timed out after %d s" % args.timeout
        return "killed", ", ".join(failed_tests(log)[:3]) or "ctest exit %d" % rc
    finally:
        restore_all()


def summary(results, minutes):
    """The table and the score line; returns the score (percent)."""
    print("\n%-28s %-36s %-12s %6s  %s" % ("mutant", "where", "result", "secs", "detail"))
    for r in results:
        m = r["m"]
        loc = "%s:%s" % (m.file, m.line[0] if m.line else "?")
        print("%-28s %-36s %-12s %6.0f  %s" % (m.id, loc, r["status"], r["secs"], r["detail"][:90]))
    count = {s: sum(1 for r in results if r["status"] == s)
             for s in ("killed", "SURVIVED", "not compiled", "error", "equivalent")}
    judged = count["killed"] + count["SURVIVED"] + count["error"]
    score = 100.0 * count["killed"] / judged if judged else 100.0
    print("\nscore: %.1f%% (%d killed of %d; %d survived, %d errors, %d not compiled, %d equivalent) "
          "in %.0f min" % (score, count["killed"], judged, count["SURVIVED"], count["error"],
                           count["not compiled"], count["equivalent"], minutes))
    for r in results:
        if r["status"] in ("SURVIVED", "error"):
            print("  %s %s (%s): %s" % (r["status"].lower(), r["m"].id, r["m"].file, r["m"].what))
    return score


def main():
    args = parse_args()
    mutants, problems = parse_mutants(args.mutants)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if args.only:
        mutants, unknown = select(mutants, args.only)
        if unknown:
            print("unknown mutant ids: %s" % ", ".join(unknown), file=sys.stderr)
            return 2

    made_work = not args.workdir
    work = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="inspector-mutate.")
    os.makedirs(work, exist_ok=True)
    tree = Tree(args, work)
    originals = {}  # path -> text, while a mutant is planted

    def restore_all(*_):
        for p, t in list(originals.items()):
            write_file(p, t)
            originals.pop(p, None)

    def on_signal(signum, _frame):
        restore_all()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    t_start = time.monotonic()
    try:
        tree.export()
        print("source: %s (%s)" % (tree.src, "tree" if args.tree else "working tree" if args.worktree
                                   else "git archive " + args.rev))
        for m in mutants:
            where = locate(tree.src, m)
            m.line = where if isinstance(where, tuple) else None
            m.locate_error = None if m.line else where
        if args.list:
            print_list(mutants)
            return 0

        kinds = ["plain"] + (["tsan"] if any(m.tsan and not m.equivalent for m in mutants) else [])
        for kind in kinds:
            print("building the unmutated %s tree in %s ..." % (kind, tree.build_dir(kind)), flush=True)
            t0 = time.monotonic()
            tree.configure(kind)
            print("  %.0f s" % (time.monotonic() - t0), flush=True)

        runnable = [m for m in mutants if not m.equivalent and m.line]
        # every regex must name tests; the baseline must pass
        for m in runnable:
            m.test_names = tree.count_tests("tsan" if m.tsan else "plain", m.tests)
        if not args.no_baseline:
            why = baseline(tree, kinds, runnable, work)
            if why:
                print(why)
                return 2

        results = []
        logs = os.path.join(work, "logs")
        os.makedirs(logs, exist_ok=True)
        for i, m in enumerate(mutants, 1):
            t0 = time.monotonic()
            res = {"m": m, "status": None, "detail": "", "secs": 0.0}
            results.append(res)
            if m.equivalent:
                res["status"], res["detail"] = "equivalent", m.equivalent
            elif not m.line:
                res["status"], res["detail"] = "error", m.locate_error
            elif not m.test_names:
                res["status"], res["detail"] = "error", "no test matches %r" % m.tests
            if res["status"]:
                print("[%d/%d] %-28s %s: %s" % (i, len(mutants), m.id, res["status"], res["detail"]), flush=True)
                continue
            print("[%d/%d] %-28s %s:%d (%s, %d tests)" % (i, len(mutants), m.id, m.file, m.line[0],
                                                         "tsan" if m.tsan else "plain", len(m.test_names)),
                  flush=True)
            print("    %s" % m.line[1], flush=True)
            res["status"], res["detail"] = run_mutant(tree, args, m, logs, originals, restore_all)
            res["secs"] = time.monotonic() - t0
            print("    %s%s (%.0f s)" % (res["status"], ": " + res["detail"] if res["detail"] else "",
                                         res["secs"]), flush=True)
        # leave the builds as the source is (a --tree's, a --keep's)
        if args.tree or args.keep:
            for kind in tree.builds:
                tree.build(kind, os.path.join(work, "restore-%s.log" % kind))

        score = summary(results, (time.monotonic() - t_start) / 60)
        if args.keep or not made_work:
            print("logs: %s" % os.path.join(work, "logs"))
        return 1 if score < args.min_score else 0
    finally:
        restore_all()
        if made_work and not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

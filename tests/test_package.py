#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The packages (`make package`: cpack's nccl-inspector .deb and .tar.gz), installed into a
scratch tree and used from there, as a new user would:
  package.deb.control   the .deb's control fields: name nccl-inspector, the project() version of
                        CMakeLists.txt, maintainer, Depends libc6, zlib1g, libjansson4, this
                        machine's architecture; its copyright file says Apache-2.0
  package.deb.layout    every file where the layout promises it: both plugin names in lib/ (the
                        same bytes), the tools in bin/, README.md, LICENSE (the Apache 2.0 text
                        of the source tree) and every docs/*.md and docs/internal/*.md in share/doc/nccl-inspector/,
                        tests/data/README.md as docs/trace-format.md there, every grafana/,
                        prometheus/ and examples/ file in share/nccl-inspector/ (scripts still executable), the
                        man pages of the report, the replay, the plugin and the SPANK plugin (where
                        Slurm's header is) in share/man/ (gzip or
                        not), lib/pkgconfig/inspector.pc; nothing of the build tree
  package.deb.run       `dpkg-deb -x` into a fresh directory (no root, no dpkg database):
                        inspector-report --help works; the plugin needs nothing beyond libc and
                        libm and no binary carries a RUNPATH; the installed inspector-replay drives
                        the installed plugin over a recorded fixture and every record the oracle
                        expects is in the log, with --plugin and with the default (<bin>/../lib);
                        `pkg-config --variable=plugin inspector` names that plugin where dpkg puts
                        it, /usr/lib/libnccl-profiler-inspector.so, and --variable=libdir is
                        /usr/lib (not /usr/lib/pkgconfig/../../lib)
  package.deb.links     every relative link of every installed Markdown file (README.md, docs/,
                        the dashboard's README) names a file or folder of the installed tree
  package.deb.man       each installed man page renders with `groff -man -Tutf8 -ww` without a
                        warning (SKIP without groff) and its NAME names it; each tool's --version
                        prints "<tool> <project() version> (git <rev>)"
  package.tgz.layout    the .tar.gz holds the same files as the .deb (under one top folder, no
                        usr/), and its inspector.pc is relocatable: it names the unpacked plugin
  package.git_rev       the git revision a build records (metadata.git_rev, --version): a copy of
                        the sources unpacked inside another git checkout records "unknown", not
                        that checkout's commit; with a GIT_REV file, its line; as a git work tree
                        of its own, its own `git describe` (three CMake configures, ~10 s)
  package.make_clean    `make clean` removes every build folder the Makefile's targets make
                        (`make -n`), build-pkg included
  package.no_test_hooks the packaged plugin has no test hook (INS_TEST_HOOKS: CMakeLists.txt
                        compiles them in only with BUILD_TESTING): each source file with one
                        (TEST_HOOKS), compiled with the flags of a configure with `make
                        package`'s options (read from `make -n package`), holds none of its
                        hooks' names; compiled with -DINS_TEST_HOOKS too, it holds them all (so
                        that the check can fail). A configure and two compiles per file, a few
                        seconds: the packages the other cases check may be cpacked from a test
                        build tree, which has the hooks, and a fresh Release build of all of it
                        would take minutes

Packages: --pkg-dir DIR (or $INSPECTOR_PKG_DIR) holding cpack's output is used as it is. Else
cpack runs on the build tree of --replay (its CPackConfig.cmake), once for all cases (kept in
its CMakeFiles/inspector-test-packages, made again when a packed file is newer), else on a
fresh Release build of the source tree (a minute or two on 2 cores).
Without cpack or dpkg-deb every case SKIPs with a note.
"""
import argparse
import fcntl
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402
from harness import Case, REPO  # noqa: E402

NAME = "nccl-inspector"
PLUGINS = ("libnccl-profiler-inspector.so", "librccl-profiler-inspector.so")
TOOLS = ("inspector-replay", "inspector-report")
# What the plugin and the tools may link against (the plugin: libc and libm, README).
PLUGIN_NEEDED = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2",
                 "ld-linux-aarch64.so.1"}
SANITIZER_RT = re.compile(r"^lib(asan|ubsan|tsan)\.so")
FIXTURE = "ar"
# The man pages installed (man/; inspector-bench's is not: nor is the benchmark), and the SPANK
# plugin's where it is built (Slurm's header there at build time, as for its .so below).
MAN_PAGES = ("inspector-report.1", "inspector-replay.1", "libnccl-profiler-inspector.7") + \
    (("inspector_spank.8",) if os.path.exists("/usr/include/slurm/spank.h") else ())


def man_name(path):
    """A man page's path without the .gz it may be packaged with."""
    return path[:-3] if path.startswith("share/man/") and path.endswith(".gz") else path


def project_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*inspector\s+VERSION\s+([0-9.]+)", f.read())
    return m.group(1) if m else None


def missing_tools():
    return [t for t in ("cpack", "dpkg-deb") if shutil.which(t) is None]


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, **kw)


class Packages:
    """The .deb and .tar.gz to check, found or made (see the module's docstring)."""

    def __init__(self, a, tmp):
        self.deb = self.tgz = None
        self.how = ""
        pkg_dir = a.pkg_dir or os.environ.get("INSPECTOR_PKG_DIR")
        if pkg_dir and self._found(pkg_dir):
            self.how = "cpack output in %s" % pkg_dir
            return
        bdir = os.path.dirname(os.path.dirname(os.path.abspath(a.replay)))
        if not os.path.exists(os.path.join(bdir, "CPackConfig.cmake")):
            bdir = self._fresh_build(tmp, a.timeout)
            out = os.path.join(tmp, "pkg")
            self._cpack(bdir, out, a.timeout)
            self.how = "cpack on a fresh build"
        else:
            out = self._cpack_cached(bdir, a.timeout)
            self.how = "cpack on %s" % bdir
        self._found(out)

    def _found(self, d):
        debs = sorted(glob.glob(os.path.join(d, NAME + "_*.deb")))
        tgzs = sorted(glob.glob(os.path.join(d, NAME + "-*.tar.gz")))
        self.deb = debs[-1] if debs else None
        self.tgz = tgzs[-1] if tgzs else None
        return self.deb is not None

    @staticmethod
    def _fresh_build(tmp, timeout):
        bdir = os.path.join(tmp, "build")
        for cmd in (["cmake", "-S", REPO, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release",
                     "-DBUILD_TESTING=OFF"],
                    ["cmake", "--build", bdir, "-j", "2"]):
            r = run(cmd, timeout=timeout)
            if r.returncode != 0:
                raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), r.stdout[-3000:]))
        return bdir

    @staticmethod
    def _cpack(bdir, out, timeout):
        r = run(["cpack", "--config", os.path.join(bdir, "CPackConfig.cmake"), "-B", out,
                 "-G", "DEB;TGZ"], timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("cpack failed:\n%s" % r.stdout[-3000:])

    @classmethod
    def _cpack_cached(cls, bdir, timeout):
        """The build tree's packages, cpacked once for all the cases (each took 20 s of a
        2-core machine to cpack its own) in <bdir>/CMakeFiles/inspector-test-packages, and again
        only when a file they pack (bin/, lib/, CPackConfig.cmake) is newer than the .deb.
        cpack first runs the tree's `preinstall` target: one at a time per build tree (cases
        run in parallel under ctest), hence the lock."""
        out = os.path.join(bdir, "CMakeFiles", "inspector-test-packages")
        with open(os.path.join(bdir, "CMakeFiles", "inspector-test-package.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            debs = glob.glob(os.path.join(out, NAME + "_*.deb"))
            made = min((os.path.getmtime(d) for d in debs), default=None)
            inputs = [os.path.join(bdir, "CPackConfig.cmake")]
            for sub in ("bin", "lib"):
                for root, _dirs, files in os.walk(os.path.join(bdir, sub)):
                    inputs += [os.path.join(root, f) for f in files]
            newest = max(os.path.getmtime(f) for f in inputs if os.path.exists(f))
            if made is None or newest >= made or len(debs) != 1:
                shutil.rmtree(out, ignore_errors=True)
                cls._cpack(bdir, out, timeout)
        return out


def with_packages(fn):
    """Run fn(a, pkgs, tmp) -> (problems, note) on the packages, in a temporary folder removed
    afterwards."""
    def case(a):
        miss = missing_tools()
        if miss:
            return True, "SKIP: %s not installed (Debian: apt-get install cmake dpkg)" % (
                " and ".join(miss))
        with harness.Workdir(a.keep, tag="package") as wd:
            pkgs = Packages(a, wd.path)
            problems, note = fn(a, pkgs, wd.path)
            if problems:
                wd.failed = True
                return False, "FAIL (packages: %s):\n  %s" % (pkgs.how, "\n  ".join(problems))
            return True, "OK %s (packages: %s)%s" % (os.path.basename(pkgs.deb), pkgs.how,
                                                      ": " + note if note else "")
    return case


def deb_files(deb):
    """{path without the leading ./: (mode string, size)} of the .deb's data, files only."""
    out = {}
    for line in run(["dpkg-deb", "-c", deb]).stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and not f[0].startswith("d"):
            out[f[5][2:] if f[5].startswith("./") else f[5]] = (f[0], int(f[2]))
    return out


def expected_layout():
    """Paths under the prefix that the layout promises, with whether each must be executable."""
    want = {"lib/" + p: False for p in PLUGINS}
    want.update({"bin/" + t: True for t in TOOLS})
    want["lib/pkgconfig/inspector.pc"] = False
    # the SPANK plugin, where Slurm's header was at build time (CMakeLists.txt: Slurm's plugin
    # directory, Debian's lib/<arch>/slurm-wlm, else lib/slurm)
    if os.path.exists("/usr/include/slurm/spank.h"):
        arch = glob.glob("/usr/lib/*/slurm-wlm")
        want[(os.path.relpath(arch[0], "/usr") if arch else "lib/slurm") + "/inspector_spank.so"] = False
    doc = "share/doc/%s/" % NAME
    for f in ("README.md", "LICENSE", "copyright"):
        want[doc + f] = False
    for f in sorted(glob.glob(os.path.join(REPO, "docs", "*.md")) +
                    glob.glob(os.path.join(REPO, "docs", "*.png"))):
        want[doc + "docs/" + os.path.basename(f)] = False
    for f in sorted(glob.glob(os.path.join(REPO, "docs", "internal", "*.md"))):
        want[doc + "docs/internal/" + os.path.basename(f)] = False  # linked from docs/
    want[doc + "docs/trace-format.md"] = False  # tests/data/README.md, linked from docs/
    for page in MAN_PAGES:  # (a trailing .gz is stripped from the packaged names)
        want["share/man/man%s/%s" % (page[-1], page)] = False
    for sub in ("grafana", "prometheus", "examples"):
        base = os.path.join(REPO, sub)
        for d, _, files in os.walk(base):
            for f in files:
                p = os.path.join(d, f)
                rel = os.path.relpath(p, base)
                want["share/%s/%s/%s" % (NAME, sub, rel)] = os.access(p, os.X_OK)
    return want


# ---------------------------------------------------------------------------

def check_control(a, pkgs, tmp):
    problems = []
    fields = {}
    for line in run(["dpkg-deb", "-f", pkgs.deb]).stdout.splitlines():
        m = re.match(r"^([A-Za-z-]+): (.*)$", line)
        if m:
            fields[m.group(1)] = m.group(2)
    arch = run(["dpkg", "--print-architecture"]).stdout.strip() if shutil.which("dpkg") else None
    want = {"Package": NAME, "Version": project_version(), "Maintainer": "Inspector developers"}
    if arch:
        want["Architecture"] = arch
    for k, v in want.items():
        if fields.get(k) != v:
            problems.append("control field %s is %r, not %r" % (k, fields.get(k), v))
    deps = {d.strip().split(" ")[0] for d in fields.get("Depends", "").split(",") if d.strip()}
    for d in ("libc6", "zlib1g", "libjansson4"):
        if d not in deps:
            problems.append("Depends (%r) lacks %s" % (fields.get("Depends"), d))
    if not fields.get("Description"):
        problems.append("no Description")
    root = os.path.join(tmp, "root")
    run(["dpkg-deb", "-x", pkgs.deb, root])
    with open(os.path.join(root, "usr/share/doc", NAME, "copyright")) as f:
        if not re.search(r"^License: Apache-2\.0$", f.read(), re.M):
            problems.append("the copyright file has no `License: Apache-2.0` line")
    return problems, "%s %s, %s" % (fields.get("Package"), fields.get("Version"),
                                    fields.get("Depends"))


def check_layout(a, pkgs, tmp):
    problems = []
    files = deb_files(pkgs.deb)
    prefixes = {p.split("/", 1)[0] for p in files}
    if prefixes != {"usr"}:
        problems.append("files outside usr/: %s" % sorted(prefixes - {"usr"}))
    got = {man_name(p[len("usr/"):]): v for p, v in files.items() if p.startswith("usr/")}
    for path, exe in expected_layout().items():
        if path not in got:
            problems.append("missing: usr/%s" % path)
        elif exe and "x" not in got[path][0]:
            problems.append("usr/%s is not executable (%s)" % (path, got[path][0]))
    extra = sorted(set(got) - set(expected_layout()))
    if extra:
        problems.append("files the layout does not name: %s" % extra[:10])
    root = os.path.join(tmp, "root")
    run(["dpkg-deb", "-x", pkgs.deb, root])
    libs = [open(os.path.join(root, "usr/lib", p), "rb").read() for p in PLUGINS
            if os.path.exists(os.path.join(root, "usr/lib", p))]
    if len(libs) == 2 and libs[0] != libs[1]:
        problems.append("%s and %s differ" % PLUGINS)
    lic = os.path.join(root, "usr/share/doc", NAME, "LICENSE")
    if os.path.exists(lic):
        text = open(lic).read()
        if text != open(os.path.join(REPO, "LICENSE")).read():
            problems.append("the packaged LICENSE is not the source tree's")
        if not re.search(r"Apache License\s+Version 2\.0, January 2004", text):
            problems.append("LICENSE is not the Apache License 2.0")
    return problems, "%d files" % len(files)


def elf_dynamic(path):
    """(NEEDED libraries, RUNPATH/RPATH values) from readelf -d, or None without readelf."""
    if shutil.which("readelf") is None:
        return None
    out = run(["readelf", "-d", path]).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    paths = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]+)\]", out)
    return needed, paths


def replay_into(replay, plugin, trace, dump, tmp, timeout):
    """Run the installed replay (plugin None: its default) and check the dump with the oracle."""
    env = harness.make_env(dump_dir=dump)
    env.pop("INSPECTOR_PLUGIN", None)
    cmd = [replay] + (["--plugin", plugin] if plugin else []) + [trace]
    r = harness.run(cmd, env, tmp, timeout)
    problems = []
    if r.timed_out or r.rc != 0:
        problems.append("%s exited with %s:\n%s" % (" ".join(cmd), r.rc, r.stderr[-2000:]))
        return problems, 0
    exp = harness.fixture_expectation([trace], harness.RunConfig(env))
    errors, summary = logcheck.check_dump(dump, exp, window=r.window, pids={r.pid})
    problems += ["%s: %s" % (" ".join(cmd[1:-1]) or "(default plugin)", e) for e in errors.items]
    if summary["found"] != summary["expected"] or summary["expected"] == 0:
        problems.append("records: %d expected, %d found" % (summary["expected"], summary["found"]))
    return problems, summary["found"]


def check_run(a, pkgs, tmp):
    problems = []
    root = os.path.join(tmp, "root")
    r = run(["dpkg-deb", "-x", pkgs.deb, root])
    if r.returncode != 0:
        return ["dpkg-deb -x failed: %s" % r.stdout], None
    usr = os.path.join(root, "usr")
    report = os.path.join(usr, "bin/inspector-report")
    replay = os.path.join(usr, "bin/inspector-replay")
    plugin = os.path.join(usr, "lib", PLUGINS[0])
    h = run([report, "--help"])
    if h.returncode != 0 or "usage: inspector-report" not in h.stdout:
        problems.append("inspector-report --help: exit %d, %r" % (h.returncode, h.stdout[:200]))
    for p in [plugin, os.path.join(usr, "lib", PLUGINS[1]), report, replay]:
        dyn = elf_dynamic(p)
        if dyn is None:
            break
        needed, paths = dyn
        if paths:
            problems.append("%s has a RUNPATH/RPATH: %s" % (os.path.relpath(p, root), paths))
        # (a sanitizer build, packaged by `make test-asan`, also needs the sanitizer's runtime)
        extra = {n for n in set(needed) - PLUGIN_NEEDED if not SANITIZER_RT.match(n)}
        if p.endswith(".so") and extra:
            problems.append("%s needs %s (libc and libm only, README)"
                            % (os.path.relpath(p, root), sorted(extra)))
    trace = harness.fixture(FIXTURE)
    found = []
    for tag, plug in (("plugin", plugin), ("default", None)):
        cwd = os.path.join(tmp, "cwd-" + tag)
        os.makedirs(cwd)
        p, n = replay_into(replay, plug, trace, os.path.join(tmp, "dump-" + tag), cwd, a.timeout)
        problems += p
        found.append(n)
    if shutil.which("pkg-config"):
        pcdir = os.path.join(usr, "lib", "pkgconfig")
        env = dict(os.environ, PKG_CONFIG_PATH=pcdir, PKG_CONFIG_LIBDIR=pcdir)
        # the .deb's paths are those dpkg installs to: absolute and clean
        want = {"prefix": "/usr", "libdir": "/usr/lib", "bindir": "/usr/bin",
                "plugin": "/usr/lib/" + PLUGINS[0], "rccl_plugin": "/usr/lib/" + PLUGINS[1]}
        for var, path in want.items():
            v = run(["pkg-config", "--variable=" + var, "inspector"], env=env).stdout.strip()
            if v != path:
                problems.append("pkg-config --variable=%s inspector gives %r, not %s" % (var, v, path))
            elif not os.path.exists(root + path):
                problems.append("pkg-config --variable=%s names %s, not in the package" % (var, path))
        ver = run(["pkg-config", "--modversion", "inspector"], env=env).stdout.strip()
        if ver != project_version():
            problems.append("pkg-config --modversion inspector gives %r" % ver)
    return problems, "%d and %d records with --plugin and with the default plugin" % tuple(found)


def check_tgz(a, pkgs, tmp):
    if not pkgs.tgz:
        return ["no %s-*.tar.gz beside %s" % (NAME, pkgs.deb)], None
    problems = []
    with tarfile.open(pkgs.tgz) as t:
        names = [m.name for m in t.getmembers() if m.isfile()]
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) != 1:
            return ["the .tar.gz has %d top folders, not one: %s" % (len(tops), sorted(tops))], None
        top = tops.pop()
        got = {n.split("/", 1)[1] for n in names}
        t.extractall(os.path.join(tmp, "tgz"))
    want = {p[len("usr/"):] for p in deb_files(pkgs.deb)}
    if got != want:
        problems.append("only in the .tar.gz: %s; only in the .deb: %s"
                        % (sorted(got - want)[:10], sorted(want - got)[:10]))
    if shutil.which("pkg-config"):
        base = os.path.join(tmp, "tgz", top)
        pcdir = os.path.join(base, "lib", "pkgconfig")
        env = dict(os.environ, PKG_CONFIG_PATH=pcdir, PKG_CONFIG_LIBDIR=pcdir)
        v = run(["pkg-config", "--variable=plugin", "inspector"], env=env).stdout.strip()
        if not v or os.path.realpath(v) != os.path.realpath(os.path.join(base, "lib", PLUGINS[0])):
            problems.append("the unpacked .tar.gz's inspector.pc names %r" % v)
        v = run(["pkg-config", "--variable=libdir", "inspector"], env=env).stdout.strip()
        if not v or os.path.realpath(v) != os.path.realpath(os.path.join(base, "lib")):
            problems.append("the unpacked .tar.gz's inspector.pc gives libdir %r" % v)
    return problems, "%d files in %s/" % (len(got), top)


# A Markdown link's target: [text](TARGET) or [text](TARGET "title").
MD_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def check_links(a, pkgs, tmp):
    root = os.path.join(tmp, "root")
    run(["dpkg-deb", "-x", pkgs.deb, root])
    usr = os.path.realpath(os.path.join(root, "usr"))
    problems, nfiles, nlinks = [], 0, 0
    for d, _, files in os.walk(os.path.join(usr, "share")):
        for f in sorted(files):
            if not f.endswith(".md"):
                continue
            nfiles += 1
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            for target in MD_LINK.findall(text):
                if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # a URL, or an anchor of the page itself
                nlinks += 1
                dest = os.path.realpath(os.path.join(d, target.split("#", 1)[0]))
                if not (dest == usr or dest.startswith(usr + os.sep)) or not os.path.exists(dest):
                    problems.append("%s: (%s) names nothing installed" % (os.path.relpath(path, root),
                                                                          target))
    if nlinks == 0:
        problems.append("no relative link found in %d installed .md files" % nfiles)
    return problems, "%d relative links in %d files" % (nlinks, nfiles)


def check_man(a, pkgs, tmp):
    import gzip
    root = os.path.join(tmp, "root")
    run(["dpkg-deb", "-x", pkgs.deb, root])
    problems, notes = [], []
    groff = shutil.which("groff")
    if not groff:
        notes.append("groff not installed: pages not rendered (Debian: apt-get install groff-base)")
    for page in MAN_PAGES:
        base = os.path.join(root, "usr/share/man/man" + page[-1], page)
        src = base + ".gz" if os.path.exists(base + ".gz") else base
        if not os.path.exists(src):
            problems.append("no usr/share/man/man%s/%s(.gz)" % (page[-1], page))
            continue
        opener = gzip.open if src.endswith(".gz") else open
        with opener(src, "rb") as f:
            text = f.read()
        name = page.rsplit(".", 1)[0]
        if not re.search(rb"^\.SH NAME\n" + re.escape(name.encode()) + rb"[ ,]",
                         text.replace(b"\\-", b"-"), re.M):
            problems.append("%s: its NAME section does not name %s" % (page, name))
        if groff:
            r = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z"], input=text,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if r.returncode != 0 or r.stderr.strip():
                problems.append("groff -man -Tutf8 -ww %s: exit %d, %s" % (
                    page, r.returncode, r.stderr.decode(errors="replace").strip()[:500]))
    revs = set()
    for tool in TOOLS:
        r = run([os.path.join(root, "usr/bin", tool), "--version"])
        m = re.match(r"^%s (\S+) \(git ([0-9A-Za-z._+-]+)\)\n$" % tool, r.stdout)
        if r.returncode != 0 or not m or m.group(1) != project_version():
            problems.append("%s --version: exit %d, %r" % (tool, r.returncode, r.stdout[:200]))
        else:
            revs.add(m.group(2))
    if len(revs) > 1:
        problems.append("the tools' --version give different revisions: %s" % sorted(revs))
    return problems, "; ".join(notes + ["%d pages, git %s" % (len(MAN_PAGES), "/".join(revs))])


# ---------------------------------------------------------------------------
# Without packages: what a build records as its git revision, and `make clean`

def git_env(home):
    """An environment for git and cmake that no developer's git configuration reaches."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=home, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return env


def copy_sources(dst):
    """What a configure of the plugin alone reads (no tools, no tests)."""
    os.makedirs(dst)
    for f in ("CMakeLists.txt", "LICENSE", "README.md"):
        shutil.copy(os.path.join(REPO, f), dst)
    for d in ("cmake", "src", "man", os.path.join("tests", "plugins")):
        if os.path.isdir(os.path.join(REPO, d)):
            shutil.copytree(os.path.join(REPO, d), os.path.join(dst, d))


def configured_rev(src, bdir, env, timeout):
    """The INSPECTOR_GIT_REV a configure of src gives the plugin's code, and the problems."""
    r = run(["cmake", "-S", src, "-B", bdir, "-DBUILD_TESTING=OFF", "-DINSPECTOR_BUILD_TOOLS=OFF"],
            env=env, timeout=timeout)
    if r.returncode != 0:
        return None, ["cmake -S %s failed:\n%s" % (src, r.stdout[-2000:])]
    revs = set()
    for d, _, files in os.walk(bdir):
        for f in files:
            if f in ("flags.make", "build.ninja"):
                with open(os.path.join(d, f), errors="replace") as fh:
                    revs.update(re.findall(r'INSPECTOR_GIT_REV=\\?"([^"\\]*)\\?"', fh.read()))
    if len(revs) != 1:
        return None, ["%s: INSPECTOR_GIT_REV defined as %s in the generated build files"
                      % (bdir, sorted(revs) or "nothing")]
    rev = revs.pop()
    shown = re.search(r"^-- Inspector \S+ \(git (\S+)\)$", r.stdout, re.M)
    if not shown or shown.group(1) != rev:
        return rev, ["%s: the configure does not say \"Inspector <version> (git %s)\"" % (src, rev)]
    return rev, []


def check_git_rev(a):
    miss = [t for t in ("cmake", "git") if shutil.which(t) is None]
    if miss:
        return True, "SKIP: %s not installed" % " and ".join(miss)
    with harness.Workdir(a.keep, tag="gitrev") as wd:
        env = git_env(wd.path)

        def git(cwd, *args):
            return run(["git", "-C", cwd, "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]
                       + list(args), env=env).stdout.strip()
        problems, notes = [], []
        # a source tarball unpacked inside another project's checkout
        outer = os.path.join(wd.path, "outer")
        os.makedirs(outer)
        with open(os.path.join(outer, "README"), "w") as f:
            f.write("another project\n")
        git(outer, "init", "-q")
        git(outer, "add", "README")
        git(outer, "commit", "-q", "-m", "another project")
        outer_rev = git(outer, "rev-parse", "--short=9", "HEAD")
        src = os.path.join(outer, "vendor", "nccl-inspector-%s" % project_version())
        copy_sources(src)
        rev, p = configured_rev(src, os.path.join(wd.path, "b-inside"), env, a.timeout)
        problems += p
        if rev is not None and rev != "unknown":
            problems.append("sources inside another checkout (at %s) record git %r, not 'unknown'"
                            % (outer_rev, rev))
        notes.append("inside another checkout: %s" % rev)
        # ... with a GIT_REV file, as a tarball made from a checkout may carry
        with open(os.path.join(src, "GIT_REV"), "w") as f:
            f.write("0.1.0-12-gabcdef123\n")
        rev, p = configured_rev(src, os.path.join(wd.path, "b-file"), env, a.timeout)
        problems += p
        if rev is not None and rev != "0.1.0-12-gabcdef123":
            problems.append("sources with a GIT_REV file record git %r, not its line" % rev)
        notes.append("with GIT_REV: %s" % rev)
        # a git work tree of its own
        own = os.path.join(wd.path, "own")
        copy_sources(own)
        git(own, "init", "-q")
        git(own, "add", "-A")
        git(own, "commit", "-q", "-m", "the sources")
        want = git(own, "describe", "--always", "--dirty", "--abbrev=9")
        rev, p = configured_rev(own, os.path.join(wd.path, "b-own"), env, a.timeout)
        problems += p
        if rev is not None and (rev != want or not want):
            problems.append("a work tree of its own records git %r, not %r" % (rev, want))
        notes.append("its own work tree: %s" % rev)
        if problems:
            wd.failed = True
            return False, "FAIL:\n  " + "\n  ".join(problems)
        return True, "OK " + "; ".join(notes)


def check_make_clean(a):
    if shutil.which("make") is None:
        return True, "SKIP: make not installed"
    build = "inspector-clean-probe"  # a BUILD name no other path contains

    def dry(target):
        r = run(["make", "-n", "-C", REPO, target, "BUILD=" + build], timeout=60)
        return r.returncode, r.stdout

    with open(os.path.join(REPO, "Makefile")) as f:
        phony = re.search(r"^\.PHONY:(.*)$", f.read(), re.M).group(1).split()
    made = {}  # folder -> the target that makes it
    for t in phony:
        if t == "clean":
            continue
        rc, out = dry(t)
        for tok in re.findall(r"(?:-B\s+|\s)((?:%s|build)(?:-[\w]+)?)(?=\s|$)" % build, out):
            made.setdefault(tok, t)
    rc, out = dry("clean")
    removed = set(out.split())
    problems = ["`make %s` makes %s/, which `make clean` leaves (%s)" % (t, d, out.strip())
                for d, t in sorted(made.items()) if d not in removed]
    if "build-pkg" not in made:
        problems.append("no target seems to make build-pkg/: %s" % sorted(made))
    if problems:
        return False, "FAIL:\n  " + "\n  ".join(problems)
    return True, "OK: %s" % ", ".join("%s (%s)" % (d, t) for d, t in sorted(made.items()))


# ---------------------------------------------------------------------------
# Test hooks: in the builds made for the tests only

# Each source file that holds a test hook (#ifdef INS_TEST_HOOKS) and the names its hooks put
# into the object (the environment variables they read, the functions they add). A file that
# mentions INS_TEST_HOOKS and is not here is a failure: a new hook gets its names checked.
TEST_HOOKS = {"src/sink/otlp/otlp.c": ("INSPECTOR_OTLP_MAX_BODY_BYTES",),
              "src/core/ring.c": ("ins_ring_test_spans", "ins_ring_test_place")}


def package_cmake_options():
    """The -D options `make package` configures build-pkg with, or None."""
    r = run(["make", "-n", "-C", REPO, "package"], timeout=60)
    for line in r.stdout.splitlines():
        words = line.split()
        if words[:1] == ["cmake"] and "build-pkg" in words and "--build" not in words:
            return [w for w in words if w.startswith("-D")]
    return None


def compile_object(entry, out, extra, timeout):
    """Run a compile_commands.json entry's command with extra flags after the compiler and its
    object written to out; the object's bytes, or raise with the compiler's output."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    i = args.index("-o")
    args[i + 1] = out
    args[1:1] = extra
    r = run(args, cwd=entry["directory"], timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(args), r.stdout[-3000:]))
    with open(out, "rb") as f:
        return f.read()


def check_no_test_hooks(a):
    miss = [t for t in ("cmake", "make") if shutil.which(t) is None]
    if miss:
        return True, "SKIP: %s not installed" % " and ".join(miss)
    problems = []
    src = os.path.join(REPO, "src")
    hooked = set()
    for d, _, files in os.walk(src):
        for f in files:
            if f.endswith((".c", ".h")):
                path = os.path.join(d, f)
                with open(path, errors="replace") as fh:
                    if "INS_TEST_HOOKS" in fh.read():
                        hooked.add(os.path.relpath(path, REPO))
    for f in sorted(hooked - set(TEST_HOOKS)):
        problems.append("%s has a test hook (INS_TEST_HOOKS) that TEST_HOOKS does not name" % f)
    for f in sorted(set(TEST_HOOKS) - hooked):
        problems.append("%s has no INS_TEST_HOOKS guard (TEST_HOOKS names it)" % f)
    opts = package_cmake_options()
    if opts is None:
        return False, "FAIL: no `cmake ... -B build-pkg` line in `make -n package`"
    if "-DBUILD_TESTING=OFF" not in opts:
        problems.append("`make package` configures with %s, not -DBUILD_TESTING=OFF" % opts)
    with harness.Workdir(a.keep, tag="hooks") as wd:
        bdir = os.path.join(wd.path, "b")
        cmd = ["cmake", "-S", REPO, "-B", bdir] + opts + ["-DINSPECTOR_BUILD_TOOLS=OFF",
                                                          "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"]
        r = run(cmd, timeout=a.timeout)
        if r.returncode != 0:
            wd.failed = True
            return False, "FAIL: %s:\n%s" % (" ".join(cmd), r.stdout[-3000:])
        with open(os.path.join(bdir, "compile_commands.json")) as f:
            entries = {os.path.realpath(e["file"]): e for e in json.load(f)}
        notes = []
        for rel, names in sorted(TEST_HOOKS.items()):
            entry = entries.get(os.path.realpath(os.path.join(REPO, rel)))
            if entry is None:
                problems.append("%s is not compiled by the package's configure" % rel)
                continue
            flags = entry.get("command", " ".join(entry.get("arguments", [])))
            if "INS_TEST_HOOKS" in flags:
                problems.append("the package's configure compiles %s with INS_TEST_HOOKS" % rel)
            shipped = compile_object(entry, os.path.join(wd.path, "package.o"), [], a.timeout)
            hooked_obj = compile_object(entry, os.path.join(wd.path, "hooks.o"),
                                        ["-DINS_TEST_HOOKS"], a.timeout)
            for name in names:
                if name.encode() in shipped:
                    problems.append("%s compiled for the package holds %s" % (rel, name))
                if name.encode() not in hooked_obj:
                    problems.append("%s compiled with -DINS_TEST_HOOKS lacks %s: the check "
                                    "could not see the hook" % (rel, name))
            notes.append("%s: %s" % (rel, ", ".join(names)))
        if problems:
            wd.failed = True
            return False, "FAIL:\n  " + "\n  ".join(problems)
        return True, "OK: absent with %s, present with -DINS_TEST_HOOKS (%s)" % (
            " ".join(opts), "; ".join(notes))


def cases():
    out = []
    for name, fn in (("deb.control", check_control), ("deb.layout", check_layout),
                     ("deb.run", check_run), ("deb.links", check_links), ("deb.man", check_man),
                     ("tgz.layout", check_tgz)):
        out.append(Case("package." + name, with_packages(fn), labels=["package"], timeout=240))
    out.append(Case("package.git_rev", check_git_rev, labels=["package"], timeout=120))
    out.append(Case("package.make_clean", check_make_clean, labels=["package"], timeout=60))
    out.append(Case("package.no_test_hooks", check_no_test_hooks, labels=["package"], timeout=120))
    return out


if __name__ == "__main__":
    # --pkg-dir on top of the common options
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--pkg-dir")
    known, rest = pre.parse_known_args()

    def with_pkg_dir(fn):
        def case(a):
            a.pkg_dir = known.pkg_dir
            return fn(a)
        return case

    cs = [Case(c.name, with_pkg_dir(c.fn), c.labels, c.timeout) for c in cases()]
    sys.exit(harness.main_cases(cs, __doc__.split("\n")[0], argv=rest, needs_binaries=False))

#!/usr/bin/env python3
"""The packages (`make package`: cpack's nccl-inspector .deb and .tar.gz), installed into a
scratch tree and used from there, as a new user would:
  package.deb.control   the .deb's control fields: name nccl-inspector, the project() version of
                        CMakeLists.txt, maintainer, Depends libc6, zlib1g, libjansson4, this
                        machine's architecture; its copyright file says Apache-2.0
  package.deb.layout    every file where the layout promises it: both plugin names in lib/ (the
                        same bytes), the tools in bin/, README.md, LICENSE (the Apache 2.0 text
                        of the source tree) and every docs/*.md and docs/internal/*.md in share/doc/nccl-inspector/,
                        every grafana/ and examples/ file in share/nccl-inspector/ (scripts still
                        executable), lib/pkgconfig/inspector.pc; nothing of the build tree
  package.deb.run       `dpkg-deb -x` into a fresh directory (no root, no dpkg database):
                        inspector-report --help works; the plugin needs nothing beyond libc and
                        libm and no binary carries a RUNPATH; the installed inspector-replay drives
                        the installed plugin over a recorded fixture and every record the oracle
                        expects is in the log, with --plugin and with the default (<bin>/../lib);
                        `pkg-config --variable=plugin inspector` names that plugin
  package.tgz.layout    the .tar.gz holds the same files as the .deb (under one top folder, no
                        usr/), and its inspector.pc is relocatable: it names the unpacked plugin

Packages: --pkg-dir DIR (or $INSPECTOR_PKG_DIR) holding cpack's output is used as it is. Else
cpack runs on the build tree of --replay (its CPackConfig.cmake; output to a temporary folder,
a few seconds), else on a fresh Release build of the source tree (a minute or two on 2 cores).
Without cpack or dpkg-deb every case SKIPs with a note.
"""
import argparse
import fcntl
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
        out = os.path.join(tmp, "pkg")
        bdir = os.path.dirname(os.path.dirname(os.path.abspath(a.replay)))
        if not os.path.exists(os.path.join(bdir, "CPackConfig.cmake")):
            bdir = self._fresh_build(tmp, a.timeout)
        self._cpack(bdir, out, a.timeout)
        self._found(out)
        self.how = "cpack on %s" % bdir

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
        # cpack first runs the build tree's `preinstall` target: one at a time per build tree
        # (cases run in parallel under ctest).
        with open(os.path.join(bdir, "CMakeFiles", "inspector-test-package.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            r = run(["cpack", "--config", os.path.join(bdir, "CPackConfig.cmake"), "-B", out,
                     "-G", "DEB;TGZ"], timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("cpack failed:\n%s" % r.stdout[-3000:])


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
    doc = "share/doc/%s/" % NAME
    for f in ("README.md", "LICENSE", "copyright"):
        want[doc + f] = False
    for f in sorted(glob.glob(os.path.join(REPO, "docs", "*.md")) +
                    glob.glob(os.path.join(REPO, "docs", "*.png"))):
        want[doc + "docs/" + os.path.basename(f)] = False
    for f in sorted(glob.glob(os.path.join(REPO, "docs", "internal", "*.md"))):
        want[doc + "docs/internal/" + os.path.basename(f)] = False  # linked from docs/
    for sub in ("grafana", "examples"):
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
    got = {p[len("usr/"):]: v for p, v in files.items() if p.startswith("usr/")}
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
        v = run(["pkg-config", "--variable=plugin", "inspector"], env=env).stdout.strip()
        if not v or os.path.realpath(v) != os.path.realpath(plugin):
            problems.append("pkg-config --variable=plugin inspector gives %r, not %s" % (v, plugin))
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
    return problems, "%d files in %s/" % (len(got), top)


def cases():
    out = []
    for name, fn in (("deb.control", check_control), ("deb.layout", check_layout),
                     ("deb.run", check_run), ("tgz.layout", check_tgz)):
        out.append(Case("package." + name, with_packages(fn), labels=["package"], timeout=240))
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

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Command-line manners of the tools, and their man pages against their --help:
  version.report, version.replay, version.bench
                      `TOOL --version` exits 0 and prints "TOOL <project() version> (git <rev>)",
                      rev being the git_rev the plugin of the same build writes in its records
  version.demo        `tools/demo.sh --version` prints "demo.sh <version> (git <rev>)", rev read
                      from the tree when it runs (not when the build was configured): in a git
                      checkout, a describe of HEAD (its commit is HEAD's), with "-dirty" or
                      without whatever the tree's state; else the tarball's GIT_REV, or unknown
  help.bench          `inspector-bench --help` (and -h) exits 0 and says what it measures: every
                      mode and option; usage errors exit 2 with a message naming the option
                      (unknown, without its value, a bad value), the mode or the missing --plugin
  help.demo           `tools/demo.sh --help` (and -h) exits 0 with its usage; an unknown option
                      or a second argument exits 2 naming it, and no folder named after it is
                      made (a stub cmake that fails keeps a regression from building anything)
  plugin.nccl-var     inspector-replay without --plugin loads what NCCL_PROFILER_PLUGIN names,
                      as NCCL reads it: a path; a name NAME for libnccl-profiler-NAME.so on the
                      library path; a name no file has fails, naming that file (not ignored for
                      the default)
  man.options         the long options each man page (man/*.1) lists are exactly those of the
                      tool's --help, and the plugin's page (man/*.7) names exactly the variables
                      of docs/reference.md's table: neither can drift from the other; the SPANK
                      plugin's page (man/inspector_spank.8) lists exactly the plugstack.conf
                      arguments tools/spank/spank_conf.c understands, every mode, the sbatch
                      variable and the variables the plugin sets (those of docs/reference.md's
                      table), and the options `srun --help` shows for it (where srun and the
                      plugin are: a slurm.conf in a temp directory, no daemon); every page
                      renders with `groff -man -Tutf8 -ww` without a warning (SKIP without groff)
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
from harness import Case, REPO  # noqa: E402

TOOLS = ("inspector-report", "inspector-replay", "inspector-bench")
DEMO = os.path.join(REPO, "tools", "demo.sh")
MAN = os.path.join(REPO, "man")
LONG_OPT = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


def project_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        return re.search(r"project\(\s*inspector\s+VERSION\s+([0-9.]+)", f.read()).group(1)


def run(cmd, env=None, cwd=None, timeout=60):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, cwd=cwd, timeout=timeout)


def tool(a, name):
    return os.path.join(os.path.dirname(os.path.abspath(a.replay)), name)


def plugin_rev(a, tmp):
    """The git_rev the build's plugin writes in its records (a replay of one fixture)."""
    dump = os.path.join(tmp, "dump")
    r = harness.run([a.replay, "--quiet", "--plugin", a.plugin, harness.fixture("ar")],
                    harness.make_env(dump_dir=dump), tmp, a.timeout)
    if r.rc != 0:
        raise RuntimeError("the replay failed (%s): %s" % (r.rc, r.stderr[-1000:]))
    for f in sorted(os.listdir(dump)):
        with open(os.path.join(dump, f)) as fh:
            for line in fh:
                rev = json.loads(line).get("metadata", {}).get("git_rev")
                if rev:
                    return rev
    raise RuntimeError("no record with metadata.git_rev in %s" % dump)


def stub_cmake_env(tmp):
    """An environment whose cmake runs scripts (cmake -P: the demo's --version) and fails at
    anything else: a demo that took an option for its build folder again would stop at its
    first cmake, having made the folder (which the tests see, and remove), not build there."""
    stub = os.path.join(tmp, "stub")
    os.makedirs(stub)
    with open(os.path.join(stub, "cmake"), "w") as f:
        f.write('#!/bin/sh\ncase " $* " in *" -P "*) exec %s "$@" ;; esac\nexit 1\n'
                % (shutil.which("cmake") or "false"))
    os.chmod(os.path.join(stub, "cmake"), stat.S_IRWXU)
    return dict(os.environ, PATH=stub + os.pathsep + os.environ.get("PATH", ""))


def made_folders(before, problems):
    """Folders named after the demo's arguments that it made in the source tree (removed)."""
    for n, existed in before.items():
        p = os.path.join(REPO, n)
        if os.path.exists(p) and not existed:
            problems.append("demo.sh made the folder %s" % p)
            shutil.rmtree(p, ignore_errors=True)


def git(*args):
    """git's output in REPO, stripped, or None when it fails (no git, not a checkout)."""
    try:
        r = run(["git", "-C", REPO] + list(args))
    except OSError:
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def demo_rev_problem(rev):
    """What is wrong with the revision demo.sh printed, or None. The demo reads it from the
    tree when it runs, so an edit since the build was configured adds "-dirty" (and a commit
    since, a new hash): it is held to the tree as it is, in format, never to the build's
    git_rev nor to a clean tree."""
    top = git("rev-parse", "--show-toplevel")
    if top and os.path.realpath(top) == os.path.realpath(REPO):
        # HEAD as `git describe --always --abbrev=9` names it (a hash, a tag, TAG-N-gHASH),
        # then "-dirty" when tracked files differ from it, which this test does not judge:
        # the tree may be edited while the suite runs
        head = git("describe", "--always", "--abbrev=9")
        if head is None:
            return "git describe failed in %s" % REPO
        return None if rev in (head, head + "-dirty") else \
            "%r, not HEAD's %r (with or without -dirty)" % (rev, head)
    want = "unknown"
    gr = os.path.join(REPO, "GIT_REV")
    if os.path.exists(gr):
        with open(gr) as f:
            want = (f.readline().strip() or "unknown")
    return None if rev == want else "%r, not %r (no checkout: the GIT_REV file, or unknown)" % (rev, want)


def version_case(name):
    def fn(a):
        with harness.Workdir(a.keep, tag="cli") as wd:
            rev = plugin_rev(a, wd.cwd)
            problems = []
            if name == "demo.sh":
                before = {"--version": os.path.exists(os.path.join(REPO, "--version"))}
                r = run([DEMO, "--version"], env=stub_cmake_env(wd.path), cwd=wd.cwd)
                made_folders(before, problems)
                m = re.match(r"^demo\.sh (\S+) \(git (\S+)\)\n$", r.stdout)
                if m and m.group(1) == project_version():
                    why = demo_rev_problem(m.group(2))
                    if why:
                        problems.append(why)
                    else:
                        rev = m.group(2)  # held to the tree above; the rest as the tools'
            else:
                r = run([tool(a, name), "--version"], cwd=wd.cwd)
            want = "%s %s (git %s)\n" % (name, project_version(), rev)
            if r.returncode != 0 or r.stdout != want or problems:
                wd.failed = True
                return False, "FAIL: %s --version: exit %d, %r, not %r; stderr %r%s" % (
                    name, r.returncode, r.stdout, want, r.stderr[-300:],
                    "".join("; " + p for p in problems))
            return True, "OK %s" % want.strip()
    return Case("version." + ("demo" if name == "demo.sh" else name.split("-")[1]), fn,
                labels=["cli"], timeout=60)


def check_help_bench(a):
    bench = tool(a, "inspector-bench")
    if not os.path.exists(bench):
        return True, "SKIP: %s not built" % bench
    problems = []
    for flag in ("--help", "-h"):
        r = run([bench, flag])
        if r.returncode != 0 or not r.stdout.startswith("usage: inspector-bench"):
            problems.append("%s: exit %d, %r" % (flag, r.returncode, r.stdout[:200]))
            continue
        # what it measures, each mode with a description, the options
        for word in ("CPU benchmark", "do-nothing plugin", "options:", "--plugin PATH", "--null PATH"):
            if word not in r.stdout:
                problems.append("%s says nothing of %r" % (flag, word))
        for mode in ("calls", "threads", "scale", "rate", "mem", "churn", "quick"):
            if not re.search(r"^  %s +\S" % mode, r.stdout, re.M):
                problems.append("%s does not describe the mode %s" % (flag, mode))
    errors = [([], "no MODE given"),
              (["frobnicate", "--plugin", "p.so"], "unknown MODE 'frobnicate'"),
              (["calls", "--plugin", "p.so", "--bogus", "1"], "unknown option '--bogus'"),
              (["calls", "--plugin"], "option '--plugin' needs a value"),
              (["calls", "--plugin", "p.so", "--runs", "abc"], "bad value for --runs: 'abc'"),
              (["calls", "--plugin", "p.so", "--channels", "65"], "bad value for --channels: '65'"),
              (["rate", "--plugin", "p.so", "--seconds", "-1"], "bad value for --seconds: '-1'"),
              (["calls", "--plugin", "p.so", "--callgrind", "all"], "bad value for --callgrind: 'all'"),
              (["calls"], "--plugin PATH is required")]
    for args, msg in errors:
        r = run([bench] + args)
        if r.returncode != 2 or msg not in r.stderr or "usage: inspector-bench" not in r.stderr \
                or r.stdout:
            problems.append("inspector-bench %s: exit %d (want 2), stderr %r (want %r)"
                            % (" ".join(args), r.returncode, r.stderr[:200], msg))
    if problems:
        return False, "FAIL:\n  " + "\n  ".join(problems)
    return True, "OK --help, -h and %d usage errors" % len(errors)


def check_help_demo(a):
    problems = []
    with harness.Workdir(a.keep, tag="cli") as wd:
        env = stub_cmake_env(wd.path)
        args = ("--help", "-h", "--bogus", "-x", "one")
        before = {n: os.path.exists(os.path.join(REPO, n)) for n in args}
        for flag in ("--help", "-h"):
            r = run([DEMO, flag], env=env, cwd=wd.cwd)
            if r.returncode != 0 or not r.stdout.startswith("usage: tools/demo.sh") \
                    or "--version" not in r.stdout:
                problems.append("demo.sh %s: exit %d, %r" % (flag, r.returncode,
                                                            (r.stdout + r.stderr)[:200]))
        for cmd, msg in ((["--bogus"], "unknown option '--bogus'"), (["-x"], "unknown option '-x'"),
                         (["one", "two"], "got 2 arguments")):
            r = run([DEMO] + cmd, env=env, cwd=wd.cwd)
            if r.returncode != 2 or msg not in r.stderr:
                problems.append("demo.sh %s: exit %d (want 2), stderr %r (want %r)"
                                % (" ".join(cmd), r.returncode, r.stderr[:200], msg))
        made_folders(before, problems)
        if os.listdir(wd.cwd):
            problems.append("demo.sh left %s in its working directory" % os.listdir(wd.cwd))
        if problems:
            wd.failed = True
    if problems:
        return False, "FAIL:\n  " + "\n  ".join(problems)
    return True, "OK --help, -h, two unknown options and two arguments"


def man_text(path):
    """A man page's text with roff's escapes undone enough to find names: \\- is -."""
    with open(path) as f:
        text = f.read()
    text = re.sub(r"\\f[BIRP]", "", text.replace("\\-", "-").replace("\\e", "\\"))
    return "\n".join(l for l in text.splitlines() if not l.startswith('.\\"'))  # not comments


def reference_variables():
    """The NCCL_INSPECTOR_* names of the variable table of docs/reference.md."""
    names, section = set(), None
    with open(os.path.join(REPO, "docs", "reference.md")) as f:
        for line in f:
            if line.startswith("## "):
                section = line.strip()
            elif section == "## Environment variables" and line.startswith("| `NCCL_INSPECTOR_"):
                names.update(re.findall(r"`(NCCL_INSPECTOR_[A-Z0-9_]+)`", line.split(" | ")[0]))
    return names


def man_section(text, title):
    """The text of a man page's section .SH TITLE, up to the next .SH."""
    m = re.search(r"^\.SH \"?%s\"?\n(.*?)(?=^\.SH |\Z)" % re.escape(title), text, re.M | re.S)
    return m.group(1) if m else ""


def build_sanitizer(built):
    """The INSPECTOR_SANITIZE of the build tree a built file lies in (<build>/lib/FILE): "address",
    "thread", or "" (none, or no CMakeCache.txt there)."""
    cache = os.path.join(os.path.dirname(os.path.dirname(built)), "CMakeCache.txt")
    try:
        with open(cache, errors="replace") as f:
            m = re.search(r"^INSPECTOR_SANITIZE:\w+=(.*)$", f.read(), re.M)
    except OSError:
        return ""
    return m.group(1).strip() if m else ""


def srun_plugin_options(a, problems, notes):
    """The long options `srun --help` lists under "Options provided by plugins" with only the
    SPANK plugin in plugstack.conf, or None where srun or the built plugin is missing."""
    spank = os.path.join(os.path.dirname(os.path.abspath(a.plugin)), "inspector_spank.so")
    srun = shutil.which("srun")
    if not srun or not os.path.exists(spank):
        notes.append("srun --help not compared (%s)" % ("no srun" if not srun else "no SPANK plugin built"))
        return None
    if build_sanitizer(spank):
        # srun would need the sanitizer's runtime loaded first to load such a plugin
        notes.append("srun --help not compared (a %s-sanitizer build)" % build_sanitizer(spank))
        return None
    with harness.Workdir(a.keep, tag="cli-spank") as wd:
        conf = os.path.join(wd.cwd, "slurm.conf")
        with open(conf, "w") as f:
            f.write("ClusterName=cli\nSlurmctldHost=localhost(127.0.0.1)\nPlugStackConfig=%s/plugstack.conf\n"
                    "NodeName=localhost NodeAddr=127.0.0.1 CPUs=1\nPartitionName=p Nodes=ALL Default=YES\n"
                    % wd.cwd)
        with open(os.path.join(wd.cwd, "plugstack.conf"), "w") as f:
            f.write("required %s\n" % spank)
        env = dict(os.environ, SLURM_CONF=conf)
        r = run([srun, "--help"], env=env, cwd=wd.cwd)
        part = r.stdout.split("Options provided by plugins:", 1)
        if r.returncode != 0 or len(part) != 2:
            problems.append("srun --help with the SPANK plugin: exit %d, no 'Options provided by plugins' "
                            "(%s)" % (r.returncode, (r.stdout + r.stderr)[-500:]))
            wd.failed = True
            return None
        section = part[1].split("\n\n", 2)  # a blank line, the plugins' options, a blank line
        return set(LONG_OPT.findall(section[1] if len(section) > 1 else part[1])), part[1]


def check_spank_page(a, problems, notes):
    """man/inspector_spank.8 against the SPANK plugin's sources and srun --help."""
    page = os.path.join(MAN, "inspector_spank.8")
    src = os.path.join(REPO, "tools", "spank")
    if not os.path.exists(page):
        problems.append("no man page %s" % page)
        return
    text = man_text(page)
    with open(os.path.join(src, "spank_conf.c")) as f:
        conf_c = f.read()
    with open(os.path.join(src, "inspector_spank.c")) as f:
        plugin_c = f.read()
    keys = set(re.findall(r'KEY\("([a-z_]+)"\)', conf_c))
    in_page = set(re.findall(r"^\.B[IR]?\s+([a-z_]+)=", man_section(text, "PLUGSTACK.CONF ARGUMENTS"), re.M))
    if not keys or keys != in_page:
        problems.append("inspector_spank.8: plugstack.conf arguments of spank_conf.c not in the page: %s; "
                        "in the page, not understood: %s" % (sorted(keys - in_page), sorted(in_page - keys)))
    modes = set(re.findall(r'!strcmp\(s, "([a-z]+)"\)\) return INS_MODE_', conf_c))
    arginfo = re.search(r'"inspector", "(\[[a-z|]+\])"', plugin_c)
    arginfo = arginfo.group(1) if arginfo else ""
    shown = set(arginfo.strip("[]").split("|")) - {""}
    options = man_section(text, "OPTIONS")
    if not modes or modes != shown:
        problems.append("the modes spank_conf.c parses %s are not those --inspector shows %s"
                        % (sorted(modes), sorted(shown)))
    missing = sorted(m for m in modes if not re.search(r"^\.B %s$" % m, options, re.M))
    if missing:
        problems.append("inspector_spank.8: modes not described in OPTIONS: %s" % missing)
    switch = re.search(r'#define ENV_SWITCH "([A-Z_]+)"', plugin_c)
    if not switch or switch.group(1) not in man_section(text, "ENVIRONMENT"):
        problems.append("inspector_spank.8: the sbatch variable %s is not in ENVIRONMENT"
                        % (switch.group(1) if switch else "(ENV_SWITCH not found)"))
    sets = set(re.findall(r'"(NCCL_[A-Z0-9_]+)"', plugin_c))
    named = set(re.findall(r"NCCL_[A-Z0-9_]*[A-Z0-9]", text))  # not NCCL_INSPECTOR_*
    ref = reference_variables()
    if not sets or sets - named:
        problems.append("inspector_spank.8: variables the plugin sets, not in the page: %s" % sorted(sets - named))
    unknown = sorted(n for n in named if n.startswith("NCCL_INSPECTOR_") and n not in ref)
    if unknown:
        problems.append("inspector_spank.8: variables not in docs/reference.md's table: %s" % unknown)
    notes.append("inspector_spank.8: %d arguments, %d modes, %d variables" % (len(keys), len(modes), len(sets)))
    got = srun_plugin_options(a, problems, notes)
    if got is None:
        return
    in_help, help_text = got
    in_man = set(LONG_OPT.findall(options))
    if not in_help or in_help != in_man:
        problems.append("inspector_spank.8: options srun --help shows for the plugin and not in OPTIONS: %s; "
                        "in OPTIONS and not in srun --help: %s" % (sorted(in_help - in_man), sorted(in_man - in_help)))
    if "--inspector=" + arginfo not in help_text:
        problems.append("srun --help does not show --inspector=%s" % arginfo)
    notes.append("srun --help: %s" % ", ".join("--" + o for o in sorted(in_help)))


def check_man_options(a):
    problems, notes = [], []
    for name in TOOLS:
        page = os.path.join(MAN, name + ".1")
        exe = tool(a, name)
        if not os.path.exists(page):
            problems.append("no man page %s" % page)
            continue
        if not os.path.exists(exe):
            notes.append("%s not built: its page not compared" % name)
            continue
        r = run([exe, "--help"])
        if r.returncode != 0:
            problems.append("%s --help: exit %d" % (name, r.returncode))
            continue
        in_help = set(LONG_OPT.findall(r.stdout))
        in_man = set(LONG_OPT.findall(man_text(page)))
        if in_help != in_man:
            problems.append("%s: options in --help and not in its man page: %s; in the man page "
                            "and not in --help: %s" % (name, sorted(in_help - in_man),
                                                       sorted(in_man - in_help)))
        notes.append("%s: %d options" % (name, len(in_help)))
    page = os.path.join(MAN, "libnccl-profiler-inspector.7")
    ref = reference_variables()
    in_man = set(re.findall(r"NCCL_INSPECTOR_[A-Z0-9_]+", man_text(page))) if os.path.exists(page) \
        else set()
    if not ref or ref != in_man:
        problems.append("libnccl-profiler-inspector.7: variables of docs/reference.md not in the "
                        "page: %s; in the page, not in the reference's table: %s"
                        % (sorted(ref - in_man), sorted(in_man - ref)))
    notes.append("the plugin: %d variables" % len(ref))
    check_spank_page(a, problems, notes)
    groff = shutil.which("groff")
    pages = sorted(os.path.join(MAN, f) for f in os.listdir(MAN) if re.search(r"\.[1-9]$", f)) \
        if os.path.isdir(MAN) else []
    for p in pages if groff else []:
        r = run([groff, "-man", "-Tutf8", "-ww", "-z", p])
        if r.returncode != 0 or r.stderr.strip():
            problems.append("groff -man -Tutf8 -ww %s: exit %d, %s" % (os.path.basename(p),
                                                                       r.returncode, r.stderr.strip()[:500]))
    notes.append("%d pages rendered" % len(pages) if groff else
                 "groff not installed: pages not rendered (Debian: apt-get install groff-base)")
    if problems:
        return False, "FAIL:\n  " + "\n  ".join(problems)
    return True, "OK " + "; ".join(notes)


def check_plugin_var(a):
    """NCCL_PROFILER_PLUGIN, the variable a user sets for a real job, drives a rehearsal too."""
    problems = []
    plugin = os.path.abspath(a.plugin)
    base = dict(os.environ)
    base.pop("INSPECTOR_PLUGIN", None)
    cmd = [a.replay, "--synthetic", "--ranks", "2", "--iters", "1"]
    with harness.Workdir(a.keep, "clivar") as wd:
        for value, libpath, ok, said in [
                (plugin, None, True, None),
                ("inspector", os.path.dirname(plugin), True, None),
                ("nosuch", None, False, "libnccl-profiler-nosuch.so")]:
            env = dict(base, NCCL_PROFILER_PLUGIN=value)
            if libpath:
                env["LD_LIBRARY_PATH"] = libpath
            r = run(cmd, env=env, cwd=wd.cwd)
            if (r.returncode == 0) != ok or (said and said not in r.stderr) or \
                    (ok and '"Inspector"' not in r.stderr):
                problems.append("NCCL_PROFILER_PLUGIN=%s: exit %d, stderr %r" % (value, r.returncode, r.stderr[-300:]))
        if problems:
            wd.failed = True
    if problems:
        return False, "FAIL plugin.nccl-var:\n  " + "\n  ".join(problems)
    return True, "OK plugin.nccl-var: a path, a name on the library path, a name with no file (refused, named)"


def cases():
    out = [version_case(t) for t in TOOLS + ("demo.sh",)]
    out.append(Case("plugin.nccl-var", check_plugin_var, labels=["cli"], timeout=60))
    out.append(Case("help.bench", check_help_bench, labels=["cli"], timeout=60))
    out.append(Case("help.demo", check_help_demo, labels=["cli"], timeout=60))
    out.append(Case("man.options", check_man_options, labels=["cli"], timeout=60))
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.split("\n")[0]))

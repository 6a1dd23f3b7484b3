#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The floor plan of src/ (docs/ARCHITECTURE.md, "Dependencies point down only"), held by the
includes themselves: every `#include "..."` of src/ and of the report's page is checked
against the rule of the folder it is in. Needs nothing built.

  layers.src           each folder includes only what its floor may: nccl/ nothing of ours;
                       core/ core/ and nccl/; io/ io/, core/utf8.h; net/ net/, io/,
                       core/clock.h, core/redact.h; trace/ (trace mode) nccl/, core/, io/;
                       abi/ trace/'s trace.h and tracefmt.h, and anything below the sinks'
                       outputs; the dump layer
                       (sink/*.c but sinks.c) no output; each output (sink/json, prom, otlp)
                       core/, io/, nccl/, sink.h, device.h, vocab.h and its own folder, and
                       only otlp/ net/
  layers.core-acyclic  core's modules (x.c with x.h) need each other in one direction only:
                       the graph of their includes has no cycle
  layers.report-page   the report's page: the drawing kit (html_svg) and its CSS/JS
                       (html_style) include nothing of the report, the charts nothing of the
                       page (out_html)
  layers.tests-layout  every C unit test lives where the code it tests lives (tests/unit/
                       tests.cmake's header): tests/unit/<floor>/test_<module>[_<what>].c for
                       src/<floor>/<module>.c, report/ and spank/ for tools/, plugin/ for the
                       whole plugin through its ABI; none loose in tests/unit; and every module
                       of src/ has its test there, or is named in TESTED_THROUGH with the test
                       that holds it
  layers.registered    every C unit test that runs one case at a time (`--case NAME`) is
                       registered from its own `--list` (ins_unit_cases, tests/unit/
                       tests.cmake) or as one ctest running them all; no case is named by
                       hand there (a case added to a table and not to such a line never ran)
  layers.sizes         no source file of src/ or tools/ (.c .h .py .sh) over 700 lines, no
                       function over 120 (C: from its signature to its closing brace; Python:
                       from its first decorator to its last line): the last oversized pieces
                       were cut up (issue 38), and a new one is cut up before it lands
  layers.selftest      the checker finds a planted sideways include, a planted upward
                       include (trace mode's among them), a planted cycle, a case named by
                       hand and a binary whose cases no ctest runs, a file and functions (C,
                       Python) one line over their limits and none at them (so the cases
                       above can fail)
"""
import ast
import os
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

REPO = harness.REPO
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
OUTPUTS = ("sink/json/", "sink/prom/", "sink/otlp/")
SINK_SHARED = ("sink/sink.h", "sink/device.h", "sink/vocab.h")
TRACE_PUBLIC = ("trace/trace.h", "trace/tracefmt.h")  # trace/internal.h is trace/'s own


def includes(root, rel):
    """The quoted includes of src/<rel>, as paths from src/ (a bare name is in rel's folder)."""
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        text = f.read()
    out = []
    for inc in INCLUDE.findall(text):
        if "/" not in inc:
            inc = os.path.join(os.path.dirname(rel), inc)
        out.append(os.path.normpath(inc))
    return out


def sources(root):
    for d, _, files in os.walk(root):
        for n in sorted(files):
            if n.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(d, n), root)


def allowed(rel, inc):
    """Whether src/<rel> may include src/<inc>: the floors of ARCHITECTURE.md."""
    def under(*prefixes):
        return any(inc.startswith(p) or inc == p for p in prefixes)
    own = os.path.dirname(rel) + "/"
    if inc.startswith(own) and own != "sink/":
        return True  # a folder's own files (the dump layer's rule is below)
    if rel.startswith("nccl/"):
        return False
    if rel.startswith("core/"):
        return under("nccl/")
    if rel.startswith("io/"):
        return inc == "core/utf8.h"
    if rel.startswith("net/"):
        return under("io/") or inc in ("core/clock.h", "core/redact.h")
    if rel.startswith("trace/"):
        return under("nccl/", "core/", "io/")
    if rel.startswith("abi/"):
        return (under("nccl/", "core/", "io/") or inc in TRACE_PUBLIC or
                (inc.startswith("sink/") and not inc.startswith(OUTPUTS)))
    for out in OUTPUTS:
        if rel.startswith(out):
            return (under("nccl/", "core/", "io/") or inc in SINK_SHARED or
                    (out == "sink/otlp/" and under("net/")))
    if rel.startswith("sink/"):
        if rel == "sink/sinks.c":  # the one file that names the outputs
            return under("nccl/", "core/", "io/", "sink/")
        return (under("nccl/", "core/", "io/") or
                (inc.startswith("sink/") and inc.count("/") == 1))
    return False  # a folder the floor plan does not know: say where it goes first


def violations(root):
    bad = []
    for rel in sources(root):
        for inc in includes(root, rel):
            if not os.path.exists(os.path.join(root, inc)):
                continue  # a system header spelled with quotes; the compiler checks the rest
            if not allowed(rel, inc):
                bad.append("%s includes %s" % (rel, inc))
    return bad


def module(path):
    return os.path.splitext(path)[0]


def core_cycle(root):
    """A cycle among core's modules (x.c and x.h are one module), or None."""
    graph = {}
    for rel in sources(root):
        if not rel.startswith("core/"):
            continue
        m = module(rel)
        for inc in includes(root, rel):
            if inc.startswith("core/") and module(inc) != m:
                graph.setdefault(m, set()).add(module(inc))
    state = {}

    def visit(m, path):
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return path + [m, n]
            if n not in state:
                c = visit(n, path + [m])
                if c:
                    return c
        state[m] = 2
        return None
    for m in sorted(graph):
        if m not in state:
            c = visit(m, [])
            if c:
                return c[c.index(c[-1]):]
    return None


PAGE_RULES = {  # file stem -> the report headers it may include
    "html_svg": {"html_svg.h"},
    "html_style": {"html_style.h"},
    "html_charts": {"html_charts.h", "html_svg.h", "out.h", "job.h"},
}


def page_violations(report_dir):
    bad = []
    for stem, ok in PAGE_RULES.items():
        for ext in (".c", ".h"):
            p = os.path.join(report_dir, stem + ext)
            if not os.path.exists(p):
                continue
            with open(p, encoding="utf-8") as f:
                for inc in INCLUDE.findall(f.read()):
                    if "/" in inc:  # the plugin's own low floors (core/utf8.h)
                        if not inc.startswith(("core/", "io/")):
                            bad.append("%s includes %s" % (stem + ext, inc))
                    elif inc not in ok and inc != stem + ".h":
                        bad.append("%s includes %s" % (stem + ext, inc))
    return bad


SRC = os.path.join(REPO, "src")


def case_src(_a):
    bad = violations(SRC)
    if bad:
        return False, "FAIL layers.src: includes against the floor plan:\n  " + "\n  ".join(bad)
    n = sum(len(includes(SRC, r)) for r in sources(SRC))
    return True, "OK layers.src: %d includes of %d files follow the floor plan" % (
        n, len(list(sources(SRC))))


def case_core(_a):
    c = core_cycle(SRC)
    if c:
        return False, "FAIL layers.core-acyclic: core's modules include each other: " + \
            " -> ".join(c)
    return True, "OK layers.core-acyclic: core's modules point one way"


def case_page(_a):
    bad = page_violations(os.path.join(REPO, "tools", "report"))
    if bad:
        return False, "FAIL layers.report-page:\n  " + "\n  ".join(bad)
    return True, "OK layers.report-page: the drawing kit and the charts know nothing of the page"


UNIT = os.path.join(REPO, "tests", "unit")
RUN_BY_CASE = re.compile(r"inspector-unit-(\w+)\s+--case\b")


def unregistered(unit_dir, cmake_text):
    """(binary, why) of every C test whose cases could go unrun: a ctest that names a case by
    hand (`inspector-unit-X --case NAME` in tests.cmake: a case added to the table and not to
    that line never runs), and a test whose main runs one case at a time (`--case`) that is
    registered neither case by case from its own `--list` (ins_unit_cases) nor as one ctest
    running every case (ins_unit_test, or add_test of the bare binary)."""
    text = re.sub(r"#[^\n]*", "", cmake_text)
    out = [(b, "a case named by hand in tests.cmake (use ins_unit_cases)")
           for b in sorted(set(RUN_BY_CASE.findall(text)))]
    by_list = set(re.findall(r"ins_unit_cases\((\w+)", text))
    whole = set(re.findall(r"ins_unit_test\((\w+)", text))
    whole |= set(re.findall(r"add_test\(NAME unit_(\w+) COMMAND inspector-unit-\1\s*\)", text))
    tests = sorted((n, os.path.join(d, n)) for d, _, files in os.walk(unit_dir) for n in files)
    for name, path in tests:
        if not (name.startswith("test_") and name.endswith(".c")):
            continue
        with open(path, encoding="utf-8") as f:
            src = f.read()
        runners = ("fu_main(", "run_cases(", "run_one_case(", "otlp_cases_main(")  # mains that take --case, --list
        if '"--case"' not in src and not any(r in src for r in runners):
            continue  # one process runs every case: nothing to register case by case
        binary = name[len("test_"):-len(".c")]
        if binary in by_list:
            if "list_case(" not in src and not any(r in src for r in runners):
                out.append((binary, "--list not printed through cases.h list_case"))
        elif binary not in whole:
            out.append((binary, "runs one case at a time and no ctest runs its cases"))
    return out


def case_registered(_a):
    with open(os.path.join(UNIT, "tests.cmake"), encoding="utf-8") as f:
        text = f.read()
    bad = unregistered(UNIT, text)
    if bad:
        return False, "FAIL layers.registered: cases no ctest may run:\n  " + "\n  ".join(
            "%s: %s" % b for b in bad)
    n = len(set(re.findall(r"ins_unit_cases\((\w+)", re.sub(r"#[^\n]*", "", text))))
    return True, ("OK layers.registered: the %d one-case-per-ctest binaries are registered from "
                  "their own --list, no case is named by hand" % n)


def case_selftest(_a):
    """Plant each kind of defect in a copy of src/ and see it reported."""
    why = sizes_selftest()
    if why:
        return False, "FAIL layers.selftest: " + why
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "src")
        shutil.copytree(SRC, root)
        if violations(root) or core_cycle(root):
            return False, "FAIL layers.selftest: the copy of src/ is not clean to begin with"
        include_plants = [("sink/prom/prom.c", '#include "sink/json/json.h"\n', "sideways"),
                          ("core/ring.c", '#include "sink/dump.h"\n', "upward"),
                          ("net/url.c", '#include "sink/otlp/otlp.h"\n', "net knows OTLP"),
                          ("sink/dump.c", '#include "sink/otlp/otlp.h"\n', "dump layer names an output"),
                          ("trace/writer.c", '#include "sink/sink.h"\n', "trace mode knows the sinks"),
                          ("abi/adapter.c", '#include "trace/internal.h"\n', "adapter inside trace mode")]
        for rel, line, what in include_plants:
            p = os.path.join(root, rel)
            with open(p) as f:
                keep = f.read()
            with open(p, "w") as f:
                f.write(line + keep)
            found = violations(root)
            with open(p, "w") as f:
                f.write(keep)
            if not any(x.startswith(rel) for x in found):
                return False, "FAIL layers.selftest: a planted %s include in %s was not found" % (
                    what, rel)
        # a cycle: log.h and config.h made to include each other
        with open(os.path.join(root, "core", "log.h")) as f:
            log_h = f.read()
        with open(os.path.join(root, "core", "log.h"), "w") as f:
            f.write('#include "core/config.h"\n' + log_h)
        with open(os.path.join(root, "core", "config.h")) as f:
            cfg_h = f.read()
        with open(os.path.join(root, "core", "config.h"), "w") as f:
            f.write('#include "core/log.h"\n' + cfg_h)
        planted_pair = core_cycle(root)
        if not planted_pair:
            return False, "FAIL layers.selftest: a planted cycle log <-> config was not found"
    # a case named by hand, and a binary whose cases no ctest runs
    with open(os.path.join(UNIT, "tests.cmake"), encoding="utf-8") as f:
        text = f.read()
    if unregistered(UNIT, text):
        return False, "FAIL layers.selftest: tests.cmake is not clean to begin with"
    by_hand = text + "\nadd_test(NAME unit_ring_spans.moves COMMAND inspector-unit-ring_spans --case moves)\n"
    if not any(b == "ring_spans" for b, _ in unregistered(UNIT, by_hand)):
        return False, "FAIL layers.selftest: a case named by hand (ring_spans moves) was not found"
    dropped = text.replace("ins_unit_cases(ring_spans ", "message(ring_spans ")
    if dropped == text:
        return False, "FAIL layers.selftest: ring_spans' registration not found to plant in"
    if not any(b == "ring_spans" for b, _ in unregistered(UNIT, dropped)):
        return False, "FAIL layers.selftest: a binary whose cases no ctest runs (ring_spans) was not found"
    # the layout: a test loose in tests/unit, one naming no module, a module with no test
    with tempfile.TemporaryDirectory() as tmp:
        for sub in ("src", "tools/report", "tools/spank", "tests/unit"):
            shutil.copytree(os.path.join(REPO, sub), os.path.join(tmp, sub),
                            ignore=shutil.ignore_patterns("*.o", "build*"))
        if layout_problems(tmp, TESTED_THROUGH):
            return False, "FAIL layers.selftest: the copy of tests/unit is not clean to begin with"
        plants = [("tests/unit/test_loose.c", "loose"), ("tests/unit/core/test_nothing.c", "names no module")]
        for rel, what in plants:
            with open(os.path.join(tmp, rel), "w") as f:
                f.write("int main(void) { return 0; }\n")
            if not any(what in x for x in layout_problems(tmp, TESTED_THROUGH)):
                return False, "FAIL layers.selftest: a planted test (%s) was not found" % what
            os.remove(os.path.join(tmp, rel))
        with open(os.path.join(tmp, "src", "core", "planted.c"), "w") as f:
            f.write("int planted;\n")
        if not any(x.startswith("src/core/planted.c") for x in layout_problems(tmp, TESTED_THROUGH)):
            return False, "FAIL layers.selftest: a module with no test (src/core/planted.c) was not found"
    return True, ("OK layers.selftest: %d planted includes, a planted cycle (%s), a case named by "
                  "hand, an unregistered binary, a loose test, a test of no module, a module "
                  "with no test, a file and two functions over their limits reported" % (
                      len(include_plants), " -> ".join(planted_pair)))


# tests/unit's folders that are not src/'s: a tool's modules, or the whole plugin
UNIT_TOOLS = {"report": "tools/report", "spank": "tools/spank"}
UNIT_WHOLE = "plugin"
# The modules of src/ with no test file of their own, and where they are held instead: each
# is driven whole through another module's test (or a replay of real NCCL traffic), where a
# test of its own would only repeat that one. A module added to src/ goes here or gets its test.
TESTED_THROUGH = {
    "abi/adapter_v4.c": "tests/test_fixtures.py (the v4 recordings of NCCL 2.27.7 replayed)",
    "abi/adapter_v5.c": "tests/test_fixtures.py (the v5 recordings of NCCL 2.28.9)",
    "abi/adapter_v6.c": "tests/test_fixtures.py (the v6 recordings of NCCL 2.30.7)",
    "abi/lifecycle.c": "tests/unit/plugin/test_plugin_reload.c, abi/test_adapter_misuse.c",
    "core/env.c": "tests/unit/plugin/test_limits.c, tests/test_bad_env.py",
    "core/inflight.c": "tests/unit/sink/test_hang.c",
    "core/names.c": "tests/unit/core/test_core.c",
    "core/op_group.c": "tests/unit/core/test_op_no_group.c, test_core.c (groups, API calls, unreported)",
    "core/op_teardown.c": "tests/unit/core/test_core.c (ops in flight at teardown: recorded, counted)",
    "core/pool.c": "tests/unit/core/test_core.c, test_ring_stress.c",
    "core/seg.c": "tests/unit/core/test_ring_spans.c, test_ring_memory.c",
    "core/wake.c": "tests/unit/sink/json/test_wqueue.c, core/test_comm_registry.c",
    "io/buf.c": "tests/unit/core/test_core.c (the formatters write into it)",
    "io/files.c": "tests/unit/plugin/test_dir_relinked.c, sink/json/test_writer_*.c",
    "sink/drain.c": "tests/unit/sink/test_dump_stats.c, test_dump_fork_records.c (every drain)",
    "sink/json/json.c": "tests/test_fixtures.py (every record read back by the oracle)",
    "sink/otlp/otlp_body.c": "tests/unit/sink/otlp/test_otlp_collect.c, test_otlp_sink.c (bodies read back)",
    "sink/otlp/otlp_hist.c": "tests/unit/sink/otlp/test_otlp_sink.c",
    "sink/prom/prom_file.c": "tests/unit/sink/prom/test_prom_ranks.c",
    "sink/prom/prom_labels.c": "tests/unit/sink/prom/test_prom.c",
    "sink/prom/prom_table.c": "tests/unit/sink/prom/test_prom.c",
    "sink/sinks.c": "tests/unit/plugin/test_no_otlp.c, tests/test_prom.py",
    "sink/stash.c": "tests/unit/plugin/test_exit_held.c",
    "sink/vocab.c": "tests/unit/sink/prom/test_prom.c",
    "trace/capture.c": "tests/unit/trace/test_trace_order.c, test_trace_fork.c (every thread's buffer)",
    "trace/tracefmt.c": "tests/test_trace_mode.py (trace files replayed, byte for byte)",
    "trace/writer.c": "tests/unit/trace/test_trace_deleted.c, tests/test_trace_mode.py",
}


def layout_problems(repo, through):
    """What breaks the layout rule in repo's tests/unit (see layers.tests-layout)."""
    unit = os.path.join(repo, "tests", "unit")
    src = os.path.join(repo, "src")
    modules = {}  # test folder -> module names of the code it mirrors
    for d, _, files in os.walk(src):
        rel = os.path.relpath(d, src)
        mods = [f[:-2] for f in files if f.endswith(".c")]
        if mods:
            modules[rel] = mods
    for folder, tool in UNIT_TOOLS.items():
        modules[folder] = [f[:-2] for f in os.listdir(os.path.join(repo, tool)) if f.endswith(".c")]
    out, tested = [], set()
    for d, _, files in os.walk(unit):
        rel = os.path.relpath(d, unit)
        for f in sorted(files):
            if not (f.startswith("test_") and f.endswith(".c")):
                continue
            where = os.path.join("tests", "unit", rel, f) if rel != "." else "tests/unit/" + f
            if rel == ".":
                out.append("%s: loose in tests/unit (it belongs in the folder of what it tests)" % where)
                continue
            if rel == UNIT_WHOLE:
                continue
            if rel not in modules:
                out.append("%s: tests/unit/%s mirrors no folder of src/ or tools/" % (where, rel))
                continue
            stem = f[len("test_"):-len(".c")]
            leaf = os.path.basename(rel)
            names = [stem, stem[len(leaf) + 1:]] if stem.startswith(leaf + "_") else [stem]
            hit = [m for m in modules[rel] for n in names if n == m or n.startswith(m + "_")]
            if not hit and stem != leaf:
                out.append("%s: names no module of %s (test_<module>[_<what>].c)" % (
                    where, UNIT_TOOLS.get(rel, "src/" + rel)))
            for m in hit:
                tested.add(os.path.join(rel, m + ".c"))
    for rel, mods in modules.items():
        if rel in UNIT_TOOLS:
            continue
        for m in sorted(mods):
            key = os.path.join(rel, m + ".c")
            if key not in tested and key not in through:
                out.append("src/%s: no tests/unit/%s/test_%s.c, and not in TESTED_THROUGH" % (key, rel, m))
            elif key in tested and key in through:
                out.append("src/%s: has its test now: take it out of TESTED_THROUGH" % key)
    return out


def case_tests_layout(_a):
    bad = layout_problems(REPO, TESTED_THROUGH)
    if bad:
        return False, "FAIL layers.tests-layout:\n  " + "\n  ".join(bad)
    return True, ("OK layers.tests-layout: every C test in the folder of what it tests; %d modules "
                  "held through another's test (TESTED_THROUGH)" % len(TESTED_THROUGH))


# ---------------------------------------------------------------------------- sizes

SIZE_ROOTS = ("src", "tools")
SIZE_EXT = (".c", ".h", ".py", ".sh")
FILE_MAX = 700  # lines
FUNC_MAX = 120  # lines


def c_blank(text):
    """text with its comments, string and character literals and preprocessor lines blanked
    (every character but a newline made a space), so that braces count as code only."""
    out, i, n = [], 0, len(text)
    blank = lambda t: re.sub(r"[^\n]", " ", t)  # noqa: E731
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text[i] in "\"'":
            j = i + 1
            while j < n and text[j] != text[i] and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            j = i + 1
            while j < n and text[j] not in "/\"'":
                j += 1
            out.append(text[i:j])
            i = j
            continue
        out.append(blank(text[i:j]))
        i = j
    code = "".join(out)
    return re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: blank(m.group(0)), code)


def c_functions(text):
    """(name, first line, last line) of every function defined in C text: a brace at file
    level whose head ends with a parameter list (attributes after it allowed) and is not a
    declaration of a struct, union, enum or an initialised variable."""
    code = c_blank(text)
    out, depth, head_at, fn = [], 0, 0, None
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                head = code[head_at:i]
                bare = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", head, flags=re.S)
                m = re.search(r"(\w+)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)\s*$", bare)
                fn = None
                if m and "=" not in bare and not re.match(r"\s*(typedef|struct|union|enum)\b", bare):
                    first = head_at + len(head) - len(head.lstrip())
                    fn = (m.group(1), code.count("\n", 0, first) + 1)
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                if fn:
                    out.append((fn[0], fn[1], code.count("\n", 0, i) + 1))
                fn, head_at = None, i + 1
        elif ch == ";" and depth == 0:
            head_at = i + 1
    return out


def py_functions(text):
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out.append((node.name, first, node.end_lineno))
    return out


def oversized(repo):
    """Every source file of repo's src/ and tools/ over FILE_MAX lines, every function over
    FUNC_MAX, as 'path: what'."""
    out = []
    for root in SIZE_ROOTS:
        for d, dirs, files in os.walk(os.path.join(repo, root)):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for n in sorted(files):
                if not n.endswith(SIZE_EXT):
                    continue
                path = os.path.join(d, n)
                rel = os.path.relpath(path, repo)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                lines = text.count("\n") + (not text.endswith("\n") and text != "")
                if lines > FILE_MAX:
                    out.append("%s: %d lines (at most %d)" % (rel, lines, FILE_MAX))
                funcs = (c_functions(text) if n.endswith((".c", ".h")) else
                         py_functions(text) if n.endswith(".py") else [])
                for name, a, b in funcs:
                    if b - a + 1 > FUNC_MAX:
                        out.append("%s:%d: %s() is %d lines (at most %d)" % (rel, a, name, b - a + 1, FUNC_MAX))
    return out


def case_sizes(_a):
    bad = oversized(REPO)
    if bad:
        return False, "FAIL layers.sizes: cut these up (one concern each: docs/ARCHITECTURE.md):\n  " + \
            "\n  ".join(bad)
    return True, "OK layers.sizes: no file of src/ or tools/ over %d lines, no function over %d" % (
        FILE_MAX, FUNC_MAX)


def sizes_selftest():
    """Planted in a scratch tree: a file and functions one line over the limits (C with
    braces in strings, comments and a character literal, a multi-line signature and an
    attribute; Python with a decorator) are reported, the same at the limits are not, and
    neither is a struct or an initialiser. None, or what went wrong."""
    def c_fn(name, lines):  # a C function of exactly `lines` lines
        body = ['  x += "{";  /* } */', "  x += '}';"] + ["  x++;"] * (lines - 6)
        return ["static __attribute__((noinline)) int", "%s(int x) {" % name] + body + ["  return x;", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "src", "core"))
        os.makedirs(os.path.join(tmp, "tools", "dev"))
        c = (["struct s {", "  int a;", "};", "static const int k[] = {", "  1,", "};"] +
             c_fn("at_limit", FUNC_MAX) + c_fn("over_limit", FUNC_MAX + 1))
        with open(os.path.join(tmp, "src", "core", "planted.c"), "w") as f:
            f.write("\n".join(c) + "\n")
        py = (["import functools", "", "", "@functools.lru_cache()", "def at_limit():"] +
              ["    x = 1"] * (FUNC_MAX - 3) + ["    return x", "", "", "def over_limit():"] +
              ["    x = 1"] * (FUNC_MAX - 1) + ["    return x"])
        with open(os.path.join(tmp, "tools", "dev", "planted.py"), "w") as f:
            f.write("\n".join(py) + "\n")
        with open(os.path.join(tmp, "tools", "dev", "long.sh"), "w") as f:
            f.write("#!/bin/sh\n" + ":\n" * FILE_MAX)
        with open(os.path.join(tmp, "tools", "dev", "limit.sh"), "w") as f:
            f.write("#!/bin/sh\n" + ":\n" * (FILE_MAX - 1))
        found = oversized(tmp)
        want = ["src/core/planted.c:%d: over_limit()" % (7 + FUNC_MAX),
                "tools/dev/long.sh: %d lines" % (FILE_MAX + 1),
                "tools/dev/planted.py:%d: over_limit()" % (6 + FUNC_MAX)]
        missing = [w for w in want if not any(x.startswith(w) for x in found)]
        extra = [x for x in found if not any(x.startswith(w) for w in want)]
        if missing or extra or len(found) != len(want):
            return "sizes: planted %s, reported %s" % (want, found)
    return None


def cases():
    return [harness.Case("layers.src", case_src, labels=["selftest"]),
            harness.Case("layers.core-acyclic", case_core, labels=["selftest"]),
            harness.Case("layers.report-page", case_page, labels=["selftest"]),
            harness.Case("layers.tests-layout", case_tests_layout, labels=["selftest"]),
            harness.Case("layers.registered", case_registered, labels=["selftest"]),
            harness.Case("layers.sizes", case_sizes, labels=["selftest"]),
            harness.Case("layers.selftest", case_selftest, labels=["selftest"])]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0], needs_binaries=False))

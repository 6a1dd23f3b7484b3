#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Extract the PromQL of a Grafana dashboard, with its variables substituted.

Stdlib only.  Used to check grafana/nccl-inspector-job-performance-template.json and by
end-to-end tests that evaluate every panel expression against a real Prometheus.

    queries(dashboard_path, variables)  -> [(panel title, PromQL), ...]
    variable_queries(dashboard_path)    -> [(name, query), ...] in dashboard order
    lint(expr)                          -> [problem, ...]  (empty: plausible PromQL)

Variable values (the `variables` dict): a string or a list of strings; "All" or "$__all"
selects All.  Interpolation follows Grafana's Prometheus datasource:
  - a variable that is neither multi nor includeAll: the value with \\ and ' escaped;
  - a multi/includeAll variable: each value regex-escaped for a PromQL string
    (`a.b` -> `a\\\\.b`), one value as is, several as `(a|b)`; All is the variable's
    allValue (`.*` in our dashboard) unescaped, or, without allValue, the alternation of
    the values given in `all_values` (else `.*`);
  - ${var:fmt} formats regex, pipe, csv, raw, text, glob, singlequote, doublequote,
    json, and the forms $var, ${var}, [[var]], [[var:fmt]].
A multi/includeAll variable that is not given defaults to All; any other variable that is not
given takes the dashboard's saved current value, else it is an error.

Command line:
    python3 tests/lib/grafana_queries.py grafana/nccl-inspector-job-performance-template.json \\
        --var cluster=unknown --var slurm_job_id=4242 [--var node=a --var node=b] [--check]
"""
import argparse
import json
import re
import sys

METRICS = (
    "nccl_bus_bandwidth_gbs",
    "nccl_collective_exec_time_microseconds",
    "nccl_p2p_bus_bandwidth_gbs",
    "nccl_p2p_exec_time_microseconds",
    "nccl_collectives_total",
    "nccl_collectives_dropped_total",
    "nccl_p2p_total",
    "nccl_p2p_dropped_total",
    "nccl_inflight_oldest_seconds",
    # the recording rules of prometheus/inspector-rules.yml that the alert panels read
    "nccl:rank_late_share:rate5m",
    "nccl:node_pair_p2p_bandwidth_ratio:rate5m",
    "nccl:records_lost_share:rate5m",
)
LABELS = (
    "version", "cluster", "slurm_job_id", "node", "gpu", "comm_name", "n_nodes", "nranks",
    "message_size", "collective", "algo_proto", "p2p_operation",
    "comm_id", "rank", "peer_node", "kind", "reason",
    "__name__", "job", "instance",  # added by Prometheus itself
)

ALL = ("All", "$__all")

# Grafana's variable regex (public/app/features/variables/utils.ts).
_VAR_RE = re.compile(r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^}]+))?(?::([^}]+))?\}")

_BUILTINS = {
    "__interval": "30s", "__interval_ms": "30000", "__rate_interval": "2m",
    "__range": "3600s", "__range_s": "3600", "__range_ms": "3600000",
}


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _variables(dash):
    return dash.get("templating", {}).get("list", [])


def _var_query(v):
    q = v.get("query", "")
    if isinstance(q, dict):
        q = q.get("query", "")
    return q if q else v.get("definition", "")


def variable_queries(dashboard_path):
    """[(name, query)] of the dashboard's variables in order (a datasource variable's query
    is the datasource type, e.g. 'prometheus')."""
    return [(v["name"], _var_query(v)) for v in _variables(_load(dashboard_path))]


def _iter_panels(panels):
    for p in panels:
        if p.get("type") == "row":
            yield from _iter_panels(p.get("panels", []))  # collapsed rows nest their panels
        else:
            yield p
            yield from _iter_panels(p.get("panels", []))


# --- value formatting -------------------------------------------------------------------------

def _prom_regular_escape(s):
    return s.replace("\\", "\\\\").replace("'", "\\'")


def _prom_regex_escape(s):
    s = s.replace("\\", "\\\\\\\\")
    return re.sub(r"[$^*{}\[\]'+?.()|]", lambda m: "\\\\" + m.group(0), s)


def _regex_escape(s):  # kbn.regexEscape
    return re.sub(r"[\\^$*+?.()|\[\]{}/]", lambda m: "\\" + m.group(0), s)


def _format(values, fmt, var):
    """values: list of strings; fmt: None (datasource default) or a Grafana format name."""
    if fmt is None:
        if not var.get("multi") and not var.get("includeAll"):
            return _prom_regular_escape(values[0])
        esc = [_prom_regex_escape(x) for x in values]
        return esc[0] if len(esc) == 1 else "(" + "|".join(esc) + ")"
    if fmt == "regex":
        esc = [_regex_escape(x) for x in values]
        return esc[0] if len(esc) == 1 else "(" + "|".join(esc) + ")"
    if fmt == "pipe":
        return "|".join(values)
    if fmt == "csv":
        return ",".join(values)
    if fmt in ("raw", "text"):
        return ",".join(values) if fmt == "raw" else " + ".join(values)
    if fmt == "glob":
        return values[0] if len(values) == 1 else "{" + ",".join(values) + "}"
    if fmt == "singlequote":
        return ",".join("'" + x.replace("'", "\\'") + "'" for x in values)
    if fmt == "doublequote":
        return ",".join('"' + x.replace('"', '\\"') + '"' for x in values)
    if fmt == "json":
        return json.dumps(values[0] if len(values) == 1 else values)
    raise ValueError("unsupported variable format %r" % fmt)


def _resolve(var, given, all_values):
    """Return (values list, is_all)."""
    name = var["name"]
    val = given.get(name)
    if val is None:
        if var.get("includeAll") or var.get("multi"):
            cur = var.get("current", {}).get("value")
            val = cur if cur not in (None, "", []) else "$__all"
        else:
            cur = var.get("current", {}).get("value")
            if cur in (None, "", []):
                raise ValueError("variable %r needs a value (--var %s=...)" % (name, name))
            val = cur
    if isinstance(val, str):
        val = [val]
    val = list(val)
    if any(x in ALL for x in val):
        if not var.get("includeAll"):
            raise ValueError("variable %r has no All option" % name)
        return None, True
    if len(val) > 1 and not var.get("multi"):
        raise ValueError("variable %r is single-valued, got %r" % (name, val))
    if not val:
        raise ValueError("variable %r: empty value" % name)
    return val, False


def substitute(expr, dash_vars, given, all_values=None):
    """Replace every Grafana variable reference in expr."""
    all_values = all_values or {}
    byname = {v["name"]: v for v in dash_vars}

    def repl(m):
        name = m.group(1) or m.group(2) or m.group(4)
        fmt = m.group(3) or m.group(6)
        if name in _BUILTINS and name not in byname:
            return given.get(name, _BUILTINS[name])
        if name not in byname:
            raise ValueError("unknown variable $%s in %r" % (name, expr))
        var = byname[name]
        values, is_all = _resolve(var, given, all_values)
        if is_all:
            if var.get("allValue") and fmt not in ("text", "queryparam"):
                return var["allValue"]
            values = list(all_values.get(name, []))
            if not values:
                return ".*"
        return _format(values, fmt, var)

    return _VAR_RE.sub(repl, expr)


def queries(dashboard_path, variables, all_values=None):
    """[(panel title, PromQL)] for every target of every panel, variables substituted.

    variables: {name: str or [str]}; "All"/"$__all" for All.  all_values: optional
    {name: [values]} used for All when a variable has no allValue."""
    dash = _load(dashboard_path)
    dvars = _variables(dash)
    out = []
    for p in _iter_panels(dash.get("panels", [])):
        for t in p.get("targets", []):
            expr = t.get("expr")
            if not expr or t.get("hide"):
                continue
            out.append((p.get("title", ""), substitute(expr, dvars, variables, all_values)))
    return out


# --- plausibility check (no PromQL parser available: a light tokenizer) ---------------------

_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or",
    "unless", "sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk",
    "quantile", "count_values", "group", "inf", "nan", "label_values", "query_result",
}
_FUNCS = {
    "abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp", "clamp_max",
    "clamp_min", "count_over_time", "delta", "deriv", "exp", "floor", "histogram_quantile",
    "idelta", "increase", "irate", "label_join", "label_replace", "last_over_time", "ln", "log10",
    "log2", "max_over_time", "min_over_time", "quantile_over_time", "rate", "resets", "round",
    "scalar", "sort", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time",
    "sum_over_time", "time", "timestamp", "vector", "present_over_time",
}
_TOKEN = re.compile(r'\s+|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`|[A-Za-z_:][A-Za-z0-9_:]*'
                    r'|\d+(?:\.\d+)?(?:ms|[smhdwy])?|=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],]')


def lint(expr, metrics=METRICS, labels=LABELS):
    """Problems found in expr (empty list: plausible).  Checks string literals are closed,
    (), {}, [] balance and nest, no variable reference is left, every identifier used as a
    metric is one of ours, and every label name (matchers, by/without lists) is one of ours."""
    problems = []
    if _VAR_RE.search(expr):
        problems.append("unsubstituted variable: %s" % _VAR_RE.search(expr).group(0))
    toks, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            problems.append("unexpected character %r at %d" % (expr[pos], pos))
            return problems
        if not m.group(0).isspace():
            toks.append(m.group(0))
        pos = m.end()
    stack = []
    pairs = {")": "(", "}": "{", "]": "["}
    for t in toks:
        if t in "({[":
            stack.append(t)
        elif t in ")}]":
            if not stack or stack.pop() != pairs[t]:
                problems.append("unbalanced %r" % t)
                return problems
    if stack:
        problems.append("unclosed %r" % stack[-1])
    depth_brace = 0
    label_list = False  # inside by (...) / without (...)
    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        prev = toks[i - 1] if i else ""
        if t == "{":
            depth_brace += 1
        elif t == "}":
            depth_brace -= 1
        elif t in ("by", "without", "on", "ignoring", "group_left", "group_right") and nxt == "(":
            label_list = True
        elif t == ")" and label_list:
            label_list = False
        elif re.match(r"[A-Za-z_:]", t):
            if depth_brace > 0 or label_list:
                if (depth_brace > 0 and nxt in ("=", "!=", "=~", "!~")) or label_list:
                    if t not in labels:
                        problems.append("label %r is not one of ours" % t)
            elif t in _KEYWORDS or t in _FUNCS:
                if nxt not in ("(", "by", "without") and \
                        t not in ("inf", "nan", "bool", "offset", "and", "or", "unless"):
                    problems.append("keyword %r not followed by '(' or by/without" % t)
            elif t not in metrics:
                problems.append("metric %r is not one of ours" % t)
    # __name__ matchers: every alternative must be one of our metrics
    for m in re.finditer(r'__name__\s*(=~|=)\s*"([^"]*)"', expr):
        for name in m.group(2).split("|"):
            if name not in metrics:
                problems.append("__name__ value %r is not one of our metrics" % name)
    return problems


def lint_variable_query(query, metrics=METRICS, labels=LABELS):
    """Problems in a Prometheus variable query label_values(selector, label) / label_values(label)."""
    m = re.fullmatch(r"\s*label_values\((.*)\)\s*", query, re.S)
    if not m:
        return ["not a label_values(...) query: %r" % query]
    inner = m.group(1)
    sel, _, label = inner.rpartition(",")
    problems = []
    if label.strip() not in labels:
        problems.append("label %r is not one of ours" % label.strip())
    if sel.strip():
        problems += lint(sel.strip(), metrics, labels) if not _VAR_RE.search(sel) else \
            lint(_VAR_RE.sub("x", sel.strip()), metrics, labels)
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dashboard")
    ap.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                    help="variable value; repeat a name for several values; VALUE All for All")
    ap.add_argument("--check", action="store_true",
                    help="lint every expression and variable query; exit 1 on a problem")
    a = ap.parse_args(argv)
    given = {}
    for kv in a.var:
        k, sep, v = kv.partition("=")
        if not sep:
            ap.error("--var wants NAME=VALUE, got %r" % kv)
        given.setdefault(k, []).append(v)
    given = {k: (v[0] if len(v) == 1 else v) for k, v in given.items()}
    bad = 0
    print("# variables")
    for name, q in variable_queries(a.dashboard):
        probs = lint_variable_query(q) if a.check and q.startswith("label_values") else []
        print("%s\t%s" % (name, q))
        for p in probs:
            print("  PROBLEM: " + p)
        bad += len(probs)
    print("# panels")
    try:
        qs = queries(a.dashboard, given)
    except ValueError as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    for title, expr in qs:
        print("%s\t%s" % (title, expr))
        probs = lint(expr) if a.check else []
        for p in probs:
            print("  PROBLEM: " + p)
        bad += len(probs)
    if a.check:
        print("# %d expressions, %d problems" % (len(qs), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

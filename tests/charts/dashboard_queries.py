#!/usr/bin/env python3
"""Checks charts/ringleader/dashboards/ringleader.json and writes every query as a recording rule.

Usage: dashboard_queries.py DASHBOARD.json RULES_OUT.yaml METRIC_SOURCE...
Fails (exit 1, naming the panel) on a panel without a query, a duplicate id, a missing template
variable or required panel, or a metric name that no METRIC_SOURCE file defines. Grafana's
variables are replaced by values PromQL accepts, so promtool can then check each expression.
"""
import json
import re
import sys

REQUIRED_PANELS = [
    "All-reduce bus bandwidth per rank", "Bus bandwidth by message size", "Slowest rank per job",
    "Slowest edges", "Probe duration", "Rendezvous time", "Wrong elements", "Reconciles by result",
    "Work queue depth", "Ports used vs capacity",
    # The trainers' own collectives (the NCCL profiler plugin, issue 18).
    "Training all-reduce bus bandwidth by rank",
    "Training collectives: bus bandwidth by collective and size",
    "Training collective calls per second", "GPU time in collectives", "Profiler drops",
]
REQUIRED_VARIABLES = ["datasource", "namespace", "job"]
# Grafana's built-in and dashboard variables, as values that keep the PromQL valid.
SUBSTITUTIONS = [
    (r"\$__rate_interval|\$__interval|\$__range", "5m"),
    (r"\$\{?namespace\}?|\$\{?job\}?|\$\{?collective\}?", "x"),
]


def fail(message):
    print("dashboard: " + message, file=sys.stderr)
    sys.exit(1)


def main():
    dashboard_path, rules_path, sources = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(dashboard_path) as f:
        dashboard = json.load(f)
    known = set()
    for path in sources:
        with open(path) as f:
            known.update(re.findall(r'"(ringleader_[a-z_]+)"', f.read()))
    if not known:
        fail("no metric names found in " + " ".join(sources))

    variables = {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}
    for name in REQUIRED_VARIABLES:
        if name not in variables:
            fail("template variable %r is missing" % name)

    exprs = []  # (where, expr)
    for name, v in variables.items():
        if v.get("type") != "query":
            continue
        query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)", query)
        if not m:
            fail("variable %s: expected label_values(SELECTOR, LABEL), got %r" % (name, query))
        exprs.append(("variable " + name, m.group(1)))

    ids, titles = set(), set()
    panels = list(dashboard["panels"])
    for panel in list(panels):
        panels.extend(panel.get("panels", []))
    for panel in panels:
        if panel["id"] in ids:
            fail("duplicate panel id %s" % panel["id"])
        ids.add(panel["id"])
        titles.add(panel["title"])
        if panel["type"] == "row":
            continue
        targets = panel.get("targets", [])
        if not targets:
            fail("panel %r has no query" % panel["title"])
        for target in targets:
            if not target.get("expr", "").strip():
                fail("panel %r: target %s has no expr" % (panel["title"], target.get("refId")))
            exprs.append(("panel %r %s" % (panel["title"], target["refId"]), target["expr"]))
    for title in REQUIRED_PANELS:
        if title not in titles:
            fail("required panel %r is missing" % title)

    with open(rules_path, "w") as out:
        out.write("groups:\n  - name: dashboard\n    rules:\n")
        for i, (where, expr) in enumerate(exprs):
            for pattern, value in SUBSTITUTIONS:
                expr = re.sub(pattern, value, expr)
            for name in set(re.findall(r"\bringleader_[a-z_]+", expr)):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                if name not in known and base not in known:
                    fail("%s uses %s, which no metric source defines" % (where, name))
            out.write("      # %s\n      - record: dashboard:query_%d\n        expr: %s\n"
                      % (where, i, json.dumps(expr)))
    print("dashboard: %d panels, %d queries" % (len(panels), len(exprs)))


if __name__ == "__main__":
    main()

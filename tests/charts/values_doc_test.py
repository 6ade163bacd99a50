#!/usr/bin/env python3
"""docs/install.md's values table against charts/ringleader/values.yaml: every value the chart
has is documented once, with its default exactly as values.yaml has it, and the table names no
value the chart lacks. A value is a leaf of values.yaml, or a map or list values.schema.json
leaves open (resources, labels, ...), documented as a whole.

Usage: values_doc_test.py REPO_ROOT
"""
import json
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import install_doc  # noqa: E402


def render(value):
    """A default as the table writes it: `text`, `""`, `true`, `8080`, `[]`, `{a: b}` (flow YAML)."""
    if isinstance(value, str):
        return "`%s`" % value if value else '`""`'
    if isinstance(value, bool):
        return "`%s`" % ("true" if value else "false")
    if isinstance(value, (int, float)):
        return "`%s`" % value
    flow = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=1 << 20).strip()
    return "`%s`" % flow


def chart_values(values, schema, prefix=""):
    """{dotted name: default} for every value, following the schema's closed objects down."""
    out = {}
    for key, value in values.items():
        name = prefix + key
        node = schema.get("properties", {}).get(key, {})
        if isinstance(value, dict) and node.get("properties"):
            out.update(chart_values(value, node, name + "."))
        else:
            out[name] = value
    return out


def main():
    root = sys.argv[1]
    chart = os.path.join(root, "charts", "ringleader")
    with open(os.path.join(chart, "values.yaml")) as f:
        values = yaml.safe_load(f)
    with open(os.path.join(chart, "values.schema.json")) as f:
        schema = json.load(f)
    with open(os.path.join(root, "docs", "install.md")) as f:
        rows = install_doc.table_rows(install_doc.section(f.read(), "### Values"))

    want = chart_values(values, schema)
    errors = []
    seen = {}
    for cells in rows:
        if len(cells) != 3:
            errors.append("row %r: want 3 cells (value | default | meaning)" % cells)
            continue
        documented = install_doc.names(cells[0])
        if len(documented) != 1:
            errors.append("row %r: name exactly one value per row" % cells[0])
            continue
        name = documented[0]
        seen[name] = seen.get(name, 0) + 1
        if name not in want:
            errors.append("%s is documented but values.yaml has no such value" % name)
            continue
        if cells[1] != render(want[name]):
            errors.append("%s: the table's default is %s, values.yaml's is %s" % (name, cells[1], render(want[name])))
        if not cells[2]:
            errors.append("%s: no meaning given" % name)
    for name in sorted(want):
        if name not in seen:
            errors.append("%s (default %s) is in values.yaml but not in the table" % (name, render(want[name])))
        elif seen[name] > 1:
            errors.append("%s has %d rows" % (name, seen[name]))
    for e in errors:
        print("values table: " + e, file=sys.stderr)
    print("values table: %d values in values.yaml, %d rows, %d problems" % (len(want), len(rows), len(errors)))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""docs/install.md's RBAC table against the rules the chart renders: for each set of values below,
the grants `helm template` produces (ClusterRole, or a Role per watched namespace, and the
leader-election Role) must be exactly the table's rows whose "granted when" values hold.

Usage: rbac_doc_test.py REPO_ROOT. Exits 77 (skipped) when no helm is found (HELM, .deps/bin, PATH).
"""
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import install_doc  # noqa: E402

NAMESPACE = "ringleader-system"
# name -> --set values; each is rendered and compared.
CASES = {
    "defaults": "",
    "every-gang-provider-in-namespaces": "gangScheduling.coscheduling.enabled=true,gangScheduling.volcano.enabled=true,"
                                         "gangScheduling.kueue.enabled=true,gangScheduling.kubernetes.enabled=true,"
                                         "operator.watchNamespaces={team-a,team-b}",
    "no-leader-election": "leaderElection.enabled=false,replicaCount=1",
    "no-network-policies": "networkPolicy.enabled=false",
}


def find_helm(root):
    for candidate in (os.environ.get("HELM"), os.path.join(root, ".deps", "bin", "helm"), shutil.which("helm")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def doc_rows(root):
    """[(group, resource, name or '*', verbs, conditions, in_release_namespace)] from the table."""
    with open(os.path.join(root, "docs", "install.md")) as f:
        rows = install_doc.table_rows(install_doc.section(f.read(), "### RBAC"))
    out = []
    for cells in rows:
        if len(cells) != 6:
            raise SystemExit("RBAC row %r: want 6 cells (group | resource | names | verbs | granted when | why)" % cells)
        group = install_doc.names(cells[0])[0].strip('"')
        resource = install_doc.names(cells[1])[0]
        names = install_doc.names(cells[2])
        name = names[0] if names else "*"
        if not names and cells[2] != "all":
            raise SystemExit("RBAC row %r: names is `a-name` or all" % cells)
        verbs = install_doc.names(cells[3])
        conditions = [] if cells[4] == "always" else install_doc.names(cells[4])
        in_release = "release's namespace" in cells[4]
        out.append((group, resource, name, verbs, conditions, in_release))
    if not out:
        raise SystemExit("docs/install.md's RBAC section has no table rows")
    return out


def lookup(values, dotted):
    node = values
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            raise SystemExit("the RBAC table's condition %s is no value of the chart" % dotted)
        node = node[key]
    return node


def main():
    root = sys.argv[1]
    helm = find_helm(root)
    if helm is None:
        print("SKIP: no helm (run scripts/install-kube-tools)")
        sys.exit(77)
    chart = os.path.join(root, "charts", "ringleader")
    with open(os.path.join(chart, "values.yaml")) as f:
        defaults = yaml.safe_load(f)
    rows = doc_rows(root)
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HELM_CACHE_HOME=tmp + "/cache", HELM_CONFIG_HOME=tmp + "/config",
                   HELM_DATA_HOME=tmp + "/data")
        for case, sets in CASES.items():
            # The values a case sets, on top of values.yaml, decide which rows hold.
            values = yaml.safe_load(yaml.safe_dump(defaults))
            for assignment in filter(None, split_sets(sets)):
                key, _, raw = assignment.partition("=")
                parent = values
                for part in key.split(".")[:-1]:
                    parent = parent[part]
                parent[key.split(".")[-1]] = parse_set(raw)
            args = [helm, "template", "rl", chart, "--namespace", NAMESPACE] + (["--set", sets] if sets else [])
            run = subprocess.run(args, capture_output=True, text=True, env=env)
            if run.returncode != 0:
                errors.append("%s: helm template failed: %s" % (case, run.stderr))
                continue
            objects = [o for o in yaml.safe_load_all(run.stdout) if o]
            watched = values["operator"]["watchNamespaces"] or []
            job_scopes = watched or ["cluster"]
            want = set()
            for group, resource, name, verbs, conditions, in_release in rows:
                if not all(lookup(values, c) is True for c in conditions):
                    continue
                for scope in ([NAMESPACE] if in_release else job_scopes):
                    want |= {(scope, group, resource, name, verb) for verb in verbs}
            got = set()
            for o in objects:
                if o.get("kind") not in ("ClusterRole", "Role"):
                    continue
                scope = "cluster" if o["kind"] == "ClusterRole" else o["metadata"]["namespace"]
                for rule in o.get("rules") or []:
                    for group in rule.get("apiGroups", []):
                        for resource in rule.get("resources", []):
                            for name in rule.get("resourceNames") or ["*"]:
                                got |= {(scope, group, resource, name, verb) for verb in rule.get("verbs", [])}
            for grant in sorted(got - want):
                errors.append("%s: the chart grants %r, which the RBAC table does not list" % (case, grant))
            for grant in sorted(want - got):
                errors.append("%s: the RBAC table lists %r, which the chart does not grant" % (case, grant))
            print("rbac table: %s: %d grants" % (case, len(got)))
    for e in errors:
        print("rbac table: " + e, file=sys.stderr)
    sys.exit(1 if errors else 0)


def split_sets(sets):
    """Splits --set text at the commas outside {...} lists."""
    out, depth, current = [], 0, ""
    for ch in sets:
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        current += ch
    out.append(current)
    return out


def parse_set(raw):
    """A --set value as Helm reads it: true/false, integers, {a,b} lists, else text."""
    if raw in ("true", "false"):
        return raw == "true"
    if raw.startswith("{") and raw.endswith("}"):
        return [x for x in raw[1:-1].split(",") if x]
    try:
        return int(raw)
    except ValueError:
        return raw


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks one `helm template` rendering of charts/ringleader, given as yaml2json's JSON.

Usage: check_rendered.py RENDERED.json --namespace NS [--watch a,b] [--leader-election on|off]
         [--default-host-network true|false|unset] [--network-policies true|false|unset]
         [--absent-flags flag,...]
         --kinds Kind,Kind,... --operator BIN [--dashboard FILE]
         [--rules RULES.json --floor F [--training-fraction X]]
Checks the security context, that RBAC grants exactly what the operator's code uses (and no
more), that every Deployment argument is a flag `ringleader-operator run` accepts, and that the
dashboard ConfigMap and the PrometheusRule carry the chart's files unchanged.
"""
import argparse
import json
import re
import subprocess
import sys

JOB_RULES = [  # (apiGroup, resource, verb), from operator/runtime: informers, applier, controller
    *[("ringleader.dev", "trainingjobs", v) for v in ("list", "watch", "delete")],
    ("ringleader.dev", "trainingjobs/status", "update"),
    # Children are created with blockOwnerDeletion: OwnerReferencesPermissionEnforcement admits
    # that only for who may update the owner's finalizers.
    ("ringleader.dev", "trainingjobs/finalizers", "update"),
    *[("", "pods", v) for v in ("get", "list", "watch", "create", "delete")],
    # A suspended job's Service is deleted (it names the ports the job gave back); Secrets go
    # with their job through garbage collection.
    *[("", "services", v) for v in ("get", "list", "watch", "create", "delete")],
    *[("", "secrets", v) for v in ("get", "list", "watch", "create")],
    ("", "events", "create"),
]
# With NetworkPolicies on (the operator's default, so also when the value is missing): the job's
# policy is created, cached and, like the Service, deleted when a suspended job gives its ports back.
NETWORK_POLICY_RULES = [("networking.k8s.io", "networkpolicies", v) for v in ("get", "list", "watch", "create", "delete")]
# What each gang-scheduling provider the chart enables adds: the job's PodGroup is created, read
# when it exists and brought to the job's spec (operator/runtime/applier.cc). Kueue: the attempt's
# Workload is read while its Pods wait gated (operator/runtime/controller.cc, QueueVerdict).
GANG_RULES = {
    "coscheduling": [("scheduling.x-k8s.io", "podgroups", v) for v in ("get", "create", "update")],
    "volcano": [("scheduling.volcano.sh", "podgroups", v) for v in ("get", "create", "update")],
    "kueue": [("kueue.x-k8s.io", "workloads", "get")],
    # One PodGroup per attempt, made with its Pods and never changed: read only when it exists.
    "kubernetes": [("scheduling.k8s.io", "podgroups", v) for v in ("get", "create")],
}
errors = []


def check(condition, message):
    if not condition:
        errors.append(message)
    return condition


def help_flags(operator):
    out = subprocess.run([operator, "run", "--help"], capture_output=True, text=True, check=True).stdout
    flags = set(re.findall(r"^\s+--([a-z][a-z-]*)\s", out, re.M))
    if "leader-elect" not in flags:
        sys.exit("cannot read the flags from `%s run --help`:\n%s" % (operator, out))
    return flags


def check_deployment(deploy, args, known_flags, service_account):
    name = "Deployment " + deploy["metadata"]["name"]
    pod = deploy["spec"]["template"]["spec"]
    psc = pod.get("securityContext", {})
    check(psc.get("runAsNonRoot") is True, name + ": pod securityContext.runAsNonRoot must be true")
    check(psc.get("runAsUser", 0) != 0, name + ": pod must not run as uid 0")
    check(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", name + ": seccompProfile RuntimeDefault")
    check(not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC"),
          name + ": the operator needs no host namespaces")
    check(pod.get("serviceAccountName") == service_account,
          name + ": serviceAccountName %r, want %r" % (pod.get("serviceAccountName"), service_account))
    containers = pod["containers"] + pod.get("initContainers", [])
    for c in containers:
        where = "%s container %s" % (name, c["name"])
        sc = c.get("securityContext", {})
        check(sc.get("readOnlyRootFilesystem") is True, where + ": readOnlyRootFilesystem must be true")
        check(sc.get("allowPrivilegeEscalation") is False, where + ": allowPrivilegeEscalation must be false")
        check(sc.get("privileged") is not True, where + ": must not be privileged")
        check(sc.get("capabilities", {}).get("drop") == ["ALL"], where + ": capabilities.drop must be [ALL]")
        check(not sc.get("capabilities", {}).get("add"), where + ": must add no capabilities")
        check(sc.get("runAsUser", 1) != 0, where + ": must not run as uid 0")
        res = c.get("resources", {})
        check(res.get("requests", {}).get("cpu") and res.get("requests", {}).get("memory"),
              where + ": cpu and memory requests")
        check(res.get("limits", {}).get("memory"), where + ": a memory limit")
    c = pod["containers"][0]
    container_args = c.get("args", [])
    check(container_args[:1] == ["run"], name + ": args must start with run, got %r" % container_args[:1])
    values = {}
    for arg in container_args[1:]:
        m = re.fullmatch(r"--([a-z][a-z-]*)=(.*)", arg)
        if check(m, name + ": argument %r is not --flag=value" % arg):
            check(m.group(1) in known_flags, name + ": --%s is not a flag of ringleader-operator run" % m.group(1))
            check(m.group(1) not in values, name + ": --%s given twice" % m.group(1))
            values[m.group(1)] = m.group(2)
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    for flag, port_name in (("metrics-bind-address", "metrics"), ("health-probe-bind-address", "health")):
        bound = values.get(flag, "").rsplit(":", 1)[-1]
        check(bound and ports.get(port_name) == int(bound),
              name + ": port %s (%s) must be the --%s port (%s)" % (port_name, ports.get(port_name), flag, bound))
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c.get(probe, {}).get("httpGet", {})
        check(get.get("path") == path and get.get("port") == "health",
              name + ": %s must GET %s on the health port, got %r" % (probe, path, get))
    args.update(values)
    return container_args[1:]


def rbac_grants(objects, release_ns):
    """{(scope, apiGroup, resource, verb, resourceName or '*')} of every bound role."""
    roles = {}
    for o in objects:
        if o["kind"] in ("ClusterRole", "Role"):
            scope = "cluster" if o["kind"] == "ClusterRole" else o["metadata"]["namespace"]
            roles[(o["kind"], o["metadata"]["name"], scope)] = o.get("rules", [])
    grants, bound = set(), set()
    for o in objects:
        if o["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        scope = "cluster" if o["kind"] == "ClusterRoleBinding" else o["metadata"]["namespace"]
        ref = o["roleRef"]
        key = (ref["kind"], ref["name"], "cluster" if ref["kind"] == "ClusterRole" else scope)
        if not check(key in roles, "%s %s binds a role the chart does not define: %r" % (o["kind"], o["metadata"]["name"], key)):
            continue
        bound.add(key)
        for s in o.get("subjects", []):
            check(s.get("kind") == "ServiceAccount" and s.get("namespace") == release_ns,
                  "%s %s: subject %r is not the operator's ServiceAccount" % (o["kind"], o["metadata"]["name"], s))
        for rule in roles[key]:
            check(not rule.get("nonResourceURLs"), "%r grants nonResourceURLs" % (key,))
            for group in rule.get("apiGroups", []):
                for resource in rule.get("resources", []):
                    for verb in rule.get("verbs", []):
                        for rn in rule.get("resourceNames") or ["*"]:
                            check("*" not in (group, resource, verb), "%r grants a wildcard" % (key,))
                            grants.add((scope, group, resource, verb, rn))
    for key in roles:
        check(key in bound, "role %r is defined but not bound" % (key,))
    subjects = {(s["name"]) for o in objects if o["kind"].endswith("Binding") for s in o.get("subjects", [])}
    return grants, subjects


def main():
    p = argparse.ArgumentParser()
    p.add_argument("rendered")
    p.add_argument("--namespace", required=True)
    p.add_argument("--watch", default="")
    p.add_argument("--leader-election", default="on", choices=["on", "off"])
    p.add_argument("--default-host-network", default="false", choices=["true", "false", "unset"])
    p.add_argument("--network-policies", default="true", choices=["true", "false", "unset"])
    p.add_argument("--absent-flags", default="",
                   help="flags the Deployment must leave out (values missing), comma-separated")
    p.add_argument("--kinds", required=True)
    p.add_argument("--operator", required=True)
    p.add_argument("--dashboard")
    p.add_argument("--rules")
    p.add_argument("--floor")
    p.add_argument("--training-fraction", default="0.5")
    p.add_argument("--gang", default="", help="gang-scheduling providers enabled, comma-separated")
    a = p.parse_args()
    with open(a.rendered) as f:
        objects = json.load(f)["items"]
    for o in objects:
        check("Error" not in o or "kind" in o, "a rendered document does not parse: %s" % o.get("Error"))
    kinds = sorted(o["kind"] for o in objects)
    check(kinds == sorted(a.kinds.split(",")), "kinds rendered %s, want %s" % (kinds, sorted(a.kinds.split(","))))
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
        if o["kind"] not in ("ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
                             "ValidatingAdmissionPolicyBinding"):
            check(o["metadata"].get("namespace"), "%s %s has no namespace" % (o["kind"], o["metadata"]["name"]))

    sa = by_kind["ServiceAccount"][0]["metadata"]["name"]
    watch = [n for n in a.watch.split(",") if n]
    values = {}
    operator_args = check_deployment(by_kind["Deployment"][0], values, help_flags(a.operator), sa)
    check(values.get("namespace", "") == ",".join(watch), "--namespace=%r, want %r" % (values.get("namespace"), ",".join(watch)))
    if a.leader_election == "on":
        check(values.get("leader-elect") == "true", "--leader-elect must be true")
        check(values.get("leader-election-namespace") == a.namespace, "the Lease must live in the release namespace")
    else:
        check(values.get("leader-elect") == "false", "--leader-elect must be false")
    check(values.get("default-host-network", "unset") == a.default_host_network,
          "--default-host-network=%r, want %r" % (values.get("default-host-network"), a.default_host_network))
    check(values.get("network-policies", "unset") == a.network_policies,
          "--network-policies=%r, want %r" % (values.get("network-policies"), a.network_policies))
    for flag in filter(None, a.absent_flags.split(",")):
        check(flag not in values, "--%s=%r is rendered, want it left to the operator's default" % (flag, values.get(flag)))

    # The rendered arguments must get past the operator's own parser: with an unreadable
    # kubeconfig it fails loading it (exit 1), never on a flag (exit 2).
    run_args = [x.replace("$(POD_NAME)", "chart-test-pod") for x in operator_args]
    run = subprocess.run([a.operator, "run", *run_args, "--kubeconfig=/nonexistent/kubeconfig"],
                         capture_output=True, text=True, timeout=60)
    check(run.returncode == 1 and "cannot run" in run.stderr,
          "the operator rejected the chart's arguments (exit %d): %s" % (run.returncode, run.stderr[-600:]))

    grants, subjects = rbac_grants(objects, a.namespace)
    scopes = watch or ["cluster"]
    rules = list(JOB_RULES)
    if a.network_policies != "false":
        rules += NETWORK_POLICY_RULES
    for provider in filter(None, a.gang.split(",")):
        rules += GANG_RULES[provider]
    want = {(s, g, r, v, "*") for s in scopes for g, r, v in rules}
    if a.leader_election == "on":
        lease = values["leader-election-id"]
        want |= {(a.namespace, "coordination.k8s.io", "leases", "create", "*"),
                 (a.namespace, "coordination.k8s.io", "leases", "get", lease),
                 (a.namespace, "coordination.k8s.io", "leases", "update", lease)}
    for g in sorted(grants - want):
        check(False, "RBAC grants more than the operator uses: %r" % (g,))
    for g in sorted(want - grants):
        check(False, "RBAC misses what the operator uses: %r" % (g,))
    check(subjects == {sa}, "bindings name %s, want only %s" % (subjects, sa))

    svc = by_kind["Service"][0]
    check([p["targetPort"] for p in svc["spec"]["ports"]] == ["metrics"], "the Service must target the metrics port")

    if a.dashboard:
        cms = [o for o in by_kind.get("ConfigMap", []) if "ringleader.json" in o.get("data", {})]
        if check(len(cms) == 1, "one dashboard ConfigMap"):
            check(cms[0]["metadata"]["labels"].get("grafana_dashboard") == "1", "dashboard label grafana_dashboard: \"1\"")
            with open(a.dashboard) as f:
                check(json.loads(cms[0]["data"]["ringleader.json"]) == json.load(f),
                      "the ConfigMap's dashboard differs from " + a.dashboard)
    if a.rules:
        with open(a.rules) as f:
            groups = json.load(f)["items"][0]["groups"]
        for g in groups:
            for r in g["rules"]:
                if r.get("record") == "ringleader:bus_bandwidth_floor_bytes_per_second":
                    r["expr"] = "vector(%s)" % a.floor
                elif r.get("record") == "ringleader:training_bus_bandwidth_fraction":
                    r["expr"] = "vector(%s)" % a.training_fraction
        rule = by_kind["PrometheusRule"][0]
        check(rule["spec"]["groups"] == groups, "the PrometheusRule's groups differ from the rules file's")

    for e in errors:
        print("chart: " + e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()

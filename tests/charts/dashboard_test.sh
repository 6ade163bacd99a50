#!/usr/bin/env bash
# Every query of the Grafana dashboard is valid PromQL (promtool checks each one as a recording
# rule) and names only metrics that the operator or the sidecar defines.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The sidecar defines its metrics across sidecar/service (the probes' in sidecar_metrics.cc, the
# trainers' collectives in training_collectives.cc).
python3 "$top/tests/charts/dashboard_queries.py" "$top/charts/ringleader/dashboards/ringleader.json" \
  "$tmp/queries.yaml" "$top"/sidecar/service/*.cc \
  "$top/operator/runtime/operator_metrics.cc" "$top/operator/kube/metrics.cc"
promtool check rules "$tmp/queries.yaml"

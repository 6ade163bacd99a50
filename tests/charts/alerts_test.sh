#!/usr/bin/env bash
# The alert rules file is clean for promtool and every alert passes its unit test.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
rules="$top/charts/ringleader/alerts/ringleader-rules.yaml"
promtool check rules "$rules"
# Every alert in the rules file has at least one unit test.
missing=0
for alert in $(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' "$rules"); do
  if ! grep -q "alertname: $alert\$" "$top/tests/charts/alerts_test.yaml"; then
    echo "alerts: $alert has no unit test in tests/charts/alerts_test.yaml" >&2
    missing=1
  fi
done
((missing == 0))
promtool test rules "$top/tests/charts/alerts_test.yaml"

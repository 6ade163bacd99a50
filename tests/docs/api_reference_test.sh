#!/usr/bin/env bash
# docs/api-reference.md is exactly what scripts/gen-api-reference makes of the CRD today, and it
# has a row for every field of the CRD's schema, found by a walk of its own so that a generator
# which drops fields fails here. Usage: api_reference_test.sh (from any directory).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
crd="$top/crds/ringleader.dev_trainingjobs.yaml"
reference="$top/docs/api-reference.md"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$top/scripts/gen-api-reference" --output "$tmp/api-reference.md" ||
  { echo "api reference: scripts/gen-api-reference failed" >&2; exit 1; }
if ! diff -u --label docs/api-reference.md --label regenerated "$reference" "$tmp/api-reference.md" >&2; then
  echo "docs/api-reference.md is stale: run scripts/gen-api-reference --output docs/api-reference.md" >&2
  exit 1
fi

python3 - "$crd" "$reference" <<'PY'
import re
import sys

import yaml

crd_path, reference_path = sys.argv[1:]
with open(crd_path, encoding="utf-8") as f:
    crd = yaml.safe_load(f)
kind = crd["spec"]["names"]["kind"]

# (section, field) for every property: the section is the enclosing object's path, "[]" for
# array items and ".*" for map values, or the kind for top-level fields.
fields = []


def walk(schema, path):
    for key, sub in schema.items():
        if key == "properties":
            for name, prop in sub.items():
                fields.append((path or kind, name))
                walk(prop, f"{path}.{name}" if path else name)
        elif key == "items" and isinstance(sub, dict):
            walk(sub, f"{path}[]")
        elif key == "additionalProperties" and isinstance(sub, dict):
            walk(sub, f"{path}.*")
        elif key in ("allOf", "anyOf", "oneOf"):
            for alternative in sub:
                walk(alternative, path)
        elif key == "not":
            walk(sub, path)


for version in crd["spec"]["versions"]:
    walk(version["schema"]["openAPIV3Schema"], "")
if not fields:
    sys.exit(f"api reference: found no properties in {crd_path}")

# Rows of the reference under each heading that names a path in backticks.
documented = set()
section = None
with open(reference_path, encoding="utf-8") as f:
    for line in f:
        if line.startswith("#"):
            heading = re.search(r"`([^`]+)`\s*$", line)
            section = heading.group(1) if heading else None
            continue
        field = re.match(r"\| \[?`([^`]+)`", line)
        if section and field:
            documented.add((section, field.group(1)))

missing = [name if section == kind else f"{section}.{name}"
           for section, name in fields if (section, name) not in documented]
if missing:
    print("docs/api-reference.md has no row for these CRD fields:", file=sys.stderr)
    for name in missing:
        print(f"  {name}", file=sys.stderr)
    sys.exit(1)
print(f"api reference: up to date ({len(set(fields))} fields)")
PY

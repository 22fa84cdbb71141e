#!/usr/bin/env bash
# Fails when a Go file of either module lacks the license header of hack/boilerplate.go.txt
# (hack/add-boilerplate.sh adds it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
missing=$(git ls-files --cached --others --exclude-standard -- '*.go' | while read -r f; do
  [ -f "$f" ] || continue
  head -n 6 "$f" | grep -q 'Copyright The computedomain-operator Authors' || echo "$f"
done)
if [ -n "$missing" ]; then
  echo "verify: these Go files lack the license header (run hack/add-boilerplate.sh):" >&2
  echo "$missing" >&2
  exit 1
fi
echo "verify: every Go file carries the license header"

#!/usr/bin/env bash
# Puts the license header of hack/boilerplate.go.txt at the top of every Go file of both modules that lacks it.
# hack/verify-boilerplate.sh fails when one lacks it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
header=$(cat hack/boilerplate.go.txt)
git ls-files --cached --others --exclude-standard -- '*.go' | while read -r f; do
  [ -f "$f" ] || continue
  if ! head -n 6 "$f" | grep -q 'Copyright The computedomain-operator Authors'; then
    { printf '%s\n\n' "$header"; cat "$f"; } >"$f.tmp" && mv "$f.tmp" "$f"
  fi
done

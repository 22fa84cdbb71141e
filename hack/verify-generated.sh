#!/usr/bin/env bash
# Fails when the generated files (deepcopy code, CRD manifests) or the go.mod/go.sum files in the working tree
# are not what `make generate` and `go mod tidy` produce from the sources in the working tree. It compares
# against the working tree, not against git, so it also catches a type edited without regenerating before
# anything is committed. Stale files are left regenerated, ready to review and commit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

snapshot=$(mktemp -d)
trap 'rm -rf "$snapshot"' EXIT

generated() { # every checked-in generated file, plus the module files
  find api -name 'zz_generated*.go'
  find charts/computedomain-operator/crds -name '*.yaml' 2>/dev/null || true
  printf '%s\n' go.mod go.sum e2e/go.mod e2e/go.sum
}

generated | sort >"$snapshot/.before"
while read -r f; do mkdir -p "$snapshot/$(dirname "$f")" && cp "$f" "$snapshot/$f"; done <"$snapshot/.before"

make --no-print-directory generate >/dev/null
go mod tidy
(cd e2e && go mod tidy)

generated | sort >"$snapshot/.after"
status=0
if ! diff -u "$snapshot/.before" "$snapshot/.after" >&2; then
  echo "verify: the set of generated files changed (above)" >&2
  status=1
fi
while read -r f; do
  if ! diff -u "$snapshot/$f" "$f" >&2; then
    echo "verify: $f is stale" >&2
    status=1
  fi
done <"$snapshot/.before"

if [[ $status -ne 0 ]]; then
  echo "verify: FAILED: generated files or go.mod were out of date; they are regenerated now: review and commit them" >&2
  exit 1
fi
echo "verify: generated code, CRDs and go.mod files match their sources"

#!/usr/bin/env bash
# Builds the kube-apiserver and etcd binaries that envtest starts, from the e2e module (which pins
# k8s.io/kubernetes and go.etcd.io/etcd/server/v3 as tools), into the given directory. Each binary has a stamp
# naming the version it was built from; a binary whose stamp matches is not rebuilt, so a second `make test`
# costs nothing here.
set -euo pipefail

bin_dir=${1:?usage: testbins.sh BIN_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$bin_dir"

build() { # name package version
  local name=$1 pkg=$2 version=$3
  local stamp="$bin_dir/.$name.version"
  if [[ -x "$bin_dir/$name" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
    echo "testbins: $name $version is up to date"
    return
  fi
  echo "testbins: building $name $version (a cold build of kube-apiserver takes ~12 min on 2 cores)"
  local start=$SECONDS
  # No -trimpath: the apiserver's test helpers locate their certificates through runtime.Caller.
  (cd "$root/e2e" && go build -o "$bin_dir/$name" "$pkg")
  echo "$version" >"$stamp"
  echo "testbins: built $name in $((SECONDS - start))s"
}

build etcd go.etcd.io/etcd/server/v3 "${ETCD_VERSION:?}"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${KUBE_VERSION:?}"

#!/usr/bin/env bash
# Builds the Kubernetes binaries a kind node image needs (kubelet, kubeadm, kubectl, and the control-plane
# binaries kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy) from k8s.io/kubernetes at
# KUBE_VERSION, through the Go module proxy, one at a time (each is heavy on 2 cores), into OUT_DIR.
#
# The build module (OUT_DIR/../kube-build, generated, under bin/) takes the e2e module's replace directives so
# the staging modules are the same versions our e2e module and bin/kube-apiserver use, and the build cache of
# `make test` is reused. The binaries carry the version ldflags of a Kubernetes release build (kubeadm and
# kind read them). Each binary has a stamp; a binary whose stamp matches is not rebuilt.
set -euo pipefail

out_dir=${1:?usage: kube-binaries.sh OUT_DIR [binary...]}
shift
binaries=("$@")
[[ ${#binaries[@]} -gt 0 ]] || binaries=(kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy)
version=${KUBE_VERSION:?}
# The same cgo flags as the Makefile, so the build cache of make test (kube-apiserver, simcluster) is reused.
export CGO_CFLAGS=${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
mod_dir=$(dirname "$out_dir")/kube-build-$version

pkg_of() {
  case $1 in
    kubectl) echo k8s.io/kubernetes/cmd/kubectl ;;
    *) echo "k8s.io/kubernetes/cmd/$1" ;;
  esac
}

if [[ ! -f "$mod_dir/go.sum" ]]; then
  mkdir -p "$mod_dir"
  {
    echo "module kubebuild"
    echo
    echo "go 1.26.0"
    echo
    # The e2e module's replace block, without the replace of our own module.
    sed -n '/^replace (/,/^)/p' "$root/e2e/go.mod" | grep -v 'computedomain-operator =>'
    echo
    echo "require k8s.io/kubernetes $version"
  } >"$mod_dir/go.mod"
  cp "$root/e2e/go.sum" "$mod_dir/go.sum"
  echo "kube-binaries: resolving the build module in $mod_dir"
  tools=()
  for b in kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
    tools+=("$(pkg_of "$b")@$version")
  done
  (cd "$mod_dir" && go get -tool "${tools[@]}")
fi

minor=${version#v}; minor=${minor#*.}; minor=${minor%%.*}
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitCommit=0000000000000000000000000000000000000000 -X $p.gitTreeState=clean"
  ldflags+=" -X $p.buildDate=2026-01-01T00:00:00Z"
done

for b in "${binaries[@]}"; do
  stamp="$out_dir/.$b.version"
  if [[ -x "$out_dir/$b" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
    echo "kube-binaries: $b $version is up to date"
    continue
  fi
  echo "kube-binaries: building $b $version"
  start=$SECONDS
  (cd "$mod_dir" && go build -ldflags "$ldflags" -o "$out_dir/$b" "$(pkg_of "$b")")
  echo "$version" >"$stamp"
  echo "kube-binaries: built $b in $((SECONDS - start))s"
done

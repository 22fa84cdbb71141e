#!/usr/bin/env bash
# Builds, with no image registry, every image the operator's Dockerfile and a kind cluster need, from Debian's
# packages (mmdebstrap, apt inside docker build) and Go module sources:
#
#   base     debian:bookworm-slim, debian:trixie-slim   minbase root filesystems from deb.debian.org
#            golang:$GO_VERSION-bookworm                 the Dockerfile's build stage: Debian 12 + this machine's Go
#                                                        toolchain (exactly $GO_VERSION) + gcc for cgo
#            gcr.io/distroless/base-debian12:nonroot     the Dockerfile's runtime base: glibc, libssl, CA
#                                                        certificates, tzdata, passwd with nonroot (65532), no shell
#   node     $KIND_BASE_IMAGE      kind v0.33.0's base recipe (images/base in the module cache) on debian:trixie-slim
#                                  with Debian's systemd, containerd 1.7 (CDI on), runc and CNI plugins
#            $KIND_NODE_IMAGE      the node image: kubelet, kubeadm, kubectl and the control-plane images built
#                                  from k8s.io/kubernetes $KUBE_VERSION (hack/kube-binaries.sh), etcd (bin/etcd),
#                                  pause (built here), a CNI (ptp + host-local, routes kept by a small DaemonSet)
#
#   hack/offline-images.sh [base|node|all]      (default all)
#
# Each image carries a label with a stamp of its inputs (this script, the versions, kind's recipe, the binaries);
# an image whose stamp matches is not rebuilt, so a second run takes seconds. Names the Dockerfile uses are the
# upstream ones, so `make image` builds the Dockerfile unchanged here and with a registry alike.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-all}
GO_VERSION=${GO_VERSION:-1.26.8}
KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
KIND_VERSION=${KIND_VERSION:-v0.33.0}
ETCD_VERSION=${ETCD_VERSION:-v3.7.0}
KIND_BASE_IMAGE=${KIND_BASE_IMAGE:-computedomain-operator/kind-base:$KIND_VERSION-trixie}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-computedomain-operator/kind-node:$KUBE_VERSION}
BIN=${BIN:-$root/bin}
work=${OFFLINE_IMAGES_WORK:-$BIN/offline-images}
# docker build with BuildKit where the CLI has buildx, else Debian's docker 20.10 CLI (embedded BuildKit).
DOCKER=${DOCKER:-docker}
mkdir -p "$work"

# An image's stamp: the function that builds it (so an edit elsewhere in this script rebuilds nothing).
fn_sum() { declare -f "$1" | sha256sum | cut -c1-16; }
log() { echo "offline-images: $*"; }

stamp_of() { docker image inspect -f '{{ index .Config.Labels "cdo.offline.stamp" }}' "$1" 2>/dev/null || true; }

# fresh IMAGE STAMP: true when IMAGE exists with STAMP.
fresh() {
  if [[ "$(stamp_of "$1")" == "$2" ]]; then log "$1 is up to date"; return 0; fi
  return 1
}

timed() { # name cmd...
  local name=$1 start=$SECONDS; shift
  "$@"
  log "$name built in $((SECONDS - start))s"
}

debian_rootfs() { # suite tag
  local suite=$1 tag=$2 stamp; stamp="$(fn_sum debian_rootfs)-$1"
  fresh "$tag" "$stamp" && return
  log "building $tag from Debian $suite (mmdebstrap --variant=minbase)"
  rm -f "$work/$suite.tar"
  mmdebstrap --quiet --variant=minbase --include=ca-certificates \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    "$suite" "$work/$suite.tar" http://deb.debian.org/debian
  docker import --change "CMD [\"bash\"]" --change "LABEL cdo.offline.stamp=$stamp" "$work/$suite.tar" "$tag"
  rm -f "$work/$suite.tar"
}

golang_image() {
  local tag="golang:$GO_VERSION-bookworm" goroot
  goroot=$(go env GOROOT)
  local gover; gover=$("$goroot/bin/go" env GOVERSION)
  if [[ $gover != "go$GO_VERSION" ]]; then
    echo "offline-images: the Go toolchain here is $gover, the Dockerfile names $GO_VERSION" >&2; exit 2
  fi
  local stamp; stamp="$(fn_sum golang_image)-$gover-$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null | sha256sum | cut -c1-8)"
  fresh "$tag" "$stamp" && return
  log "building $tag: debian:bookworm-slim + $goroot ($gover) + gcc"
  local ctx="$work/golang"
  rm -rf "$ctx"; mkdir -p "$ctx"
  # The toolchain as installed here (what golang's image has under /usr/local/go), without the test data.
  tar -C "$goroot/.." --exclude='go/pkg/obj' --exclude='go/test' -cf "$ctx/go.tar" "$(basename "$goroot")"
  # This machine's extra CA certificates (an egress proxy's, say): the build stage downloads modules through
  # the same network as this machine, so it trusts what this machine trusts. None: nothing added.
  mkdir -p "$ctx/ca"
  cp /usr/local/share/ca-certificates/*.crt "$ctx/ca/" 2>/dev/null || true
  cat >"$ctx/Dockerfile" <<EOF
FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      ca-certificates git gcc libc6-dev make pkg-config openssh-client procps \\
    && rm -rf /var/lib/apt/lists/*
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null
ADD go.tar /usr/local/
ENV GOLANG_VERSION=$GO_VERSION GOTOOLCHAIN=local GOPATH=/go PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN mkdir -p /go/src /go/bin && chmod -R 1777 /go && go version
WORKDIR /go
LABEL cdo.offline.stamp=$stamp
EOF
  $DOCKER build -q -t "$tag" "$ctx" >/dev/null
  rm -rf "$ctx"
}

distroless_image() {
  local tag="gcr.io/distroless/base-debian12:nonroot" stamp; stamp=$(fn_sum distroless_image)
  fresh "$tag" "$stamp" && return
  log "building $tag: glibc, libssl3, CA certificates, tzdata, netbase from Debian 12; nonroot 65532; no shell"
  local ctx="$work/distroless"
  rm -rf "$ctx"; mkdir -p "$ctx"
  cat >"$ctx/Dockerfile" <<'EOF'
FROM debian:bookworm-slim AS pkgs
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libc6 libssl3 ca-certificates tzdata netbase \
    && rm -rf /var/lib/apt/lists/*
# The files of those packages (no docs), the CA bundle their scripts generated, and the distroless users.
RUN set -e; mkdir -p /rootfs/usr/lib /rootfs/usr/lib64 /rootfs/usr/bin /rootfs/usr/sbin; \
    for d in lib lib64 bin sbin; do [ -L /$d ] && ln -s "$(readlink /$d)" /rootfs/$d; done; \
    for p in libc6 libssl3 ca-certificates tzdata netbase; do \
      dpkg -L $p | while read -r f; do \
        case $f in /usr/share/doc*|/usr/share/man*|/usr/share/lintian*|/usr/share/locale*|/usr/sbin/*|/usr/bin/*) continue;; esac; \
        if [ -f "$f" ] || [ -L "$f" ]; then cp -a --parents "$f" /rootfs/; fi; \
      done; \
    done; \
    cp -a --parents /etc/ssl/certs /rootfs/; \
    mkdir -p /rootfs/tmp /rootfs/home/nonroot /rootfs/root /rootfs/var/lib/dpkg/status.d; \
    chmod 1777 /rootfs/tmp; chown 65532:65532 /rootfs/home/nonroot; chmod 700 /rootfs/root; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >/rootfs/etc/passwd; \
    printf 'root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n' >/rootfs/etc/group; \
    echo 'hosts: files dns' >/rootfs/etc/nsswitch.conf; \
    cp /etc/os-release /rootfs/etc/os-release
FROM scratch
COPY --from=pkgs /rootfs/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532
WORKDIR /home/nonroot
EOF
  echo "LABEL cdo.offline.stamp=$stamp" >>"$ctx/Dockerfile"
  $DOCKER build -q -t "$tag" "$ctx" >/dev/null
  rm -rf "$ctx"
}

# The image the demo manifests and e2e fixtures name (ubuntu:24.04): no registry here, so a stand-in from
# debian:trixie-slim under that tag (labelled cdo.offline.standin-for), loaded into kind by make test-kind. The
# fixtures only need bash, sleep and ls in it.
fixture_image() {
  local tag="ubuntu:24.04" stamp; stamp=$(fn_sum fixture_image)
  fresh "$tag" "$stamp" && return
  log "building $tag as a stand-in: debian:trixie-slim (the fixtures' containers run bash, sleep, ls)"
  local ctx="$work/fixture"
  rm -rf "$ctx"; mkdir -p "$ctx"
  printf 'FROM debian:trixie-slim\nLABEL cdo.offline.standin-for=ubuntu:24.04 cdo.offline.stamp=%s\n' "$stamp" >"$ctx/Dockerfile"
  $DOCKER build -q -t "$tag" "$ctx" >/dev/null
  rm -rf "$ctx"
}

build_base() {
  timed debian:bookworm-slim debian_rootfs bookworm debian:bookworm-slim
  timed debian:trixie-slim debian_rootfs trixie debian:trixie-slim
  timed "golang:$GO_VERSION-bookworm" golang_image
  timed gcr.io/distroless/base-debian12:nonroot distroless_image
  timed "ubuntu:24.04 (fixture stand-in)" fixture_image
}

case $what in
  base) build_base ;;
  node) "$root/hack/kind-node-image.sh" ;;
  all) build_base; "$root/hack/kind-node-image.sh" ;;
  *) echo "usage: $0 [base|node|all]" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# The kind node image for KUBE_VERSION, built with no image registry (called by hack/offline-images.sh node).
#
# 1. KIND_BASE_IMAGE: kind's base recipe (sigs.k8s.io/kind@KIND_VERSION/images/base in the Go module cache: its
#    files, units, entrypoint and package list) on debian:trixie-slim, with Debian 13's containerd 1.7, runc and
#    containernetworking-plugins in place of the source builds from GitHub that kind's Dockerfile makes; CDI on
#    in containerd's config (enable_cdi, /etc/cdi and /var/run/cdi).
# 2. The images a kubeadm cluster runs, under the names kubeadm and containerd ask for: kube-apiserver,
#    kube-controller-manager, kube-scheduler and kube-proxy (our builds from k8s.io/kubernetes, on
#    debian:trixie-slim), etcd (bin/etcd, go.etcd.io/etcd/server/v3 ETCD_VERSION), pause (a 20-line C program
#    built here, static), and the CNI DaemonSet's image (kubectl + iproute2: ptp + host-local on each node's
#    podCIDR and a route to every other node's podCIDR, which is what kindnet does, without kindnet's image).
# 3. KIND_NODE_IMAGE: what `kind build node-image` does, by hand: binaries into /usr/bin, /kind/version, the
#    default CNI and storage manifests, images imported into containerd's k8s.io namespace, `docker commit`.
#    Ours besides: the mock NVIDIA driver's user-space files under MOCK_DRIVER_ROOT (hack/mock-driver-root, the
#    driver version of the mock profile MOCK_PROFILE), the driverRoot of the chart's ci/kind-values.yaml, so that
#    the GPU plugin's CDI specs mount the driver's libraries and tools into GPU containers as on a GPU node.
#    (kind's own builder would `ctr content fetch` every image it did not build from a registry.)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
KIND_VERSION=${KIND_VERSION:-v0.33.0}
ETCD_VERSION=${ETCD_VERSION:-v3.7.0}
KIND_BASE_IMAGE=${KIND_BASE_IMAGE:-computedomain-operator/kind-base:$KIND_VERSION-trixie}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-computedomain-operator/kind-node:$KUBE_VERSION}
CNI_IMAGE=${CNI_IMAGE:-computedomain-operator/kind-cni:$KUBE_VERSION}
MOCK_PROFILE=${MOCK_PROFILE:-gb200-nvl72}
MOCK_DRIVER_ROOT=${MOCK_DRIVER_ROOT:-/opt/nvidia-mock-driver}
BIN=${BIN:-$root/bin}
DOCKER=${DOCKER:-docker}
kube_bin=$BIN/kube/$KUBE_VERSION
work=$BIN/offline-images/node
kind_src=$(go env GOMODCACHE)/sigs.k8s.io/kind@$KIND_VERSION
log() { echo "kind-node-image: $*"; }
stamp_of() { docker image inspect -f '{{ index .Config.Labels "cdo.offline.stamp" }}' "$1" 2>/dev/null || true; }
mkdir -p "$work"

[[ -d $kind_src/images/base ]] || (cd "$root" && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" >/dev/null)

self_sum=$(sha256sum "$0" | cut -c1-12)

# ---- 1. base image ----
# Its stamp: the Dockerfile below, kind's files and the debian:trixie-slim it starts from.
ctx=$work/base
rm -rf "$ctx"; mkdir -p "$ctx"
cp -r "$kind_src/images/base/files" "$ctx/files"
chmod -R u+w "$ctx"
cat >"$ctx/Dockerfile" <<EOF
# kind $KIND_VERSION images/base/Dockerfile, with Debian's containerd, runc and CNI plugins (no GitHub here).
FROM debian:trixie-slim
COPY files/usr/local/bin/ /usr/local/bin/
COPY files/kind/ /kind/
COPY files/LICENSES/ /LICENSES/
COPY files/etc/ /etc/
RUN chmod 0755 /usr/local/bin/* /kind /kind/bin /kind/bin/* \\
    && find /etc/systemd /etc/containerd /etc/default /etc/sysctl.d /etc/crictl.yaml -type f -exec chmod 0644 {} + \\
    && echo 'Dpkg::Options {"--force-confold";};' >/etc/apt/apt.conf.d/90-kind-keep-config \\
    && echo "Installing Packages ..." \\
    && DEBIAN_FRONTEND=noninteractive clean-install \\
      systemd \\
      conntrack iptables nftables iproute2 ethtool util-linux mount kmod \\
      libseccomp2 pigz fuse-overlayfs \\
      nfs-common open-iscsi \\
      e2fsprogs \\
      bash ca-certificates curl jq procps \\
      containerd runc containernetworking-plugins \\
    && find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete \\
    && rm -f /lib/systemd/system/multi-user.target.wants/* \\
    && rm -f /etc/systemd/system/*.wants/* \\
    && rm -f /lib/systemd/system/local-fs.target.wants/* \\
    && rm -f /lib/systemd/system/sockets.target.wants/*udev* \\
    && rm -f /lib/systemd/system/sockets.target.wants/*initctl* \\
    && rm -f /lib/systemd/system/basic.target.wants/* \\
    && echo "ReadKMsg=no" >> /etc/systemd/journald.conf \\
    && ln -sf /usr/lib/systemd/systemd /sbin/init
# Debian's binaries where kind's units and scripts look for them.
RUN for b in containerd containerd-shim-runc-v2 ctr; do ln -sf /usr/bin/\$b /usr/local/bin/\$b; done \\
    && ln -sf "\$(command -v runc)" /usr/local/sbin/runc \\
    && mkdir -p /opt/cni/bin && for p in host-local loopback ptp portmap bridge; do ln -sf /usr/lib/cni/\$p /opt/cni/bin/\$p; done \\
    && containerd --version && runc --version
RUN ctr oci spec \\
        | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \\
        | jq 'del(.process.rlimits)' \\
        > /etc/containerd/cri-base.json
# CDI: containerd 1.7 applies the CDI specs of a pod's claims only with enable_cdi (on by default from 2.0).
RUN sed -i 's|^\[plugins."io.containerd.grpc.v1.cri"\]\$|&\n  enable_cdi = true\n  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]|' /etc/containerd/config.toml \\
    && grep -q 'enable_cdi = true' /etc/containerd/config.toml
# Hosts without CAP_SYS_RESOURCE (the CI machines): runc cannot lower a container's oom_score_adj below
# containerd's own ("failed to update /proc/self/oom_score_adj: Permission denied", every pod sandbox failed).
# restrict_oom_score_adj clamps it to containerd's own, as kind does for rootless nodes.
RUN sed -i 's|restrict_oom_score_adj = false|restrict_oom_score_adj = true|' /etc/containerd/config.toml \\
    && grep -q 'restrict_oom_score_adj = true' /etc/containerd/config.toml
RUN systemctl enable kubelet.service \\
    && systemctl enable containerd.service \\
    && systemctl enable undo-mount-hacks.service \\
    && systemctl mask systemd-binfmt.service \\
    && mkdir -p /etc/kubernetes/manifests
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]
EOF
base_stamp=$({ cat "$ctx/Dockerfile"; find "$ctx/files" -type f | sort | xargs cat; docker image inspect -f '{{.Id}}' debian:trixie-slim; } | sha256sum | cut -c1-16)
if [[ "$(stamp_of "$KIND_BASE_IMAGE")" == "$base_stamp" ]]; then
  log "$KIND_BASE_IMAGE is up to date"
else
  start=$SECONDS
  log "building $KIND_BASE_IMAGE from kind $KIND_VERSION's base recipe and Debian 13 packages"
  echo "LABEL cdo.offline.stamp=$base_stamp" >>"$ctx/Dockerfile"
  $DOCKER build -q -t "$KIND_BASE_IMAGE" "$ctx" >/dev/null
  rm -rf "$ctx"
  log "$KIND_BASE_IMAGE built in $((SECONDS - start))s"
fi

[[ ${KIND_BASE_ONLY:-} == 1 ]] && exit 0

# ---- 2. component images ----
KUBE_BINARIES=(kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy)
KUBE_VERSION=$KUBE_VERSION "$root/hack/kube-binaries.sh" "$kube_bin" "${KUBE_BINARIES[@]}"
KUBE_VERSION=$KUBE_VERSION ETCD_VERSION=$ETCD_VERSION "$root/hack/testbins.sh" "$BIN" >/dev/null
# kubeadm's image names and versions for KUBE_VERSION (constants of the kubeadm we build).
etcd_tag=$(grep -o 'DefaultEtcdVersion = "[^"]*"' "$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION/cmd/kubeadm/app/constants/constants.go" | cut -d'"' -f2)
pause_tag=$(grep -o 'PauseVersion = "[^"]*"' "$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION/cmd/kubeadm/app/constants/constants.go" | cut -d'"' -f2)
sandbox_tag=$(docker run --rm --entrypoint cat "$KIND_BASE_IMAGE" /etc/containerd/config.toml | sed -n 's/.*sandbox_image = "\(.*\)"/\1/p')
images=()

component() { # tag stamp dockerfile-body (context: $work/ctx)
  local tag=$1 body=$3 stamp
  stamp="$2-$({ echo "$body"; docker image inspect -f '{{.Id}}' debian:trixie-slim; } | sha256sum | cut -c1-8)"
  images+=("$tag")
  if [[ "$(stamp_of "$tag")" == "$stamp" ]]; then return; fi
  printf '%s\nLABEL cdo.offline.stamp=%s\n' "$body" "$stamp" >"$work/ctx/Dockerfile"
  $DOCKER build -q -t "$tag" "$work/ctx" >/dev/null
  log "built $tag"
}

rm -rf "$work/ctx"; mkdir -p "$work/ctx"
for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl; do cp "$kube_bin/$b" "$work/ctx/"; done
cp "$BIN/etcd" "$work/ctx/etcd"
cat >"$work/ctx/pause.c" <<'EOF'
/* The pod sandbox's process: sleeps until SIGINT/SIGTERM, reaps orphans (as registry.k8s.io/pause does). */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void done(int s) { (void)s; _exit(0); }
static void reap(int s) { (void)s; while (waitpid(-1, NULL, WNOHANG) > 0) {} }
int main(void) {
  struct sigaction a = {0};
  a.sa_handler = done; sigaction(SIGINT, &a, NULL); sigaction(SIGTERM, &a, NULL);
  a.sa_handler = reap; a.sa_flags = SA_NOCLDSTOP; sigaction(SIGCHLD, &a, NULL);
  for (;;) pause();
}
EOF
gcc -static -O2 -o "$work/ctx/pause" "$work/ctx/pause.c"
cat >"$work/ctx/cni-routes.sh" <<'EOF'
#!/bin/bash
# The node's CNI config (ptp + host-local on its podCIDR) and a route to every other node's podCIDR.
set -u
: "${NODE_NAME:?}"
conf=/etc/cni/net.d/10-kindnet.conflist
while true; do
  cidr=$(kubectl get node "$NODE_NAME" -o jsonpath='{.spec.podCIDR}' 2>/dev/null)
  if [[ -n $cidr ]]; then
    cat >"$conf.tmp" <<CONF
{"cniVersion": "0.4.0", "name": "kindnet", "plugins": [
  {"type": "ptp", "mtu": 1500, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": "/run/cni-ipam-state", "routes": [{"dst": "0.0.0.0/0"}],
            "ranges": [[{"subnet": "$cidr"}]]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CONF
    cmp -s "$conf.tmp" "$conf" || { mv -f "$conf.tmp" "$conf"; echo "wrote $conf for $cidr"; }
    rm -f "$conf.tmp"
  fi
  kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' 2>/dev/null |
    while read -r name podcidr ip; do
      [[ $name == "$NODE_NAME" || -z $podcidr || -z $ip ]] && continue
      ip route replace "$podcidr" via "$ip" && true
    done
  sleep 5
done
EOF
chmod +x "$work/ctx/cni-routes.sh"
sum() { sha256sum "$@" | sha256sum | cut -c1-12; }

for b in kube-apiserver kube-controller-manager kube-scheduler; do
  component "registry.k8s.io/$b:$KUBE_VERSION" "$(sum "$work/ctx/$b")" \
    "FROM debian:trixie-slim
COPY $b /usr/local/bin/$b"
done
component "registry.k8s.io/kube-proxy:$KUBE_VERSION" "$(sum "$work/ctx/kube-proxy")" \
  "FROM debian:trixie-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends iptables nftables conntrack ipset kmod && rm -rf /var/lib/apt/lists/*
COPY kube-proxy /usr/local/bin/kube-proxy"
component "registry.k8s.io/etcd:$etcd_tag" "$(sum "$work/ctx/etcd")" \
  "FROM debian:trixie-slim
COPY etcd /usr/local/bin/etcd"
for t in "registry.k8s.io/pause:$pause_tag" "$sandbox_tag"; do
  component "$t" "$(sum "$work/ctx/pause.c")" \
    "FROM scratch
COPY pause /pause
USER 65535:65535
ENTRYPOINT [\"/pause\"]"
done
component "$CNI_IMAGE" "$(sum "$work/ctx/kubectl" "$work/ctx/cni-routes.sh")" \
  "FROM debian:trixie-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends iproute2 && rm -rf /var/lib/apt/lists/*
COPY kubectl cni-routes.sh /usr/local/bin/
ENTRYPOINT [\"/usr/local/bin/cni-routes.sh\"]"

# ---- 3. the node image ----
mock_driver=$work/mock-driver
rm -rf "$mock_driver"
(cd "$root" && go run ./hack/mock-driver-root --profile "$MOCK_PROFILE" "$mock_driver")
mock_driver_sum=$(cd "$mock_driver" && find . | sort | tar -cf - --no-recursion --mtime=@0 --owner=0 --group=0 -T - | sha256sum | cut -c1-12)
node_stamp="$self_sum-$base_stamp-$(for i in "${images[@]}"; do docker image inspect -f '{{.Id}}' "$i"; done | sha256sum | cut -c1-12)-$(sum "$kube_bin"/kubelet "$kube_bin"/kubeadm "$kube_bin"/kubectl)-$mock_driver_sum"
if [[ "$(stamp_of "$KIND_NODE_IMAGE")" == "$node_stamp" ]]; then
  log "$KIND_NODE_IMAGE is up to date"
  exit 0
fi
start=$SECONDS
log "assembling $KIND_NODE_IMAGE"
cid=kind-build-cdo-$$
trap 'docker rm -f -v "$cid" >/dev/null 2>&1 || true' EXIT
docker run -d --entrypoint=sleep --name="$cid" --security-opt seccomp=unconfined "$KIND_BASE_IMAGE" infinity >/dev/null
for b in kubelet kubeadm kubectl; do
  docker cp "$kube_bin/$b" "$cid:/usr/bin/$b"
  docker exec "$cid" chown root:root "/usr/bin/$b"
  docker exec "$cid" chmod 0755 "/usr/bin/$b"
done
docker exec "$cid" bash -c "mkdir -p /kind/manifests && echo -n $KUBE_VERSION >/kind/version"
docker exec "$cid" mkdir -p "$MOCK_DRIVER_ROOT"
docker cp "$mock_driver/." "$cid:$MOCK_DRIVER_ROOT"
docker exec "$cid" chown -R root:root "$MOCK_DRIVER_ROOT"
docker exec -i "$cid" bash -c 'cat >/kind/manifests/default-cni.yaml' <<EOF
# The CNI of this offline node image (kind's default CNI is kindnet, whose image is not built here): on every
# node, ptp + host-local on the node's podCIDR and a route to each other node's podCIDR via its InternalIP.
apiVersion: v1
kind: ServiceAccount
metadata: {name: kindnet, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kindnet}
rules:
- {apiGroups: [""], resources: [nodes], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kindnet}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kindnet}
subjects: [{kind: ServiceAccount, name: kindnet, namespace: kube-system}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kindnet, namespace: kube-system, labels: {app: kindnet}}
spec:
  selector: {matchLabels: {app: kindnet}}
  template:
    metadata: {labels: {app: kindnet}}
    spec:
      hostNetwork: true
      serviceAccountName: kindnet
      tolerations: [{operator: Exists}]
      priorityClassName: system-node-critical
      containers:
      - name: kindnet-cni
        image: $CNI_IMAGE
        imagePullPolicy: Never
        env: [{name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
        securityContext: {privileged: false, capabilities: {add: [NET_RAW, NET_ADMIN]}}
        volumeMounts: [{name: cni-cfg, mountPath: /etc/cni/net.d}]
        resources: {requests: {cpu: 10m, memory: 20Mi}}
      volumes: [{name: cni-cfg, hostPath: {path: /etc/cni/net.d, type: DirectoryOrCreate}}]
EOF
docker exec -i "$cid" bash -c 'cat >/kind/manifests/default-storage.yaml' <<'EOF'
# No dynamic provisioner in this offline node image (kind's local-path-provisioner image is not built here).
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
EOF
docker exec "$cid" bash -c 'nohup containerd >/tmp/containerd.log 2>&1 &'
docker exec "$cid" bash -c 'for i in $(seq 1 100); do [ -S /run/containerd/containerd.sock ] && ctr version >/dev/null 2>&1 && exit 0; sleep 0.2; done; cat /tmp/containerd.log; exit 1'
for i in "${images[@]}"; do
  docker save "$i" | docker exec -i "$cid" ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests - >/dev/null
done
docker exec "$cid" ctr --namespace=k8s.io images list -q | grep -v '^sha256:' | sed 's/^/kind-node-image: in the node image: /'
docker exec "$cid" bash -c 'pkill containerd; for i in $(seq 1 50); do pgrep containerd >/dev/null || exit 0; sleep 0.2; done'
docker exec "$cid" rm -rf /tmp/containerd.log
docker commit \
  --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
  --change 'ENV HTTP_PROXY="" HTTPS_PROXY="" NO_PROXY=""' \
  --change "LABEL cdo.offline.stamp=$node_stamp" \
  "$cid" "$KIND_NODE_IMAGE" >/dev/null
log "$KIND_NODE_IMAGE built in $((SECONDS - start))s"

#!/usr/bin/env bash
# make test-kind: the operator on a real kind cluster, with no image registry.
#
#   1. images       hack/offline-images.sh (base images of the Dockerfile, kind node image; cached by stamps)
#   2. make image   the Dockerfile, unchanged; `docker run --rm IMAGE <binary> --help` for every binary in it
#   3. cluster      kind create cluster --config hack/kind-config.yaml (a control plane and two GB200 workers)
#   4. install      kind load docker-image; helm install with the chart's ci/kind-values.yaml, --wait
#   5. node checks  hack/kind-checks.sh: what only a real node shows, from inside running containers
#   6. e2e          the e2e suite (e2e/suite) against the cluster (E2E_KUBECONFIG); specs that need the
#                   simulated cluster's internals skip themselves, naming why
#   7. delete       kind delete cluster (KEEP_CLUSTER=1 keeps it; logs under bin/kind-logs on a failure)
#
# Needs a Docker engine (make test-kind starts one through hack/docker-engine.sh). Times go to stdout and
# bin/test-kind.times.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
BIN=${BIN:-$root/bin}
KIND=${KIND:-$BIN/kind}
HELM=${HELM:-$BIN/helm}
DOCKER=${DOCKER:-docker}
IMAGE=${IMAGE:-ghcr.io/computedomain-operator/computedomain-operator:dev}
KIND_CLUSTER=${KIND_CLUSTER:-computedomain-operator}
KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
# The suite's specs that run on this kind cluster (2 mock GB200 workers of 4 GPUs, no MIG or HGX node):
# E2E_FOCUS="" runs the whole suite (the others fail or wait out their timeouts; see docs/kind.md).
# "A Job of GPU pods" runs nvidia-smi in its pods: the mock driver's, mounted from the node's driver root.
E2E_FOCUS=${E2E_FOCUS-The GPU cluster has|A pod with a GPU claim|A Job of GPU pods|An unmodified pod asking for nvidia.com/gpu|A manifest of an older resource.k8s.io version|A gang of two GPU pods|The kubelet plugins of the chart|The two-pod ComputeDomain demo|Two teams|Two tenants in two namespaces}
export KUBE_VERSION KIND_VERSION ETCD_VERSION BIN DOCKER
kubeconfig=$BIN/kind.kubeconfig
times=$BIN/test-kind.times
: >"$times"
t0=$SECONDS

step() { # name cmd...
  local name=$1 start=$SECONDS rc=0; shift
  echo "=== test-kind: $name"
  "$@" || rc=$?
  printf '%-34s %5ss%s\n' "$name" "$((SECONDS - start))" "$([[ $rc == 0 ]] || echo "  FAILED (exit $rc)")" | tee -a "$times"
  return $rc
}

cleanup() {
  local rc=$?
  if [[ $rc != 0 ]] && "$KIND" get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
    echo "test-kind: failed (exit $rc); cluster logs into $BIN/kind-logs"
    "$KIND" export logs --name "$KIND_CLUSTER" "$BIN/kind-logs" >/dev/null 2>&1 || true
  fi
  if [[ ${KEEP_CLUSTER:-} != 1 ]] && "$KIND" get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
    step "kind delete cluster" "$KIND" delete cluster --name "$KIND_CLUSTER" || true
  fi
  printf '%-34s %5ss\n' "total" "$((SECONDS - t0))" | tee -a "$times"
  echo "test-kind: times in $times"
  exit $rc
}
trap cleanup EXIT

binaries() { # the binaries the Dockerfile's final stage copies into /usr/bin
  sed -n 's|^COPY --from=build \(.*\) /usr/bin/$|\1|p' Dockerfile | tr ' ' '\n' | sed 's|^/out/||'
}

image_help() {
  local b out
  for b in $(binaries); do
    if ! out=$(docker run --rm "$IMAGE" "$b" --help 2>&1); then
      echo "docker run --rm $IMAGE $b --help failed:"; echo "$out"; return 1
    fi
    echo "docker run --rm $IMAGE $b --help: ok ($(echo "$out" | grep -c -- '--') flag lines; $(echo "$out" | head -1))"
  done
  echo "runs as: $(docker image inspect -f '{{.Config.User}}' "$IMAGE")"
}

create_cluster() {
  if "$KIND" get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
    echo "test-kind: deleting the cluster $KIND_CLUSTER left from an earlier run"
    "$KIND" delete cluster --name "$KIND_CLUSTER"
  fi
  "$KIND" create cluster --name "$KIND_CLUSTER" --config hack/kind-config.yaml --kubeconfig "$kubeconfig" --wait 5m
  kubectl_ wait --for=condition=Ready nodes --all --timeout=3m
  kubectl_ get nodes -o wide
}

kubectl_() { "$BIN/kube/$KUBE_VERSION/kubectl" --kubeconfig "$kubeconfig" "$@"; }

install() {
  # The operator's image, and the image the demo manifests and e2e fixtures name (a stand-in, see offline-images.sh).
  "$KIND" load docker-image --name "$KIND_CLUSTER" "$IMAGE" ubuntu:24.04
  "$HELM" --kubeconfig "$kubeconfig" upgrade --install cdo charts/computedomain-operator -n computedomain-operator \
    --create-namespace --wait --timeout 5m -f charts/computedomain-operator/ci/kind-values.yaml \
    --set image.repository="${IMAGE%:*}" --set image.tag="${IMAGE##*:}" --set image.pullPolicy=Never
  kubectl_ -n computedomain-operator get pods -o wide
  kubectl_ get resourceslices
}

e2e() {
  local args=()
  [[ -n $E2E_FOCUS ]] && args+=(-ginkgo.focus "$E2E_FOCUS")
  (cd e2e && E2E_KUBECONFIG=$kubeconfig GOFLAGS="${E2E_GOFLAGS:-}" go test -v -p 1 -timeout 40m ./suite/ -args -ginkgo.v "${args[@]}") \
    2>&1 | tee "$BIN/test-kind.e2e.log"
}

step "images (hack/offline-images.sh)" hack/offline-images.sh all
step "make image (Dockerfile)" env DOCKER_BUILDKIT=1 "$DOCKER" build -q -t "$IMAGE" .
step "docker run IMAGE <binary> --help" image_help
step "kind create cluster" create_cluster
step "kind load + helm install --wait" install
if [[ -x hack/kind-checks.sh ]]; then
  step "node checks (hack/kind-checks.sh)" env KUBECTL="$BIN/kube/$KUBE_VERSION/kubectl" KUBECONFIG="$kubeconfig" HELM="$HELM" \
    RELEASE=cdo NAMESPACE=computedomain-operator KIND_CLUSTER="$KIND_CLUSTER" hack/kind-checks.sh
fi
step "e2e suite on kind" e2e

#!/usr/bin/env bash
# What only a real node shows (issue 23 item 4), asserted from inside running containers of a kind cluster with
# the chart installed (make test-kind runs this after helm install):
#   - every container of the release's Deployments and DaemonSets runs as the user the installed chart says
#     (its rendered securityContext.runAsUser, else the image's USER), read from the process on the node;
#   - both kubelet plugins registered with the real kubelet (their sockets in plugins_registry);
#   - the node-scoped slice policy: a plugin's own projected service account token (read from its pod's volume
#     on its node) may update its node's ResourceSlice and is denied, by the policy, another node's;
#   - a GPU pod (demo/gpu-claim.yaml) sees its device nodes, NVIDIA_* environment and the driver-library mounts
#     that containerd injected from the CDI spec our GPU plugin wrote on the node (the spec is printed next to
#     what the container sees; each device node, variable and mount of the spec is checked inside the container);
#   - a 2-node ComputeDomain (demo/computedomain-pods.yaml) becomes Ready, its IMEX daemons run as pods of the
#     chart, and both pods get the domain's channel device as the CDI spec of their channel claim names it.
#
# Env: KUBECTL, KUBECONFIG, HELM, RELEASE (cdo), NAMESPACE (computedomain-operator), KIND_CLUSTER.
set -euo pipefail

KUBECTL=${KUBECTL:-kubectl}
root=$(cd "$(dirname "$0")/.." && pwd)
HELM=${HELM:-$root/bin/helm}
RELEASE=${RELEASE:-cdo}
NAMESPACE=${NAMESPACE:-computedomain-operator}
KIND_CLUSTER=${KIND_CLUSTER:-computedomain-operator}
k() { "$KUBECTL" "$@"; }
ns=kind-checks
work=$(mktemp -d)
fail() { echo "kind-checks: FAIL: $*" >&2; exit 1; }
say() { echo "kind-checks: $*"; }

k delete namespace "$ns" --ignore-not-found --wait >/dev/null
k create namespace "$ns" >/dev/null
trap 'k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

# ---- users: every container of the release's Deployments and DaemonSets, as the node's kernel sees it ----
# The chart as installed (helm get manifest), as JSON: per container the user its securityContext (container,
# then pod) names, else the image's USER.
"$HELM" get manifest "$RELEASE" -n "$NAMESPACE" | k create --dry-run=client -o json -f - >"$work/manifest.json"
jq -rs '[.[] | if .kind == "List" then .items[] else . end] | .[] | select(.kind == "Deployment" or .kind == "DaemonSet") | . as $w
  | .spec.template.spec.containers[]
  | [$w.kind, $w.metadata.name, ($w.spec.selector.matchLabels | to_entries | map("\(.key)=\(.value)") | join(",")),
     .name, .image, (.securityContext.runAsUser // $w.spec.template.spec.securityContext.runAsUser // "image") | tostring]
  | join(" ")' "$work/manifest.json" >"$work/containers"
[[ -s $work/containers ]] || fail "helm get manifest $RELEASE: no Deployment or DaemonSet containers"
while read -r kind name selector container image want; do
  if [[ $want == image ]]; then
    want=$(docker image inspect -f '{{.Config.User}}' "$image" 2>/dev/null) || fail "$kind/$name $container: no runAsUser in the chart and image $image is not in the local engine"
    want=${want%%:*}
    [[ $want =~ ^[0-9]+$ ]] || fail "$kind/$name $container: image $image's USER is ${want:-empty (root)}, not a numeric user"
    src="image $image's USER"
  else
    src="the chart's securityContext.runAsUser"
  fi
  for _ in $(seq 1 90); do # (the IMEX daemons start once the GPU plugin labeled the node's clique)
    pods=$(k -n "$NAMESPACE" get pods -l "$selector" -o json)
    n=$(echo "$pods" | jq '[.items[] | select(.status.phase == "Running")] | length')
    [[ $n -gt 0 ]] && break
    sleep 2
  done
  [[ $n -gt 0 ]] || fail "$kind/$name: no running pod (selector $selector) in 180s"
  while read -r pod node cid; do
    [[ -n $cid ]] || fail "$kind/$name pod $pod: container $container has no container ID"
    pid=$(docker exec "$node" ctr -n k8s.io task ls | awk -v id="${cid#containerd://}" '$1 == id {print $2}')
    [[ -n $pid ]] || fail "$kind/$name pod $pod: no containerd task for $container (${cid#containerd://}) on $node"
    read -r _ ruid euid _ < <(docker exec "$node" grep '^Uid:' "/proc/$pid/status")
    say "$kind/$name pod $pod container $container on $node: pid $pid runs as uid $ruid (effective $euid); $src: $want"
    [[ $ruid == "$want" && $euid == "$want" ]] || fail "$kind/$name $container runs as uid $ruid/$euid, the chart says $want ($src)"
  done < <(echo "$pods" | jq -r --arg c "$container" '.items[] | select(.status.phase == "Running")
    | [.metadata.name, .spec.nodeName, (.status.containerStatuses[] | select(.name == $c) | .containerID)] | join(" ")')
done <"$work/containers"

# ---- plugin registration with the real kubelet ----
plugin_pods=$(k -n "$NAMESPACE" get pods -l app.kubernetes.io/name=compute-domain-kubelet-plugin --field-selector=status.phase=Running \
  -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid} {.spec.nodeName}{"\n"}{end}')
[[ $(echo "$plugin_pods" | grep -c .) -ge 2 ]] || fail "want kubelet plugin pods on at least 2 nodes, have: $plugin_pods"
read -r plugin_a uid_a node_a < <(echo "$plugin_pods" | sed -n 1p)
read -r _ _ node_b < <(echo "$plugin_pods" | sed -n 2p)
for node in "$node_a" "$node_b"; do
  reg=$(docker exec "$node" ls /var/lib/kubelet/plugins_registry)
  say "plugins_registry on $node: $(echo $reg)"
  echo "$reg" | grep -q 'gpu.nvidia.com' || fail "gpu.nvidia.com is not registered with the kubelet on $node"
  echo "$reg" | grep -q 'compute-domain.nvidia.com' || fail "compute-domain.nvidia.com is not registered on $node"
done

# ---- the node-scoped slice policy, with a plugin's own token ----
# The token the kubelet projected into plugin pod $plugin_a (bound to the pod, so to node $node_a).
token=$(docker exec "$node_a" sh -c "cat /var/lib/kubelet/pods/$uid_a/volumes/kubernetes.io~projected/kube-api-access-*/token")
[[ -n $token ]] || fail "no projected service account token of pod $plugin_a on $node_a"
k config view --raw --minify -o json >"$work/admin.json"
jq -n --slurpfile a "$work/admin.json" --arg t "$token" '{apiVersion: "v1", kind: "Config",
  clusters: [{name: "kind", cluster: $a[0].clusters[0].cluster}], users: [{name: "plugin", user: {token: $t}}],
  contexts: [{name: "plugin", context: {cluster: "kind", user: "plugin"}}], "current-context": "plugin"}' >"$work/plugin.kubeconfig"
as_plugin() { "$KUBECTL" --kubeconfig "$work/plugin.kubeconfig" "$@"; }
whoami=$(as_plugin auth whoami -o json | jq -r '.status.userInfo | "\(.username), node \(.extra["authentication.kubernetes.io/node-name"][0])"')
say "plugin pod $plugin_a's projected token acts as $whoami"
[[ $whoami == *", node $node_a" ]] || fail "plugin pod $plugin_a's token is not bound to its node $node_a: $whoami"
touch_slice() { # node: a server-side dry-run update, as the plugin, of a ResourceSlice of node (admission runs, nothing is stored)
  local slice
  slice=$(k get resourceslices --field-selector "spec.nodeName=$1" -o jsonpath='{.items[0].metadata.name}')
  [[ -n $slice ]] || fail "node $1 has no ResourceSlice"
  k get resourceslice "$slice" -o json | jq '.metadata.labels["kind-checks.computedomain-operator.io/touched"] = "true"' \
    | as_plugin replace --dry-run=server -f - 2>&1
}
out=$(touch_slice "$node_a") || fail "the plugin on $node_a may not update its own node's ResourceSlice: $out"
say "as plugin $plugin_a (node $node_a): update of $node_a's ResourceSlice: allowed ($out)"
if out=$(touch_slice "$node_b"); then fail "the plugin on $node_a updated $node_b's ResourceSlice: $out"; fi
echo "$out" | grep -q "ValidatingAdmissionPolicy 'computedomain-operator-node-scoped-slices'" \
  || fail "the update of $node_b's slice was denied, but not by the node-scoped policy: $out"
say "as plugin $plugin_a (node $node_a): update of $node_b's ResourceSlice: denied: $out"

# ---- a GPU pod: what containerd injected from our CDI spec ----
k -n "$ns" apply -f "$root/demo/gpu-claim.yaml" >/dev/null
k -n "$ns" wait --for=condition=Ready pod/gpu-pod --timeout=120s >/dev/null || { k -n "$ns" describe pod gpu-pod | tail -20; fail "gpu-pod not Ready"; }
node=$(k -n "$ns" get pod gpu-pod -o jsonpath='{.spec.nodeName}')
claim=$(k -n "$ns" get pod gpu-pod -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}')
uid=$(k -n "$ns" get resourceclaim "$claim" -o jsonpath='{.metadata.uid}')
spec=$(docker exec "$node" sh -c "grep -l '$uid' /var/run/cdi/* | head -1")
[[ -n $spec ]] || fail "no CDI spec for claim $claim ($uid) under /var/run/cdi on $node"
docker exec "$node" cat "$spec" >"$work/gpu-spec.json"
say "gpu-pod on $node, claim $claim; the CDI spec our plugin wrote: $node:$spec"
jq -c '{kind, devices: [.devices[] | {name, env: .containerEdits.env, deviceNodes: [.containerEdits.deviceNodes[]? | .path], mounts: [.containerEdits.mounts[]? | .containerPath]}], common: {env: .containerEdits.env, deviceNodes: [.containerEdits.deviceNodes[]? | .path], mounts: [.containerEdits.mounts[]? | "\(.hostPath) -> \(.containerPath)"]}}' "$work/gpu-spec.json"
say "inside gpu-pod (kubectl exec):"
inside=$(k -n "$ns" exec gpu-pod -- sh -c 'ls -l /dev/nvidia* 2>&1; env | grep ^NVIDIA_ | sort')
echo "$inside" | sed 's/^/    /'
for dev in $(jq -r '[.containerEdits.deviceNodes[]?, .devices[].containerEdits.deviceNodes[]?] | .[].path' "$work/gpu-spec.json"); do
  echo "$inside" | grep -qE "^c.* $dev\$" || fail "$dev of the CDI spec is not a character device in the container"
done
for e in $(jq -r '[.containerEdits.env[]?, .devices[].containerEdits.env[]?] | .[]' "$work/gpu-spec.json"); do
  echo "$inside" | grep -qxF "$e" || fail "$e of the CDI spec is not in the container's environment"
done
mounts=$(jq -r '[.containerEdits.mounts[]?, .devices[].containerEdits.mounts[]?] | .[].containerPath' "$work/gpu-spec.json")
# The driver's libraries are there: the node has the mock driver's files at the chart's driverRoot.
echo "$mounts" | grep -q '/libnvidia-ml\.so\.[0-9]' || fail "the CDI spec mounts no libnvidia-ml.so.<version> (is the chart's driverRoot the node's mock driver?)"
# Each mount point as /proc/mounts inside the container has it (its path resolved: /lib is /usr/lib on Debian 13),
# with its first option.
in_mounts=$(k -n "$ns" exec gpu-pod -- sh -c 'for m in "$@"; do r=$(readlink -f "$m"); awk -v m="$m" -v r="$r" '"'"'$2 == r {split($4, o, ","); print m, o[1]; f = 1} END {if (!f) print m, "missing"}'"'"' /proc/mounts; done' sh $mounts)
echo "$in_mounts" | sed 's/^/    mount: /'
for m in $mounts; do
  echo "$in_mounts" | grep -qxF "$m ro" || fail "mount $m of the CDI spec is not a read-only mount in the container"
done
say "every device node, variable and mount ($(echo "$mounts" | grep -c .)) of the CDI spec is in the container"
k -n "$ns" exec gpu-pod -- nvidia-smi >"$work/smi" 2>&1 || fail "the driver's nvidia-smi, mounted from the CDI spec, does not run: $(cat "$work/smi")"
say "inside gpu-pod: nvidia-smi (the mock driver's, mounted from the driver root): $(cat "$work/smi")"

# ---- a 2-node ComputeDomain ----
k -n "$ns" delete pod gpu-pod --wait >/dev/null
k -n "$ns" apply -f "$root/demo/computedomain-pods.yaml" >/dev/null
for p in imex-pod-0 imex-pod-1; do
  k -n "$ns" wait --for=condition=Ready "pod/$p" --timeout=240s >/dev/null || {
    k -n "$ns" describe pod "$p" | tail -15; k -n "$ns" get computedomain imex-pods -o yaml | tail -30; fail "$p not Ready"; }
done
k -n "$ns" wait --for=condition=Ready computedomain/imex-pods --timeout=60s >/dev/null || { k -n "$ns" get computedomain imex-pods -o yaml | tail -30; fail "ComputeDomain imex-pods not Ready"; }
k -n "$ns" get computedomain imex-pods -o jsonpath='{range .status.nodes[*]}{.name} {.ipAddress} clique {.cliqueID} {.status}{"\n"}{end}' | sed 's/^/    domain node: /'
say "the IMEX daemons (pods of the chart's DaemonSet, the IMEX stand-in as nvidia-imex):"
k -n "$NAMESPACE" get pods -l app.kubernetes.io/name=compute-domain-daemon -o wide --no-headers | awk '{print "    " $1, $2, $3, $7}'
imex_nodes=$(k -n "$NAMESPACE" get pods -l app.kubernetes.io/name=compute-domain-daemon --field-selector=status.phase=Running -o jsonpath='{.items[*].spec.nodeName}')
for p in imex-pod-0 imex-pod-1; do
  pnode=$(k -n "$ns" get pod "$p" -o jsonpath='{.spec.nodeName}')
  echo " $imex_nodes " | grep -q " $pnode " || fail "no running IMEX daemon pod on $pnode, where $p runs"
  claim=$(k -n "$ns" get pod "$p" -o jsonpath='{.status.resourceClaimStatuses[?(@.name=="channel")].resourceClaimName}')
  cuid=$(k -n "$ns" get resourceclaim "$claim" -o jsonpath='{.metadata.uid}')
  cspec=$(docker exec "$pnode" sh -c "grep -l '$cuid' /var/run/cdi/* | head -1")
  [[ -n $cspec ]] || fail "no CDI spec for $p's channel claim $claim on $pnode"
  want=$(docker exec "$pnode" cat "$cspec" | jq -r '.devices[].containerEdits.deviceNodes[]? | "\(.path) \(.major), \(.minor)"')
  [[ -n $want ]] || fail "the CDI spec of $p's channel claim has no device node"
  inside=$(k -n "$ns" exec "$p" -- sh -c 'ls -l /dev/nvidia-caps-imex-channels/')
  say "$p on $pnode: its channel claim's CDI spec: $(echo $want); inside (kubectl exec, ls -l /dev/nvidia-caps-imex-channels/):"
  echo "$inside" | sed 's/^/    /'
  while read -r path majmin; do
    echo "$inside" | grep -qE "^c.* ${majmin// /[[:space:]]+} .* ${path##*/}\$" || fail "$p: $path ($majmin) of the CDI spec is not a character device in the container"
  done <<<"$want"
done
say "ok"

#!/usr/bin/env bash
# make bench: every benchmark, each one's output in docs/bench/<name>.txt under a header naming the date, the
# machine, the Go version, the commit and the command. docs/benchmarks.md explains the figures; this script
# only records them. The benchmarks are the e2e module's bench command (e2e/cmd/bench/README.md).
# Env: OUT (default docs/bench), BENCH (default bin/bench), SIMCLUSTER (default bin/simcluster, for the simulator's
# own start-up figures), FORMATION_1024 (1: also the 1,024-node formation set, which does not finish on 2 cores:
# docs/benchmarks.md, "1,024 nodes (issue 27)").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/docs/bench}
bench=${BENCH:-$root/bin/bench}
sim=${SIMCLUSTER:-$root/bin/simcluster}
mkdir -p "$out"

# record NAME CMD...: run CMD, its stdout and stderr into $out/NAME.txt after the header.
record() {
  local name=$1
  shift
  echo "bench: $name: $*" >&2
  {
    echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go env GOVERSION), commit $(git rev-parse --short HEAD)"
    echo "# $*"
  } >"$out/$name.txt"
  "$@" >>"$out/$name.txt" 2>&1
}

record go-benchmarks go test -p 1 -run '^$' -bench . -benchmem -count 5 ./...
record prepare-over-socket-tmpfs env TMPDIR=/dev/shm go test -p 1 -run '^$' -bench OverSocket -benchtime 2000x ./kubeletplugin/gpu/ ./kubeletplugin/computedomain/
record scheduler "$bench" scheduler --nodes 500 --pods 1000 --variants gpu,mig --runs 5
record controller "$bench" controller --domains 1000 --nodes 2000
record placement "$bench" placement --runs 5
record placement-no-workload-api "$bench" placement --runs 5 --workload-api=false
# Jobs larger than a rack: slices (composite pod groups; the fallback without the Workload API) against none.
# About 3.5 min each at 64 nodes and 15 min at 256 (one run: the cluster's start, each variant's 1-4 min and its
# namespace's deletion of 3-5 min); docs/benchmarks.md reads a 5-run and a 3-run set of the same commands.
record placement-racks-64 "$bench" placement --racks 4 --nodes 64 --runs 3 --timeout 5m
record placement-racks-64-no-workload-api "$bench" placement --racks 4 --nodes 64 --runs 3 --timeout 5m --workload-api=false
record placement-racks-256 "$bench" placement --racks 16 --nodes 256 --runs 1 --timeout 10m
# The simulator at 1,026 nodes (issue 27): ready time, file descriptors per node and RSS (its "ready" line), peak RSS.
record simulator-1024 /usr/bin/time -f "peak RSS %M KB, wall %e s" "$sim" up --kubeconfig "$out/.sim1024.kubeconfig" --racks 57 --nodes-per-rack 18 --extra "" --exit-when-ready
rm -f "$out/.sim1024.kubeconfig"
sizes=(16 64 256)
[ "${FORMATION_1024:-0}" != 1 ] || sizes+=(1024)
OUT=$out BENCH=$bench hack/bench-formation.sh "${sizes[@]}"

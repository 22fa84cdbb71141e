#!/usr/bin/env bash
# ComputeDomain formation at 16, 64, 256 and 1,024 nodes (18 GB200 trays per rack), then the plot.
# Each run's table goes to $OUT/formation-<nodes>.txt (with the command, machine and date), its figures
# to .json, and the plot of the sizes of this run to $OUT/formation.png. Usage: hack/bench-formation.sh [sizes...]
# Env: BENCH (default bin/bench, e2e/cmd/bench), OUT (default docs/bench), RUNS (default 3), FORMATION_TIMEOUT (default
# 10m, 30m from 1,024 nodes: the longest wait for one formation and for its teardown), FORMATION_ARGS (more flags of
# bench formation, e.g. --composite-pod-groups=false).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCH:-$root/bin/bench}
out=${OUT:-$root/docs/bench}
runs=${RUNS:-3}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(16 64 256 1024)
mkdir -p "$out"
results=()
for nodes in "${sizes[@]}"; do
  racks=$(( (nodes + 17) / 18 ))
  name="formation-$nodes"
  timeout=${FORMATION_TIMEOUT:-10m}
  [ -n "${FORMATION_TIMEOUT:-}" ] || [ "$nodes" -lt 1024 ] || timeout=30m
  cmd=("$bench" formation --racks "$racks" --nodes-per-rack 18 --domain-nodes "$nodes" --runs "$runs"
    --formation-timeout "$timeout" --json "$out/$name.json")
  # shellcheck disable=SC2206 # word splitting of the extra flags is meant
  [ -z "${FORMATION_ARGS:-}" ] || cmd+=(${FORMATION_ARGS})
  {
    echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go env GOVERSION), commit $(git -C "$root" rev-parse --short HEAD)"
    echo "# ${cmd[*]#"$root/"}"
  } >"$out/$name.txt"
  echo "bench formation: $nodes nodes ($runs runs)" >&2
  /usr/bin/time -f "# peak RSS %M KB, wall %e s" "${cmd[@]}" 2>"$out/$name.log" >>"$out/$name.txt" || { tail -50 "$out/$name.log" >&2; exit 1; }
  grep '^# peak RSS' "$out/$name.log" >>"$out/$name.txt" || true
  grep -E '^cluster of ' "$out/$name.log" | sed 's/^/# /' >>"$out/$name.txt" || true
  rm -f "$out/$name.log"
  results+=("$out/$name.json")
done
"$bench" plot --out "$out/formation.png" "${results[@]}"

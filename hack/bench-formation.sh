#!/usr/bin/env bash
# ComputeDomain formation at 16, 64 and 256 nodes (18 GB200 trays per rack) in both IMEX modes, then the plot.
# Each run's table goes to $OUT/formation-<nodes>-<mode>.txt (with the command, machine and date), its figures
# to .json, and the plot of all of them to $OUT/formation.png. Usage: hack/bench-formation.sh [sizes...]
# Env: SIMCLUSTER (default bin/simcluster), OUT (default docs/bench), RUNS (default 3), MODES (default
# "Domain Clique").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sim=${SIMCLUSTER:-$root/bin/simcluster}
out=${OUT:-$root/docs/bench}
runs=${RUNS:-3}
modes=${MODES:-Domain Clique}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(16 64 256)
mkdir -p "$out"
for nodes in "${sizes[@]}"; do
  racks=$(( (nodes + 17) / 18 ))
  for mode in $modes; do
    name="formation-$nodes-$(echo "$mode" | tr '[:upper:]' '[:lower:]')"
    cmd=("$sim" bench-formation --racks "$racks" --nodes-per-rack 18 --domain-nodes "$nodes" --runs "$runs"
      --formation-timeout 10m --imex-mode "$mode" --json "$out/$name.json")
    {
      echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go env GOVERSION), commit $(git -C "$root" rev-parse --short HEAD)"
      echo "# ${cmd[*]#"$root/"}"
    } >"$out/$name.txt"
    echo "bench-formation: $nodes nodes, $mode mode ($runs runs)" >&2
    /usr/bin/time -f "# peak RSS %M KB, wall %e s" "${cmd[@]}" 2>"$out/$name.log" >>"$out/$name.txt" || { tail -50 "$out/$name.log" >&2; exit 1; }
    grep '^# peak RSS' "$out/$name.log" >>"$out/$name.txt" || true
    grep -E '^cluster of ' "$out/$name.log" | sed 's/^/# /' >>"$out/$name.txt" || true
    rm -f "$out/$name.log"
  done
done
"$sim" bench-plot --out "$out/formation.png" "$out"/formation-*.json

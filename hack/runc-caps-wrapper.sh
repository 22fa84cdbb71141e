#!/usr/bin/env bash
# runc for the dockerd of hack/docker-engine.sh on a host whose capability bounding set lacks some of the
# capabilities the kernel knows (the CI machines, privileged containers without CAP_SYS_RESOURCE): Docker 20.10
# gives a --privileged container (every kind node) all the kernel's capabilities, and runc then fails with
# "unable to apply caps: operation not permitted". This drops, from the container's config.json, the
# capabilities this host's bounding set does not hold, and runs runc.
set -euo pipefail
# create/run: the bundle's config.json (.process.capabilities); exec: the --process file (.capabilities).
bundle= process= prev=
for a in "$@"; do
  [[ $prev == --bundle || $prev == -b ]] && bundle=$a
  [[ $prev == --process || $prev == -p ]] && process=$a
  [[ $a == --bundle=* ]] && bundle=${a#--bundle=}
  [[ $a == --process=* ]] && process=${a#--process=}
  prev=$a
done
drop() { # file jq-path
  local have
  have=$(capsh --decode="$(awk '/^CapBnd:/ {print $2}' /proc/self/status)" | sed 's/^0x[0-9a-f]*=//' |
    tr 'a-z' 'A-Z' | tr ',' '\n' | jq -R . | jq -sc .)
  jq -c --argjson have "$have" \
    "$2 |= ((. // {}) | with_entries(.value |= map(select(. as \$c | \$have | index(\$c)))))" "$1" >"$1.cdo"
  mv -f "$1.cdo" "$1"
}
[[ -n $bundle && -f $bundle/config.json ]] && drop "$bundle/config.json" .process.capabilities
[[ -n $process && -f $process ]] && drop "$process" .capabilities
exec "${RUNC:-/usr/sbin/runc}" "$@"

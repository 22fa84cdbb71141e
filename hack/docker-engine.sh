#!/usr/bin/env bash
# A Docker engine for the make targets that need one (image, kind-up, test-kind).
#
#   hack/docker-engine.sh run CMD...   run CMD with an engine; start Debian's dockerd first if none answers and
#                                      stop that one (by its PID) when CMD ends; a running engine is used as is
#   hack/docker-engine.sh up           start dockerd if none answers and leave it running (make kind-up)
#   hack/docker-engine.sh down         stop the dockerd that `up` started, if any (make kind-down)
#
# The engine started here is Debian's (`apt-get install docker.io`), run as root with its own data root
# (DOCKER_DATA_ROOT, /var/lib/cdo-docker) so it never touches another engine's images; its PID and log are
# under bin/. Nothing is started when `docker info` answers.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state=${DOCKER_ENGINE_STATE:-$root/bin/dockerd}
data_root=${DOCKER_DATA_ROOT:-/var/lib/cdo-docker}
pidfile=$state.pid

answers() { docker info >/dev/null 2>&1; }

start() { # prints nothing when an engine already answers
  if answers; then return 1; fi
  local dockerd
  dockerd=$(command -v dockerd || true)
  if [[ -z $dockerd ]]; then
    echo "docker-engine: no Docker engine answers and dockerd is not installed (apt-get install docker.io)" >&2
    exit 2
  fi
  if [[ $(id -u) != 0 ]]; then
    echo "docker-engine: no Docker engine answers; starting dockerd needs root" >&2
    exit 2
  fi
  mkdir -p "$(dirname "$state")" "$data_root"
  local args=(--data-root "$data_root" --pidfile "$pidfile.dockerd")
  # A host whose bounding set lacks capabilities the kernel knows: privileged containers get runc through
  # hack/runc-caps-wrapper.sh (see there).
  local bnd last
  bnd=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status))); last=$(cat /proc/sys/kernel/cap_last_cap)
  if (( bnd != (1 << (last + 1)) - 1 )); then
    echo "docker-engine: this host's capability bounding set is $(printf '%x' "$bnd"), not all of 0..$last: runc through hack/runc-caps-wrapper.sh"
    args+=(--add-runtime "cdo-runc=$root/hack/runc-caps-wrapper.sh" --default-runtime cdo-runc)
  fi
  echo "docker-engine: starting $dockerd ${args[*]} (log $state.log)"
  "$dockerd" "${args[@]}" >"$state.log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 120); do
    if answers; then echo "docker-engine: dockerd (PID $(cat "$pidfile")) answers"; return 0; fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "docker-engine: dockerd exited; its log:" >&2; tail -20 "$state.log" >&2; rm -f "$pidfile"; exit 2
    fi
    sleep 0.5
  done
  echo "docker-engine: dockerd did not answer in 60s; its log:" >&2; tail -20 "$state.log" >&2
  stop; exit 2
}

stop() {
  [[ -f $pidfile ]] || return 0
  local pid
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    echo "docker-engine: stopping the dockerd this started (PID $pid)"
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && { echo "docker-engine: dockerd $pid did not stop in 30s; killing it" >&2; kill -9 "$pid"; }
  fi
  rm -f "$pidfile"
}

case ${1:-} in
  run)
    shift
    [[ $# -gt 0 ]] || { echo "usage: $0 run CMD..." >&2; exit 2; }
    if start; then trap stop EXIT; else echo "docker-engine: using the running engine"; fi
    "$@"
    ;;
  up)
    start || echo "docker-engine: using the running engine"
    ;;
  down)
    stop
    ;;
  *)
    echo "usage: $0 run CMD... | up | down" >&2
    exit 2
    ;;
esac

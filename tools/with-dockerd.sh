#!/usr/bin/env bash
# Runs a command (the test suite) with a Docker engine for the docker sandbox tests.
#
# When no engine answers and we are root, starts dockerd with flags that leave the host's
# network, iptables and ip_forward alone, builds or loads the sandbox image (cached under
# $RLV_SANDBOX_CACHE/docker), runs the command, and stops the daemon it started, by its PID,
# also when the command fails or is interrupted. An engine that was already running is used
# and left running. Without an engine the command still runs; the docker tests then skip,
# each with the reason.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
RLV=${RLV:-.venv/bin/rlv}
dockerd_pid=
dockerd_log=

say() { echo "with-dockerd: $*" >&2; }

engine_answers() {
  "$PY" -c 'import docker; docker.from_env(timeout=5).ping()' >/dev/null 2>&1
}

reap_containers() {  # an engine we did not start: containers of test processes that died
  "$PY" -c 'from rl_verifier_sandbox.docker.backend import reap_stale; reap_stale()' \
    >/dev/null 2>&1
}

stop_dockerd() {
  [ -n "$dockerd_pid" ] || { reap_containers; return 0; }
  say "stopping the dockerd it started (pid $dockerd_pid)"
  kill -TERM "$dockerd_pid" 2>/dev/null
  for _ in $(seq 1 300); do
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$dockerd_pid" 2>/dev/null; then
    say "dockerd did not stop in 30 s; killing it"
    kill -KILL "$dockerd_pid" 2>/dev/null
  fi
  wait "$dockerd_pid" 2>/dev/null
  dockerd_pid=
  rm -f "$dockerd_log"
}

start_dockerd() {
  if [ "$(id -u)" != 0 ]; then
    say "no Docker engine answers and this is not root: docker tests will skip"
    return 1
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    say "no Docker engine answers and dockerd is not installed (make system-deps): docker tests will skip"
    return 1
  fi
  dockerd_log=$(mktemp "${TMPDIR:-/tmp}/rlv-dockerd.XXXXXX.log")
  dockerd --iptables=false --bridge=none --ip-forward=false >"$dockerd_log" 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 1 300); do
    engine_answers && { say "started dockerd (pid $dockerd_pid, log $dockerd_log)"; return 0; }
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.1
  done
  say "dockerd did not come up: docker tests will skip; its log:"
  tail -n 5 "$dockerd_log" >&2
  stop_dockerd
  return 1
}

child=
forward() {  # pass an interrupt on to the command; the daemon stops once it has ended
  if [ -n "$child" ]; then kill "-$1" "$child" 2>/dev/null; else exit $((128 + $2)); fi
}
trap stop_dockerd EXIT
trap 'forward INT 2' INT
trap 'forward TERM 15' TERM

if engine_answers || start_dockerd; then
  "$RLV" sandbox image build || say "could not build the sandbox image: docker tests will skip"
fi
"$@" &
child=$!
while :; do
  wait "$child"
  status=$?
  kill -0 "$child" 2>/dev/null || break
done
exit "$status"

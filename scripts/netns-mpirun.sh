#!/usr/bin/env bash
# One multi-host job on this machine: sets up the simulated hosts (scripts/netns-up.sh), runs
# mpirun on the head host with the harness's hostfile and MCA settings plus your arguments, and
# tears everything down when it ends, fails or is interrupted. Jobs are serialised by a lock.
#
#   scripts/netns-mpirun.sh -np 4 build/bin/test_exactness_np4
#   scripts/netns-mpirun.sh -np 3 --host 10.213.7.2:1,10.213.7.3:2 build/bin/mnist_async ...
#
# Exit: mpirun's status; 77 when this machine cannot create namespaces (reason on stderr).
# ASYNCPS_MPIRUN: the mpirun to use (default: the one on PATH).
# ASYNCPS_NETNS_KEEP=1 leaves the namespaces up afterwards (scripts/netns-down.sh removes them).
set -u
here=$(dirname "$(readlink -f "$0")")
root=$(dirname "$here")
. "$here/netns-env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Debian's /etc/openmpi/openmpi-mca-params.conf says osc = ^ucx,pt2pt: nothing could create a
# window across hosts. The library sets this itself when unset; setting it here too and -x it
# makes every remote rank see it whatever the library does.
export OMPI_MCA_osc=${OMPI_MCA_osc:-^ucx}

"$here/netns-up.sh" --probe || exit 77
mkdir -p "$(dirname "$ASYNCPS_NETNS_LOCK")"
exec 9>"$ASYNCPS_NETNS_LOCK"
flock -w 600 9 || { echo "netns-mpirun: lock $ASYNCPS_NETNS_LOCK busy for 10 min" >&2; exit 1; }

job=""
cleanup() {
  trap '' INT TERM   # a second signal must not cut the teardown short
  trap - EXIT
  if [ -n "$job" ] && kill -0 "$job" 2>/dev/null; then
    kill -TERM "$job" 2>/dev/null
    for _ in $(seq 10); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$job" 2>/dev/null
  fi
  # in a session of its own: `timeout -k`'s KILL of our process group does not reach it, and
  # netns-up.sh removes leftovers of a teardown that was cut short anyway
  [ "${ASYNCPS_NETNS_KEEP:-0}" = 1 ] || { setsid "$here/netns-down.sh" </dev/null & wait $!; }
}
trap cleanup EXIT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 130' INT

"$here/netns-up.sh" || exit 1
# mpirun in the background and `wait`: a TERM (timeout, ctest) runs the trap at once.
"$here/netns-head.sh" "${ASYNCPS_MPIRUN:-mpirun}" \
  --hostfile "${ASYNCPS_NETNS_HOSTFILE:-$root/hostfiles/netns}" \
  --mca plm_rsh_agent "$here/netns-launch.sh" \
  --bind-to none \
  --mca oob_tcp_if_include "$ASYNCPS_NETNS_SUBNET" \
  --mca btl_tcp_if_include "$ASYNCPS_NETNS_SUBNET" \
  --mca btl tcp,self \
  -x OMPI_MCA_osc \
  "$@" &
job=$!
wait "$job"
rc=$?
job=""
exit "$rc"

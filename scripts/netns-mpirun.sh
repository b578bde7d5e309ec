#!/usr/bin/env bash
# One multi-host job on this machine: sets up the simulated hosts (scripts/netns-up.sh), runs the
# launcher on the head host with the harness's hosts and transport settings plus your arguments,
# and tears everything down when it ends, fails or is interrupted. Jobs are serialised by a lock.
#
#   scripts/netns-mpirun.sh -np 4 build/bin/test_exactness_np4
#   scripts/netns-mpirun.sh -np 3 --host 10.213.7.2:1,10.213.7.3:2 build/bin/mnist_async ...
#   ASYNCPS_MPIRUN=mpiexec.mpich scripts/netns-mpirun.sh -np 4 build-mpich/bin/test_exactness_np4
#
# ASYNCPS_MPIRUN: the launcher (default: mpirun on PATH). Its MPI decides how the job is started:
#   Open MPI  mpirun --mca plm_rsh_agent scripts/netns-launch.sh, btl tcp,self, osc pt2pt allowed
#   MPICH     hydra: mpiexec -launcher ssh -launcher-exec scripts/netns-launch.sh, UCX over TCP
#             (UCX_TLS=tcp,self, UCX_NET_DEVICES=eth0; shared memory between ranks of one host)
# Your arguments are mpirun's; for hydra the harness translates the ones the tests use:
# -np N, --host/-H LIST (-hosts), -x NAME[=VALUE] (-genv), --map-by node (-ppn 1), --display-map
# (dropped); --mca,
# --oversubscribe and --bind-to are Open MPI's and refused under hydra, anything else is passed on.
# Exit: the launcher's status; 77 when this machine cannot create namespaces (reason on stderr).
# ASYNCPS_NETNS_KEEP=1 leaves the namespaces up afterwards (scripts/netns-down.sh removes them).
set -u
here=$(dirname "$(readlink -f "$0")")
root=$(dirname "$here")
. "$here/netns-env.sh"
launcher=${ASYNCPS_MPIRUN:-mpirun}
read -r -a launcher_words <<<"$launcher"   # (ASYNCPS_MPIRUN may carry arguments of its own)
if "${launcher_words[0]}" --version 2>&1 | grep -qi hydra; then family=mpich; else family=openmpi; fi
hostfile=${ASYNCPS_NETNS_HOSTFILE:-$root/hostfiles/netns}

if [ "$family" = openmpi ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Debian's /etc/openmpi/openmpi-mca-params.conf says osc = ^ucx,pt2pt: nothing could create a
  # window across hosts. The library sets this itself when unset; setting it here too and -x it
  # makes every remote rank see it whatever the library does.
  export OMPI_MCA_osc=${OMPI_MCA_osc:-^ucx}
  launch=("${launcher_words[@]}" --hostfile "$hostfile" --mca plm_rsh_agent "$here/netns-launch.sh"
          --bind-to none --mca oob_tcp_if_include "$ASYNCPS_NETNS_SUBNET"
          --mca btl_tcp_if_include "$ASYNCPS_NETNS_SUBNET" --mca btl tcp,self -x OMPI_MCA_osc "$@")
else
  # hydra's host file is "HOST:N" per line; the harness's is Open MPI's "HOST slots=N"
  hydra_hosts=$(awk '!/^[[:space:]]*(#|$)/ { n = 1; for (i = 2; i <= NF; ++i) if ($i ~ /^slots=/) n = substr($i, 7);
                     printf "%s%s:%s", sep, $1, n; sep = "," }' "$hostfile")
  args=()
  while [ $# -gt 0 ]; do
    case $1 in
      --host|-H|-host) hydra_hosts=$2; shift 2 ;;
      -x) case $2 in *=*) args+=(-genv "${2%%=*}" "${2#*=}") ;; *) args+=(-genvlist "$2") ;; esac; shift 2 ;;
      --map-by) [ "$2" = node ] || { echo "netns-mpirun: --map-by $2: hydra has only --map-by node (-ppn 1)" >&2; exit 2; }
                args+=(-ppn 1); shift 2 ;;
      --display-map) shift ;;   # (Open MPI prints where ranks run; hydra has no such report)
      --mca|-mca|--oversubscribe|--bind-to|--hostfile)
        echo "netns-mpirun: $1 is an Open MPI option; this launcher ($launcher) is MPICH's hydra" >&2; exit 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  export HYDRA_LAUNCHER_AUTOFORK=0   # every host through the launcher, never a local fork
  launch=("${launcher_words[@]}" -launcher ssh -launcher-exec "$here/netns-launch.sh"
          -localhost "$(netns_addr 0)" -hosts "$hydra_hosts"
          -genv UCX_TLS "${UCX_TLS:-tcp,self}" -genv UCX_NET_DEVICES "${UCX_NET_DEVICES:-eth0}" "${args[@]}")
fi

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
# the launcher in the background and `wait`: a TERM (timeout, ctest) runs the trap at once.
"$here/netns-head.sh" "${launch[@]}" &
job=$!
wait "$job"
rc=$?
job=""
exit "$rc"

#!/usr/bin/env bash
# Stands in for ssh as Open MPI's --mca plm_rsh_agent: `netns-launch.sh [opts] HOST COMMAND...`.
# HOST is an address 10.213.7.N (-> namespace asyncps-h(N-1)), a namespace name asyncps-hK or hK.
# Like ssh, the words of COMMAND are joined and run by a shell (Open MPI sends the remote orted
# command line, with shell syntax: PATH=...; export PATH; orted ... -mca x "y;z"). The command runs
# in the host's network namespace and in a fresh UTS namespace whose hostname is the namespace's
# name, so that every simulated host has a hostname of its own (Open MPI tells nodes apart by it).
# ASYNCPS_NETNS_PRIVATE_DIR=DIR: hosts share no file system at DIR — each host sees its own
# DIR.<namespace> there (a bind mount in a mount namespace of its own), as separate machines
# with local disks would.
set -u
. "$(dirname "$(readlink -f "$0")")/netns-env.sh"
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done   # ssh-style options: ignored
[ $# -ge 2 ] || { echo "usage: $0 HOST COMMAND..." >&2; exit 255; }
host=$1; shift
case $host in
  "$ASYNCPS_NETNS_NET".*) ns=$(netns_name $(( ${host##*.} - 1 ))) ;;
  "$ASYNCPS_NETNS_PREFIX"*) ns=$host ;;
  h[0-9]*) ns=${ASYNCPS_NETNS_PREFIX}${host#h} ;;
  *) echo "netns-launch: unknown host $host (want ${ASYNCPS_NETNS_NET}.N or ${ASYNCPS_NETNS_PREFIX}K)" >&2; exit 255 ;;
esac
ip netns list | grep -qw "^$ns" || { echo "netns-launch: no namespace $ns for host $host (run scripts/netns-up.sh)" >&2; exit 255; }
if [ -n "${ASYNCPS_NETNS_PRIVATE_DIR:-}" ]; then
  exec ip netns exec "$ns" unshare --uts --mount --propagation private -- bash -c \
    'hostname "$1" && mkdir -p "$3.$1" "$3" && mount --bind "$3.$1" "$3" && eval "$2"' \
    netns-launch "$ns" "$*" "$ASYNCPS_NETNS_PRIVATE_DIR"
fi
exec ip netns exec "$ns" unshare --uts -- bash -c 'hostname "$1" && eval "$2"' netns-launch "$ns" "$*"

#!/usr/bin/env bash
# Runs COMMAND on the head host: in namespace asyncps-h0, hostname asyncps-h0 (a UTS namespace of
# its own). `scripts/netns-head.sh mpirun ...` is how to start a job by hand after netns-up.sh.
set -u
. "$(dirname "$(readlink -f "$0")")/netns-env.sh"
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
head=$(netns_name 0)
exec ip netns exec "$head" unshare --uts -- bash -c 'hostname "$1" && shift && exec "$@"' netns-head "$head" "$@"

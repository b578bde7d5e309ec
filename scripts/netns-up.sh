#!/usr/bin/env bash
# Creates the simulated hosts: network namespaces asyncps-h0 (head: runs mpirun, holds the bridge,
# 10.213.7.1) and asyncps-h1, asyncps-h2 (10.213.7.2, .3), each joined to the bridge by a veth
# pair, loopback up. Cleans leftovers of an earlier run first. Exit 77 (with the reason on stderr)
# when this machine cannot do it (not root, no ip netns, no permission).
#   scripts/netns-up.sh            set up
#   scripts/netns-up.sh --probe    only say whether it could (exit 0 or 77)
set -u
here=$(dirname "$(readlink -f "$0")")
. "$here/netns-env.sh"
reason=$(netns_unusable_reason)
if [ -n "$reason" ]; then echo "netns harness unavailable: $reason" >&2; exit 77; fi
[ "${1:-}" = "--probe" ] && exit 0

"$here/netns-down.sh"
set -e
head=$(netns_name 0)
ip netns add "$head"
ip -n "$head" link set lo up
ip -n "$head" link add br0 type bridge
ip -n "$head" addr add "$(netns_addr 0)/24" dev br0
ip -n "$head" link set br0 up
for ((k = 1; k <= ASYNCPS_NETNS_HOSTS; ++k)); do
  ns=$(netns_name "$k")
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  # both ends created directly inside the namespaces: nothing appears in the machine's own network
  ip -n "$head" link add "veth$k" type veth peer name eth0 netns "$ns"
  ip -n "$head" link set "veth$k" master br0 up
  ip -n "$ns" addr add "$(netns_addr "$k")/24" dev eth0
  ip -n "$ns" link set eth0 up
done
# wait until every host answers
for ((k = 1; k <= ASYNCPS_NETNS_HOSTS; ++k)); do
  for i in $(seq 50); do
    # a TCP connect to a closed port: "refused" (an RST came back) means the host is reachable
    out=$(ip netns exec "$head" timeout 1 bash -c "exec 3<>/dev/tcp/$(netns_addr "$k")/9" 2>&1) && break
    case $out in *refused*) break ;; esac
    [ "$i" -eq 50 ] && { echo "netns-up: $(netns_addr "$k") does not answer" >&2; exit 1; }
    sleep 0.1
  done
done
echo "netns-up: $(netns_all | tr '\n' ' ')on ${ASYNCPS_NETNS_SUBNET}" >&2

#!/usr/bin/env bash
# Tears the simulated hosts down: ends the processes left in their namespaces (only those), then
# deletes the namespaces (which deletes the bridge and veth pairs in them). Idempotent.
set -u
. "$(dirname "$(readlink -f "$0")")/netns-env.sh"
for ns in $(netns_all); do
  ip netns list 2>/dev/null | grep -qw "^$ns" || continue
  pids=$(ip netns pids "$ns" 2>/dev/null)
  [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
done
for _ in 1 2 3 4 5 6 7 8 9 10; do   # up to 2 s for a clean exit
  left=""
  for ns in $(netns_all); do left+=$(ip netns pids "$ns" 2>/dev/null); done
  [ -z "$left" ] && break
  sleep 0.2
done
for ns in $(netns_all); do
  pids=$(ip netns pids "$ns" 2>/dev/null)
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  ip netns del "$ns" 2>/dev/null
done
exit 0

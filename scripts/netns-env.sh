# Sourced by the scripts/netns-*.sh harness: names and addresses of the simulated hosts.
# Host k (k = 0 head, 1.., hosts that run ranks) is the network namespace ${ASYNCPS_NETNS_PREFIX}k,
# hostname the same, address ${ASYNCPS_NETNS_NET}.(k+1)/24. The subnet exists only inside the
# namespaces: the bridge lives in the head namespace, nothing is added to the machine's own network.
ASYNCPS_NETNS_PREFIX=${ASYNCPS_NETNS_PREFIX:-asyncps-h}
ASYNCPS_NETNS_NET=${ASYNCPS_NETNS_NET:-10.213.7}
ASYNCPS_NETNS_HOSTS=${ASYNCPS_NETNS_HOSTS:-2}          # hosts besides the head
ASYNCPS_NETNS_LOCK=${ASYNCPS_NETNS_LOCK:-/run/lock/asyncps-netns.lock}
ASYNCPS_NETNS_SUBNET=${ASYNCPS_NETNS_NET}.0/24

netns_name() { echo "${ASYNCPS_NETNS_PREFIX}$1"; }
netns_addr() { echo "${ASYNCPS_NETNS_NET}.$(($1 + 1))"; }
netns_all() { local k; for ((k = 0; k <= ASYNCPS_NETNS_HOSTS; ++k)); do netns_name "$k"; done; }

# Why the harness cannot run here (empty when it can). Probes by creating a scratch namespace.
netns_unusable_reason() {
  [ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces), running as uid $(id -u)"; return; }
  command -v ip >/dev/null || { echo "the ip command (iproute2) is not installed"; return; }
  command -v unshare >/dev/null || { echo "the unshare command (util-linux) is not installed"; return; }
  ip netns list >/dev/null 2>&1 || { echo "'ip netns' is not available"; return; }
  local probe="${ASYNCPS_NETNS_PREFIX}probe$$" err
  if ! err=$(ip netns add "$probe" 2>&1); then echo "cannot create a network namespace: $err"; return; fi
  if ! err=$(ip netns exec "$probe" unshare --uts true 2>&1); then
    ip netns del "$probe" 2>/dev/null; echo "cannot enter a namespace / unshare --uts: $err"; return
  fi
  if ! err=$(ip -n "$probe" link add "${probe:0:12}b" type bridge 2>&1); then
    ip netns del "$probe" 2>/dev/null; echo "cannot create a bridge in a namespace: $err"; return
  fi
  ip netns del "$probe" 2>/dev/null
}

# Sourced by the scripts that run real servers and clients in network namespaces of their own
# (the live checks, the benchmark recorders): the one place that sets them up.
#
#   netns_require CODE                 exits CODE with one line unless this is root with iproute2
#                                      (77 for a check: "cannot run here"; 69 for a recorder)
#   require_commands CODE HINT CMD...  exits CODE with one line naming the first CMD missing and
#                                      HINT (where it comes from, e.g. "Debian: ngtcp2-server")
#   netns_pair SRV CLI SVETH CVETH NET two namespaces joined by a veth pair: SRV holds NET.1/24 on
#                                      SVETH, CLI holds NET.2/24 on CVETH, both loopbacks up;
#                                      exits 77 when namespaces cannot be made here
#   netns_pair_delete SRV CLI          removes both (for the caller's cleanup trap; quiet)
#   netns_loopback_reexec SCRIPT ARG...
#                                      unless already inside one: runs SCRIPT ARG... again inside a
#                                      namespace of its own whose loopback has an Ethernet MTU and
#                                      no segmentation offload (gso_max_segs 1), so a capture of it
#                                      holds MTU-sized segments as a real link would; removes the
#                                      namespace and exits with SCRIPT's status. Inside, returns.

netns_require() {
  local code=$1
  [ "$(id -u)" = 0 ] || { echo "$(basename "$0"): needs root for network namespaces" >&2; exit "$code"; }
  command -v ip >/dev/null || { echo "$(basename "$0"): needs iproute2" >&2; exit "$code"; }
}

require_commands() {
  local code=$1 hint=$2 c
  shift 2
  for c in "$@"; do
    command -v "$c" >/dev/null || { echo "$(basename "$0"): needs $c ($hint)" >&2; exit "$code"; }
  done
}

netns_pair() {
  local srv=$1 cli=$2 sveth=$3 cveth=$4 net=$5
  ip netns add "$srv" || { echo "$(basename "$0"): cannot create network namespaces here" >&2; exit 77; }
  ip netns add "$cli"
  ip link add "$sveth" type veth peer name "$cveth"
  ip link set "$sveth" netns "$srv"
  ip link set "$cveth" netns "$cli"
  ip -n "$srv" addr add "$net.1/24" dev "$sveth"; ip -n "$srv" link set "$sveth" up; ip -n "$srv" link set lo up
  ip -n "$cli" addr add "$net.2/24" dev "$cveth"; ip -n "$cli" link set "$cveth" up; ip -n "$cli" link set lo up
}

netns_pair_delete() {
  ip netns del "$1" 2>/dev/null
  ip netns del "$2" 2>/dev/null
  return 0
}

netns_loopback_reexec() {
  [ -n "${ICY_NETNS:-}" ] && return 0
  netns_require 69
  local ns rc=0
  ns=icy-$(basename "$1")-$$
  ip netns add "$ns" || { echo "$(basename "$1"): cannot create network namespaces here" >&2; exit 69; }
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip link set lo mtu 1500 gso_max_segs 1
  ICY_NETNS=$ns ip netns exec "$ns" "$@" || rc=$?
  ip netns del "$ns" 2>/dev/null
  exit "$rc"
}

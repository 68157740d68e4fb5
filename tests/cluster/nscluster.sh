#!/usr/bin/env bash
# nscluster.sh: a cluster of K "hosts" on one Linux machine, for tests (needs root).
#
# Every host is a network namespace with its own host name (UTS namespace, set per command)
# and its own /tmp (a per-host folder bound over /tmp in a mount namespace, per command).
# Hosts h1..hK and a head node "head" (where mpirun runs; it runs no ranks unless named)
# hang on one bridge that lives in a namespace of its own ("switch"), so nothing of the
# cluster is visible in the machine's own network namespace. Addresses: 10.231.0.0/24
# (hN = 10.231.0.N, head = 10.231.0.254), each host's interface is eth0, and a hosts file
# naming every node is bound over /etc/hosts (ip netns exec binds /etc/netns/NS/*).
#
#   nscluster.sh check                    exit 0 if namespaces can be made here, else 77 + why
#   nscluster.sh up K                     make the cluster; prints the prefix (export it)
#   nscluster.sh down                     remove it (processes inside are killed first)
#   nscluster.sh exec HOST CMD...         run CMD on HOST (head, h1..hK)
#   nscluster.sh mpirun MPIRUN-ARGS...    mpirun ($NSC_MPIRUN, default mpirun) on the head, with
#                                         this script as its launch agent, over TCP on the test
#                                         network only (btl tcp,self; oob and btl on 10.231.0.0/24),
#                                         --bind-to none (the hosts share this machine's cores)
#   nscluster.sh agent HOST CMD...        Open MPI's plm_rsh_agent: CMD (a shell line) on HOST
#   nscluster.sh link-down HOST | link-up HOST    pull or plug HOST's cable
#   nscluster.sh shape RATE | shape off   limit every host's link (head included) to RATE in
#                                         both directions (tc tbf on both veth ends; RATE in
#                                         tc's units: 1gbit, 10gbit, 500mbit), or remove it
#   nscluster.sh addr HOST                the host's address
#   nscluster.sh reap                     remove clusters of runs whose owner is gone
#
# The cluster is named by NSC_PREFIX (tlc<owner pid>); `up` prints it, the other commands read
# it from the environment. The owner is $NSC_OWNER (a test driver sets it to its own pid) or
# the caller of `up`. A watcher started by `up` removes the cluster when its owner ends without
# `down` (killed), and `up` first reaps clusters of earlier runs whose owner is gone. State
# (per-host /tmp, hosts list, owner) lives in /var/tmp/tlnsc-<prefix>, outside every host's /tmp.
#
# Other tests use it as cluster_test.sh does: NSC_OWNER=$$; NSC_PREFIX=$(nscluster.sh up K)
# (exit 77: skip), trap 'nscluster.sh down' EXIT, then mpirun / exec / link-down HOST.
set -euo pipefail

readonly SELF="$(readlink -f "${BASH_SOURCE[0]}")"
readonly NET=10.231.0
readonly HEAD_ADDR=$NET.254

die() { echo "nscluster: $*" >&2; exit 1; }
state_of() { echo "/var/tmp/tlnsc-$1"; }
ns_of() { echo "$NSC_PREFIX-$1"; }

need_prefix() {
  [[ -n "${NSC_PREFIX:-}" ]] || die "NSC_PREFIX is not set (nscluster.sh up prints it)"
  [[ -d "$(state_of "$NSC_PREFIX")" ]] || die "no cluster $NSC_PREFIX (state folder missing)"
}

hosts_of() { cat "$(state_of "$NSC_PREFIX")/hosts.list"; }

addr_of() {
  case "$1" in
    head) echo "$HEAD_ADDR" ;;
    h[0-9]*) echo "$NET.${1#h}" ;;
    *) die "unknown host '$1' (head, h1..hK)" ;;
  esac
}

check() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "network namespaces need root (running as uid $(id -u))"; return 77
  fi
  for tool in ip unshare mount; do
    command -v "$tool" >/dev/null || { echo "'$tool' is not installed (iproute2, util-linux)"; return 77; }
  done
  local probe="tlc$$-probe" err  # reaped like a cluster if this process dies here
  if ! err=$(ip netns add "$probe" 2>&1); then
    echo "cannot create a network namespace: $err"; return 77
  fi
  if ! err=$(ip netns exec "$probe" unshare --uts --mount true 2>&1); then
    ip netns del "$probe" 2>/dev/null || true
    echo "cannot create UTS/mount namespaces: $err"; return 77
  fi
  ip netns del "$probe"
}

# Remove one cluster: kill what runs inside its namespaces, delete them, its files.
teardown() {
  local prefix=$1 ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-" || true); do
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
  rm -rf "$(state_of "$prefix")"
}

# Clusters whose owner process is gone (a crashed or killed run) are removed.
reap() {
  local prefix owner
  for prefix in $( (ip netns list 2>/dev/null | awk '{print $1}'; ls /etc/netns 2>/dev/null;
                    ls -d /var/tmp/tlnsc-tlc* 2>/dev/null | sed 's|/var/tmp/tlnsc-||') |
                   grep -oE '^tlc[0-9]+' | sort -u); do
    owner=${prefix#tlc}
    if ! kill -0 "$owner" 2>/dev/null; then
      echo "nscluster: removing leftovers of $prefix (owner $owner is gone)" >&2
      teardown "$prefix"
    fi
  done
}

up() {
  local k=${1:-}
  [[ "$k" =~ ^[0-9]+$ && $k -ge 1 && $k -le 32 ]] || die "up: K must be 1..32, got '${k}'"
  local why
  why=$(check) || { echo "$why" >&2; exit 77; }
  reap
  # The owner is the process that called `up` (the test driver); when it is gone, reap() may
  # remove the cluster.
  local owner=${NSC_OWNER:-$PPID}
  NSC_PREFIX="tlc$owner"
  local state
  state=$(state_of "$NSC_PREFIX")
  [[ ! -e "$state" ]] || teardown "$NSC_PREFIX"
  trap 'teardown "$NSC_PREFIX"' ERR  # a step that fails leaves nothing half-made
  mkdir -p "$state"
  echo "$owner" >"$state/owner"
  local hosts=(head) i
  for ((i = 1; i <= k; i++)); do hosts+=("h$i"); done
  printf '%s\n' "${hosts[@]}" >"$state/hosts.list"

  local sw
  sw=$(ns_of switch)
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  local hostsfile="$state/etc-hosts"
  { echo "127.0.0.1 localhost"; for h in "${hosts[@]}"; do echo "$(addr_of "$h") $h"; done; } >"$hostsfile"
  for h in "${hosts[@]}"; do
    local ns
    ns=$(ns_of "$h")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # Both ends are created inside their namespaces: no name ever appears in the machine's own.
    ip link add eth0 netns "$ns" type veth peer name "$h" netns "$sw"
    ip -n "$sw" link set "$h" master br0
    ip -n "$sw" link set "$h" up
    ip -n "$ns" addr add "$(addr_of "$h")/24" dev eth0
    ip -n "$ns" link set eth0 up
    mkdir -p "/etc/netns/$ns" "$state/$h/tmp"
    chmod 1777 "$state/$h/tmp"
    cp "$hostsfile" "/etc/netns/$ns/hosts"
  done
  # A watcher removes the cluster once its owner is gone, even if the owner was killed (a test
  # past its CTest timeout) and never ran `down`. Detached, and off the caller's stdout, which
  # may be a command substitution waiting for EOF.
  setsid "$SELF" watch "$owner" "$NSC_PREFIX" </dev/null >/dev/null 2>&1 &
  trap - ERR
  echo "$NSC_PREFIX"
}

watch() {
  local owner=$1 prefix=$2
  while kill -0 "$owner" 2>/dev/null && [[ -d "$(state_of "$prefix")" ]]; do sleep 1; done
  [[ ! -d "$(state_of "$prefix")" ]] || teardown "$prefix"
}

down() {
  [[ -n "${NSC_PREFIX:-}" ]] || die "NSC_PREFIX is not set"
  teardown "$NSC_PREFIX"
}

# Run "$@" on host $1: its network namespace, its host name, its /tmp. When this script lives
# under /tmp (a checkout in mktemp -d), that top-level folder of /tmp stays the machine's on
# every host, as a cluster's shared file system would: the tools, the tests and their scratch
# folders live there.
on_host() {
  local h=$1; shift
  need_prefix
  grep -qx "$h" <(hosts_of) || die "no host '$h' in cluster $NSC_PREFIX ($(hosts_of | tr '\n' ' '))"
  local tmp shared=""
  tmp="$(state_of "$NSC_PREFIX")/$h/tmp"
  case "$SELF" in /tmp/*/*) shared=${SELF#/tmp/}; shared=/tmp/${shared%%/*} ;; esac
  [[ -z $shared ]] || mkdir -p "$tmp/${shared#/tmp/}"
  exec ip netns exec "$(ns_of "$h")" unshare --uts --mount --propagation private \
    /bin/sh -c 'hostname "$0" && { [ -z "$2" ] || mount --bind "$2" "$1/${2#/tmp/}"; } &&
                mount --rbind "$1" /tmp && shift 2 && exec "$@"' "$h" "$tmp" "$shared" "$@"
}

# Open MPI runs `AGENT [options] HOST COMMAND-LINE...` as it would run ssh; the command line is
# one shell line (PATH and LD_LIBRARY_PATH set, then orted).
agent() {
  while [[ "${1:-}" == -* ]]; do shift; done
  local h=${1:-}; shift || true
  [[ -n "$h" ]] || die "agent: no host given"
  on_host "$h" /bin/sh -c "$*"
}

link() {
  local h=$1 state=$2
  need_prefix
  grep -qx "$h" <(hosts_of) || die "no host '$h' in cluster $NSC_PREFIX"
  ip -n "$(ns_of switch)" link set "$h" "$state"
}

# Rate limits with tc's token bucket filter on both ends of every host's veth: eth0 inside the
# host shapes what it sends, the switch-side end what it receives, as a full-duplex link of that
# rate would. This kernel has no netem: no delay is added (latency stays veth's), and tbf's
# "latency" only bounds its queue. The bucket holds 10 ms of traffic (at least 64 KiB), enough
# for the kernel's timer granularity at these rates.
shape() {
  local rate=${1:-}
  need_prefix
  local sw h
  sw=$(ns_of switch)
  if [[ $rate == off ]]; then
    for h in $(hosts_of); do
      ip netns exec "$(ns_of "$h")" tc qdisc del dev eth0 root 2>/dev/null || true
      ip netns exec "$sw" tc qdisc del dev "$h" root 2>/dev/null || true
    done
    return
  fi
  [[ "$rate" =~ ^([1-9][0-9]*)(kbit|mbit|gbit)$ ]] ||
    die "shape: RATE must be a whole number with kbit, mbit or gbit (e.g. 1gbit, 500mbit) or 'off', got '${rate}'"
  local n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]} bps
  case $unit in kbit) bps=$((n * 1000)) ;; mbit) bps=$((n * 1000000)) ;; gbit) bps=$((n * 1000000000)) ;; esac
  ((bps <= 100000000000)) || die "shape: RATE must be at most 100gbit, got '$rate'"
  local burst=$((bps / 8 / 100))
  ((burst >= 65536)) || burst=65536
  for h in $(hosts_of); do
    ip netns exec "$(ns_of "$h")" tc qdisc replace dev eth0 root tbf rate "$rate" burst "$burst" latency 100ms
    ip netns exec "$sw" tc qdisc replace dev "$h" root tbf rate "$rate" burst "$burst" latency 100ms
  done
}

cluster_mpirun() {
  need_prefix
  export NSC_PREFIX
  # --bind-to none: every host sees the same cores, and each daemon would bind its first rank to
  # core 0, so ranks on different hosts would share one core.
  on_host head "${NSC_MPIRUN:-mpirun}" --mca plm_rsh_agent "$SELF agent" --mca plm_rsh_no_tree_spawn 1 \
    --bind-to none \
    --mca btl tcp,self --mca btl_tcp_if_include "$NET.0/24" --mca oob_tcp_if_include "$NET.0/24" \
    "$@"
}

cmd=${1:-}
shift || true
case "$cmd" in
  check) check ;;
  up) up "$@" ;;
  down) down ;;
  reap) reap ;;
  watch) watch "$@" ;;
  exec) [[ $# -ge 2 ]] || die "exec HOST CMD..."; export NSC_PREFIX; on_host "$@" ;;
  agent) agent "$@" ;;
  mpirun) cluster_mpirun "$@" ;;
  link-down) [[ $# -eq 1 ]] || die "link-down HOST"; link "$1" down ;;
  link-up) [[ $# -eq 1 ]] || die "link-up HOST"; link "$1" up ;;
  addr) [[ $# -eq 1 ]] || die "addr HOST"; addr_of "$1" ;;
  shape) [[ $# -eq 1 ]] || die "shape RATE|off (e.g. 1gbit)"; shape "$1" ;;
  *) die "usage: nscluster.sh check|up K|down|reap|exec HOST CMD...|mpirun ARGS...|agent HOST CMD|link-down HOST|link-up HOST|shape RATE|off|addr HOST" ;;
esac

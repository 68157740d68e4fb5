#!/usr/bin/env bash
# Cluster scaling on the namespace cluster (tests/cluster/nscluster.sh; needs root): ResNet-20,
# data-parallel over 2 processes, images/s per process
#   - on one host (the machine itself, Open MPI's shared memory), the reference, and
#   - on two hosts, one process each, over TCP (veth pairs and a bridge),
# both with --bind-to none (the namespace hosts share this machine's cores), and the bytes each
# host sends per step, against the ring-allreduce figure
# 2(N-1)/N x gradient bytes (N = 2 processes; gradient bytes = what the reduction sends: 4 bytes
# per element for fp32; for --reduction exact 6, the mean of the int64 sums' reduce-scatter and
# the float32 means' allgather, each half a ring). Bytes per step are the difference of eth0's
# transmit counters between a run of 2S and one of S steps, divided by S, so start-up traffic
# cancels out. Both runs of a kind are measured in the same invocation; compare the ratios.
#
# The two kinds run alternately REPEATS times (the machine is shared and noisy); the table gives
# medians.
#
# usage: bench/cluster_scaling.sh [BUILD_DIR] [STEPS] [REDUCTION] [REPEATS]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
STEPS=${2:-20}
REDUCTION=${3:-exact}
REPEATS=${4:-3}
BIN=$BUILD/launcher
NSC=$(cd "$(dirname "$0")/.." && pwd)/tests/cluster/nscluster.sh
WORK=$BUILD/bench-tmp/cluster_scaling   # every host sees it (each has its own /tmp)
rm -rf "$WORK" && mkdir -p "$WORK"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if ! why=$("$NSC" check); then echo "cluster_scaling: cannot run: $why" >&2; exit 77; fi
export NSC_OWNER=$$
NSC_PREFIX=$("$NSC" up 2)
export NSC_PREFIX
trap '"$NSC" down' EXIT

"$BIN/tl-data" synth --out "$WORK/data" --train 2048 --test 16 --seed 1 >/dev/null
JOB=(--model resnet --depth 20 --dataset cifar10 --data-dir "$WORK/data" --logical-workers 2 --batch 32
     --seed 1 --reduction "$REDUCTION" --log-every 0 --workers 1 --control-bind none)

tx() { "$NSC" exec "$1" cat /sys/class/net/eth0/statistics/tx_bytes; }

one_host() {  # STEPS OUT
  mpirun --oversubscribe --bind-to none -np 2 "$BIN/tl-launch" "${JOB[@]}" --steps "$1" --output-dir "$2" >"$2.log" 2>&1
}
two_hosts() {  # STEPS OUT; prints the bytes h1 and h2 sent
  local a1 a2
  a1=$(tx h1) a2=$(tx h2)
  "$NSC" mpirun --host h1:1,h2:1 -np 2 "$BIN/tl-launch" "${JOB[@]}" --steps "$1" --output-dir "$2" >"$2.log" 2>&1
  echo "$(($(tx h1) - a1)) $(($(tx h2) - a2))"
}

echo "ResNet-20, 2 processes x 1 EST, batch 32 each, --reduction $REDUCTION; $STEPS and $((2 * STEPS)) steps, $REPEATS repeats"
bytes=()
for ((r = 1; r <= REPEATS; r++)); do
  one_host "$((2 * STEPS))" "$WORK/one_$r"
  read -r s1 s2 <<<"$(two_hosts "$STEPS" "$WORK/two_short_$r")"
  read -r l1 l2 <<<"$(two_hosts "$((2 * STEPS))" "$WORK/two_$r")"
  bytes+=("$s1,$s2,$l1,$l2")
done

params=$(grep -oE 'model resnet \([0-9]+ parameters\)' "$WORK/two_1.log" | grep -oE '[0-9]+' | head -1)
python3 - "$WORK" "$STEPS" "$REDUCTION" "$REPEATS" "$params" "${bytes[@]}" <<'EOF'
import json, statistics, sys
work, steps, reduction = sys.argv[1], int(sys.argv[2]), sys.argv[3]
repeats, params = int(sys.argv[4]), int(sys.argv[5])
counters = [list(map(int, b.split(","))) for b in sys.argv[6:]]
ones = [json.load(open(f"{work}/one_{r}/summary.json")) for r in range(1, repeats + 1)]
twos = [json.load(open(f"{work}/two_{r}/summary.json")) for r in range(1, repeats + 1)]
shas = {s["params_sha256"] for s in ones + twos}
assert len(shas) == 1, "one host and two hosts trained different bits"
per_one = statistics.median(s["images_per_s"] / 2 for s in ones)
per_two = statistics.median(s["images_per_s"] / 2 for s in twos)
# tl-launch's count of the model's parameters (every parameter gets a gradient).
# exact: a reduce-scatter of int64 sums, (N-1)/N x 8 bytes, and an allgather of float32 means,
# (N-1)/N x 4 bytes: the ring figure of 6 bytes per element.
grad_bytes = params * (6 if reduction == "exact" else 4)
n = 2
ring = 2 * (n - 1) / n * grad_bytes
print()
print("| setup | images/s per process (median) | ratio vs one host |")
print("| --- | ---: | ---: |")
print(f"| 2 processes on one host (shared memory) | {per_one:.1f} | 1.00 |")
print(f"| 1 process on each of two hosts (TCP) | {per_two:.1f} | {per_two / per_one:.2f} |")
print()
print(f"gradient: {params} elements x {grad_bytes // params} bytes = {grad_bytes} bytes; "
      f"ring figure 2(N-1)/N x gradient bytes = {ring:.0f} bytes per process per step")
print()
print("| host | bytes sent per step (median) | ring figure | ratio |")
print("| --- | ---: | ---: | ---: |")
for i, host in enumerate(("h1 (rank 0)", "h2 (rank 1)")):
    per_step = statistics.median((c[2 + i] - c[i]) / steps for c in counters)
    print(f"| {host} | {per_step:.0f} | {ring:.0f} | {per_step / ring:.3f} |")
print()
print(f"every run, one host or two, trained the same params_sha256: {shas.pop()[:16]}...")
EOF

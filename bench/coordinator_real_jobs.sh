#!/usr/bin/env bash
# The loader-tuning benchmark with real tl-launch jobs: three concurrent jobs on this node, each
# on a stand-in device (--device sim:RATE, no core used), with different loader-to-compute
# ratios: JPEG folders at two image sizes and a CIFAR job. bench_coordinator measures the
# node's images/s with the coordinator, with an equal split of the loader cores and with the
# best static split (exhaustive search). Then tl-profile shows, for the large-JPEG job alone,
# measured vs modelled images/s for 1..4 loader workers.
#
# usage: bench/coordinator_real_jobs.sh [BUILD_DIR] [BUDGET] [STEPS]
set -euo pipefail
BUILD="${1:-build}"
BUDGET="${2:-4}"
STEPS="${3:-300}"
BIN="$BUILD/launcher"
WORK="${TMPDIR:-/tmp}/tl-bench-coordinator-real"
rm -rf "$WORK" && mkdir -p "$WORK"
"$BIN/tl-data" jpeg-synth --out "$WORK/jpeg-large" --classes 10 --train 600 --val 10 --min-size 224 --max-size 288 --seed 1 >/dev/null
"$BIN/tl-data" jpeg-synth --out "$WORK/jpeg-small" --classes 10 --train 2000 --val 10 --min-size 48 --max-size 80 --seed 2 >/dev/null
"$BIN/tl-data" synth --out "$WORK/cifar" --train 5000 --test 10 --seed 3 >/dev/null

MPI="mpirun --oversubscribe --bind-to none -np 1"
if [ "$(id -u)" -eq 0 ]; then MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 1"; fi
COMMON="--model resnet --depth 20 --batch 32 --log-every 0 --workers {workers} --coordinator-dir {run_dir} --output-dir {out}"
# Steps scale with each job's expected speed so that the three run for similar times. The
# large-JPEG job needs about two cores to feed its device; the other two need a fraction of one.
cat > "$WORK/jobs.txt" <<JOBS
$MPI $BIN/tl-launch --dataset cifar10 --data-dir $WORK/cifar --device sim:8000 --steps \$(( {steps} * 5 / 2 )) $COMMON
$MPI $BIN/tl-launch --dataset imagefolder --data-dir $WORK/jpeg-small --image-size 56 --device sim:6000 --steps \$(( {steps} * 2 )) $COMMON
$MPI $BIN/tl-launch --dataset imagefolder --data-dir $WORK/jpeg-large --image-size 224 --device sim:4000 --steps {steps} $COMMON
JOBS
echo "jobs:"; sed 's/^/  /' "$WORK/jobs.txt"
"$BUILD/bench/bench_coordinator" --commands "$WORK/jobs.txt" --budget "$BUDGET" --steps "$STEPS" \
  --probe-steps $(( STEPS / 2 )) --repeats 2

echo
echo "single large-JPEG job: measured vs modelled images/s (tl-profile)"
"$BIN/tl-profile" --workers-sweep 1,2,3,4 --max-iterations 120 --warmup-steps 5 --out "$WORK/profile" -- \
  --dataset imagefolder --data-dir "$WORK/jpeg-large" --image-size 224 --device sim:4000 \
  --model resnet --depth 20 --batch 32

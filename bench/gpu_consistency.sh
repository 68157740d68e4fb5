#!/usr/bin/env bash
# The consistency matrix of the EST runtime on a GPU: a job with N = 4 logical workers, run with
# --device cuda in every placement on 1..4 processes and through checkpoint-restart rescales
# (loader threads changed between segments), must reach one params_sha256. With one GPU,
# several processes share it through --gpu-comm mpi (tensors staged through host memory); one
# process uses NCCL. Also shown, not asserted: --reduction fp32 across placements, the same job
# on the CPU (other kernels, other bits), and images/s of each run.
# Then --overlap: ResNet-18 in DDP mode on two processes sharing the GPU (--gpu-comm mpi), overlap
# on and off in alternating rounds, exact and fp32; asserted: the same params_sha256 on and off in each mode;
# shown: the step times on and off and their ratio, as bench_overlap prints them.
#
# usage: bench/gpu_consistency.sh [BUILD_DIR] [STEPS]     (needs a CUDA libtorch and a GPU)
# TL_GPU_CONSISTENCY_PARTS: which parts run, of "matrix inplace overlap" (default: all three;
# bench/gpu_check.sh runs them as separate, separately time-boxed stages).
# exit status: 0 when every exact-reduction GPU run of a model matches that model's reference.
set -uo pipefail
DEVICE="${TL_GPU_CHECK_DEVICE:-cuda}"  # cpu: a dry run of this script on a machine without a GPU
BUILD="${1:-build}"
STEPS="${2:-20}"
BIN="$BUILD/launcher"
PARTS=" ${TL_GPU_CONSISTENCY_PARTS:-matrix inplace overlap} "
for p in $PARTS; do
  case $p in matrix | inplace | overlap) ;; *) echo "gpu_consistency.sh: TL_GPU_CONSISTENCY_PARTS: unknown part '$p' (matrix, inplace, overlap)" >&2; exit 2 ;; esac
done
part() { [[ "$PARTS" == *" $1 "* ]]; }
WORK="${TMPDIR:-/tmp}/tl-gpu-consistency"
rm -rf "$WORK" && mkdir -p "$WORK"
MPIRUN="mpirun --oversubscribe --bind-to none"
if [ "$(id -u)" -eq 0 ]; then MPIRUN="$MPIRUN --allow-run-as-root"; fi

# 320 samples / 4 workers / batch 16 = 5 steps per epoch: 20 steps cross three epoch boundaries.
"$BIN/tl-data" synth --out "$WORK/data" --train 320 --test 64 --seed 5 >/dev/null || exit 1
COMMON="--dataset cifar10 --data-dir $WORK/data --logical-workers 4 --batch 16 --seed 11 --lr 0.05
        --momentum 0.9 --log-every 0"

summaryField() {  # summaryField FILE NAME: a top-level field of summary.json
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

# segment NAME NP FLAGS...: one tl-launch run of the current model; prints nothing, leaves
# $WORK/$MODEL/NAME/{log,summary.json}. Returns tl-launch's exit status.
segment() {
  local name=$1 np=$2
  shift 2
  local out="$WORK/$MODEL/$name"
  mkdir -p "$out"
  # shellcheck disable=SC2086
  $MPIRUN -np "$np" "$BIN/tl-launch" $COMMON $MODEL_FLAGS --steps "${SEG_STEPS:-$STEPS}" --output-dir "$out" "$@" >"$out/log" 2>&1
}

FAILED=0
REFERENCE=""
# row LABEL NAME KIND: prints a table row from run NAME; KIND exact rows must match the reference.
row() {
  local label=$1 name=$2 kind=$3 rc=$4
  local summary="$WORK/$MODEL/$name/summary.json" hash="failed" ips="-" verdict
  if [ "$rc" -eq 0 ] && [ -f "$summary" ]; then
    hash=$(summaryField "$summary" params_sha256)
    ips=$(summaryField "$summary" images_per_s)
  fi
  if [ -z "$REFERENCE" ] && [ "$kind" = exact ]; then REFERENCE=$hash; fi
  if [ "$hash" = failed ]; then
    verdict="FAILED (see $WORK/$MODEL/$name/log)"
    [ "$kind" = exact ] && FAILED=1
  elif [ "$hash" = "$REFERENCE" ]; then
    verdict="same"
  elif [ "$kind" = exact ]; then
    verdict="DIFFERS"
    FAILED=1
  else
    verdict="differs (not promised)"
  fi
  printf "%-10s %-44s %-18s %10s  %s\n" "$MODEL" "$label" "${hash:0:16}" "${ips%%.*}" "$verdict"
}

# rescaled NAME: checkpoint a third of the way on 4 processes, resume on 2 and checkpoint at two
# thirds, resume on 1 process (placement 4, NCCL) and finish; loader threads 0, 2, 3.
rescaled() {
  local name=$1 ckpt="$WORK/$MODEL/$1-ckpt"
  segment "$name-a" 4 --device $DEVICE --gpu-comm mpi --workers 0 --stop-at-step $((STEPS / 3)) --checkpoint-dir "$ckpt" &&
    segment "$name-b" 2 --device $DEVICE --gpu-comm mpi --workers 2 --resume "$ckpt" --stop-at-step $((2 * STEPS / 3)) &&
    segment "$name" 1 --device $DEVICE --workers 3 --resume "$ckpt" --placement 4
}

# inplace NAME NP FLAGS...: the job on NP processes, rescaled in place with tl-ctl while it trains
# (2 -> 1 -> 3 processes -> placement 1,1,2 -> 4), every change rebuilding the device
# communicator and moving the ESTs' CUDA generators; as long as the reference `p4-long`.
inplace() {
  local name=$1 np=$2
  shift 2
  local out="$WORK/$MODEL/$name" ctl="$BIN/tl-ctl"
  mkdir -p "$out"
  # shellcheck disable=SC2086
  $MPIRUN -np "$np" "$BIN/tl-launch" $COMMON $MODEL_FLAGS --steps $LONG --output-dir "$out" "$@" >"$out/log" 2>&1 &
  local job=$!
  while [ ! -f "$out/control.json" ] && kill -0 $job 2>/dev/null; do sleep 0.1; done
  local rc=0
  "$ctl" rescale "$out" --processes 1 --at-step 10 >>"$out/ctl" 2>&1 || rc=1
  "$ctl" rescale "$out" --processes 3 >>"$out/ctl" 2>&1 || rc=1
  "$ctl" placement "$out" 1,1,2 >>"$out/ctl" 2>&1 || rc=1
  "$ctl" rescale "$out" --processes 4 >>"$out/ctl" 2>&1 || rc=1
  wait $job || rc=1
  return $rc
}

LONG=$((STEPS * 40))
printf "%-10s %-44s %-18s %10s  %s\n" model run params_sha256 images/s "vs reference"
for MODEL in cnn resnet20; do
  part matrix || part inplace || break
  case $MODEL in
    cnn) MODEL_FLAGS="--model cnn" ;;  # BatchNorm and dropout
    resnet20) MODEL_FLAGS="--model resnet --depth 20" ;;
  esac
  REFERENCE=""
  if part matrix; then
  segment p4 1 --device $DEVICE --placement 4 --workers 2; row "GPU 1 proc [4], nccl (reference)" p4 exact $?
  segment p4-again 1 --device $DEVICE --placement 4 --workers 1; row "GPU 1 proc [4], nccl, run again" p4-again exact $?
  segment ddp 4 --device $DEVICE --gpu-comm mpi --workers 1; row "GPU DDP mode: 4 procs [1,1,1,1], mpi" ddp exact $?
  segment p22 2 --device $DEVICE --gpu-comm mpi --placement 2,2 --workers 2; row "GPU 2 procs [2,2], mpi" p22 exact $?
  segment p211 3 --device $DEVICE --gpu-comm mpi --placement 2,1,1 --workers 1; row "GPU 3 procs [2,1,1], mpi" p211 exact $?
  segment p31 2 --device $DEVICE --gpu-comm mpi --placement 3,1 --workers 0; row "GPU 2 procs [3,1], mpi" p31 exact $?
  rescaled rescale; row "GPU rescale 4 -> 2 -> 1 procs, loaders 0/2/3" rescale exact $?
  fi
  if part inplace; then
  SAVED_REFERENCE=$REFERENCE
  REFERENCE=""
  SEG_STEPS=$LONG segment p4-long 1 --device $DEVICE --placement 4; row "GPU 1 proc [4], $LONG steps (reference)" p4-long exact $?
  inplace inplace 2 --device $DEVICE --gpu-comm mpi; row "GPU in place 2 -> 1 -> 3 -> [1,1,2] -> 4, mpi" inplace exact $?
  REFERENCE=$SAVED_REFERENCE
  fi
  if part matrix; then
  segment fp32-p4 1 --device $DEVICE --placement 4 --reduction fp32; row "GPU fp32 reduction, 1 proc [4]" fp32-p4 fp32 $?
  segment fp32-ddp 4 --device $DEVICE --gpu-comm mpi --reduction fp32; row "GPU fp32 reduction, DDP mode 4 procs" fp32-ddp fp32 $?
  segment cpu-p4 1 --device cpu --placement 4; row "CPU 1 proc [4] (other kernels)" cpu-p4 cpu $?
  fi
done

# --overlap: two processes sharing the GPU in DDP mode, over MPI (NCCL cannot put two ranks on
# one GPU, and a job on one process reduces after backward: there is no collective to overlap).
# This checks the GPU path (gradients handed over from autograd's device thread, buckets started
# while backward runs) and its bits, and measures its cost; a speed-up needs more GPUs.
OV_ROUNDS="${TL_GPU_OVERLAP_ROUNDS:-3}"
OV_STEPS=12
MODEL=overlap
COMMON="--dataset cifar10 --data-dir $WORK/data --batch 64 --seed 11 --lr 0.05 --momentum 0.9 --log-every 0"
MODEL_FLAGS="--model resnet18 --placement 1,1 --bucket-mb 5"
# overlapFigures NAME: "MS_PER_STEP SHA DURING BUCKETS" of run NAME: the median step time after
# two warm-up steps (the exact mode's first-step replay among them), and the last step's
# overlap figures.
overlapFigures() {
  python3 - "$WORK/$MODEL/$1" <<'PY'
import json, sys
d = sys.argv[1]
steps = [r for r in map(json.loads, open(d + "/metrics.jsonl")) if r.get("type") == "step"]
gaps = sorted(b["time"] - a["time"] for a, b in zip(steps[2:], steps[3:]))
ms = 1000 * gaps[len(gaps) // 2] if gaps else float("nan")
last = steps[-1] if steps else {}
sha = json.load(open(d + "/summary.json"))["params_sha256"]
print("%.2f %s %s %s" % (ms, sha, last.get("overlap_buckets_during_backward", "-"), last.get("overlap_buckets", "-")))
PY
}
if part overlap; then
echo
echo "--overlap: resnet18, 2 processes sharing the device, DDP mode, --gpu-comm mpi, batch 64, 5 MiB buckets, $OV_ROUNDS rounds (on/off order alternating)"
printf "%-14s %12s %12s %8s %16s  %-22s %s\n" config "off ms/step" "on ms/step" on/off "on/off range" "during backward (on)" "bits on vs off"
for REDUCTION in exact fp32; do
  OFF_MS=() ON_MS=() RATIOS=() VERDICT=same DURING="-"
  for ((r = 0; r < OV_ROUNDS; r++)); do
    if ((r % 2 == 0)); then ORDER="off on"; else ORDER="on off"; fi
    for OV in $ORDER; do
      SEG_STEPS=$OV_STEPS segment "$REDUCTION-$OV-$r" 2 --device $DEVICE --gpu-comm mpi --reduction $REDUCTION --overlap $OV
      rc=$?
      FIG="nan failed - -"
      if [ $rc -eq 0 ]; then FIG=$(overlapFigures "$REDUCTION-$OV-$r") || FIG="nan failed - -"; fi
      read -r MS SHA DUR BUCKETS <<<"$FIG"
      if [ "$OV" = on ]; then ON_MS+=("$MS"); ON_SHA=$SHA; DURING="$DUR of $BUCKETS"; else OFF_MS+=("$MS"); OFF_SHA=$SHA; fi
    done
    if [ "$ON_SHA" = failed ] || [ "$OFF_SHA" = failed ]; then VERDICT="FAILED (logs under $WORK/$MODEL)"; FAILED=1
    elif [ "$ON_SHA" != "$OFF_SHA" ] && [ "$VERDICT" = same ]; then VERDICT="DIFFERS"; FAILED=1; fi
    RATIOS+=("$(python3 -c "import sys; print(float(sys.argv[1]) / float(sys.argv[2]))" "${ON_MS[-1]}" "${OFF_MS[-1]}" 2>/dev/null || echo nan)")
  done
  python3 - "$REDUCTION" "${OFF_MS[*]}" "${ON_MS[*]}" "${RATIOS[*]}" "$DURING" "$VERDICT" <<'PY'
import statistics, sys
name, off, on, ratios, during, verdict = sys.argv[1:]
med = lambda s: statistics.median([float(x) for x in s.split()])
rs = [float(x) for x in ratios.split()]
print("%-14s %12.2f %12.2f %8.3f %16s  %-22s %s" % ("resnet18 " + name, med(off), med(on), med(ratios),
      "%.3f..%.3f" % (min(rs), max(rs)), during, verdict))
PY
done
fi

echo
if [ "$FAILED" -eq 0 ]; then
  echo "parts run:$PARTS- every exact-reduction GPU run matched its model's reference, and --overlap on/off gave the same bits"
else
  echo "some exact-reduction GPU runs FAILED or DIFFER (logs under $WORK)"
fi
exit "$FAILED"

#!/usr/bin/env bash
# The consistency report, from one command: tl against itself (the bit-equality matrix of
# tests/est/test_consistency_matrix), against real PyTorch DDP (gloo, one process per rank,
# stock and with exact gradient averaging), --reduction fp32 vs exact across placements, and a
# longer run over three placements and a rescale chain. Writes OUT/README.md, OUT/*.csv and
# OUT/*.png (bench/consistency/report.py); the raw runs stay in OUT/runs (not committed).
#
# usage: bench/consistency/run.sh [BUILD_DIR] [OUT_DIR] [--full]
#   default size: Fashion-MNIST's first 4096 training images, 3 epochs; DDP comparisons of
#   120 steps (CNN) and 40 steps (ResNet-20, synthetic CIFAR-10). --full: all 60,000 images,
#   10 epochs, 500 and 200 steps.
# Needs /usr/bin/python3 with torch (Debian's python3-torch; TL_PYTHON=... for another).
set -euo pipefail
BUILD="${1:-build}"
OUT="${2:-docs/reports/consistency}"
FULL="${3:-}"
HERE="$(cd "$(dirname "$0")" && pwd)"
REF="$HERE/../reference"
REPORT=consistency
# shellcheck source=bench/reference/report_setup.sh
source "$REF/report_setup.sh"
"$PY" -c 'import torch' 2>/dev/null || die "$PY cannot import torch (apt-get install python3-torch, or TL_PYTHON=...)"
case "$FULL" in
  --full) TRAIN=60000; TEST=10000; EPOCHS=10; CNN_STEPS=500; R20_STEPS=200; CIFAR=8192 ;;
  "") TRAIN=4096; TEST=2000; EPOCHS=3; CNN_STEPS=120; R20_STEPS=40; CIFAR=2048 ;;
  *) die "unknown option '$FULL' (expected --full)" ;;
esac

# The data: a prefix of the real Fashion-MNIST (plain IDX files) and a synthetic CIFAR-10.
report_prepare "$TRAIN" "$TEST"
"$BIN/tl-data" synth --out "$RUNS/cifar" --train "$CIFAR" --test 512 --seed 5 >/dev/null

# One definition per model; runs add their run settings.
SGD="--optimizer sgd --lr 0.05 --momentum 0.9 --dampening 0 --weight-decay 0 --lr-schedule constant
     --warmup-epochs 0 --compute-threads 1 --augment off --log-every 0"
CNN="--model cnn --dataset fashion-mnist --data-dir $FM --batch 16 --seed 7 $SGD"
R20="--model resnet --depth 20 --dataset cifar10 --data-dir $RUNS/cifar --batch 16 --seed 7 $SGD"

ddp() {  # ddp NAME INIT RANKS STEPS PYFLAGS...: PyTorch DDP, exact and stock, into $RUNS/NAME/{exact,stock}
  local name=$1 init=$2 ranks=$3 steps=$4
  shift 4
  "$PY" "$REF/ddp_reference.py" "$@" --ranks "$ranks" --steps "$steps" --averaging exact,stock \
    --init "$init" --out "$RUNS/$name" >"$RUNS/$name.log" 2>&1 ||
    die "PyTorch DDP run $name failed: see $RUNS/$name.log"
}

# 1. The bit-equality matrix, as the test suite runs it (its hashes appended to a CSV).
#    Its tests run the mpirun and tl-ctl they were built with.
log "1/4 the consistency matrix (tests/est/test_consistency_matrix)"
MATRIX_BIN="$BUILD/tests/est/test_consistency_matrix"
[ -x "$MATRIX_BIN" ] || die "no $MATRIX_BIN: build the tests (cmake --build $BUILD)"
export TL_CONSISTENCY_CSV="$RUNS/matrix.csv" TL_TEST_TMP="$RUNS/matrix-tmp"
"$MATRIX_BIN" >"$RUNS/matrix.log" 2>&1 || die "the consistency matrix failed: see $RUNS/matrix.log"
# The in-place (tl-ctl) rescale chain and the recovery from killed ranks, from their own tests.
log "1/4 in-place rescales (tests/elastic/test_inplace_rescale) and recovery (test_recovery)"
# Their jobs run against wall-clock limits: on an overloaded machine they can time out, which the
# report then states (runs/missing.txt) instead of stopping here.
"$BUILD/tests/elastic/test_inplace_rescale" --gtest_filter='*AChainOfShrinksGrowsAndPlacementChanges*' \
  </dev/null >"$RUNS/inplace.log" 2>&1 ||
  echo "in-place rescale chain (test_inplace_rescale failed, see runs/inplace.log)" >>"$RUNS/missing.txt"
"$BUILD/tests/tools/run/test_recovery" --gtest_filter='*RandomKillsEndOnTheUninterruptedBits*' \
  </dev/null >"$RUNS/recovery.log" 2>&1 ||
  echo "recovery from killed ranks (test_recovery failed, see runs/recovery.log)" >>"$RUNS/missing.txt"
unset TL_CONSISTENCY_CSV TL_TEST_TMP

# 2. tl against PyTorch DDP: the same initial weights, data order, dropout draws, optimizer.
for model in cnn r20; do
  if [ $model = cnn ]; then flags="$CNN"; steps=$CNN_STEPS; pyflags="--model cnn --dataset fashion-mnist --data-dir $FM"
  else flags="$R20"; steps=$R20_STEPS; pyflags="--model resnet --depth 20 --dataset cifar10 --data-dir $RUNS/cifar"; fi
  pyflags="$pyflags --batch 16 --seed 7 --lr 0.05 --momentum 0.9 --threads 1"
  for n in 2 4; do
    [ $model = r20 ] && [ $n = 2 ] && continue
    log "2/4 $model, N = $n: tl ($((n / 2)) ESTs on each of 2 processes) and PyTorch DDP ($n ranks)"
    tl "$model-n$n-init" 1 $flags --logical-workers $n --steps 0 --save-model "$RUNS/$model-n$n-init/init.pt"
    tl "$model-n$n-tl" 2 $flags --logical-workers $n --steps "$steps"
    # shellcheck disable=SC2086
    ddp "$model-n$n-ddp" "$RUNS/$model-n$n-init/init.pt" $n "$steps" $pyflags
  done
done

# 3 and 4. Epochs with evaluation: fp32 and exact reduction in three placements, and (exact) a
# checkpoint-restart chain 4 -> 2 -> 1 processes with the loader threads changed.
EPOCH_STEPS=$((TRAIN / 4 / 16))
for red in fp32 exact; do
  for p in "4 ddp" "2 2,2" "1 4"; do
    set -- $p
    log "3/4 --reduction $red, $1 processes, placement $2"
    place=""; [ "$2" != ddp ] && place="--placement $2"
    tl "epochs-$red-np$1" "$1" $CNN --logical-workers 4 --epochs "$EPOCHS" --eval --reduction $red $place --workers 1
  done
done
log "4/4 rescale chain 4 -> 2 -> 1 processes"
CK="$RUNS/epochs-chain-ckpt"
tl epochs-chain-a 4 $CNN --logical-workers 4 --epochs "$EPOCHS" --eval --reduction exact --workers 0 \
  --checkpoint-dir "$CK" --stop-at-step "$EPOCH_STEPS"
tl epochs-chain-b 2 --resume "$CK" --workers 2 --eval --stop-at-step $((2 * EPOCH_STEPS))
tl epochs-chain-c 1 --resume "$CK" --placement 4 --workers 3 --eval

log "report"
"$PY" "$HERE/report.py" --runs "$RUNS" --out "$OUT" --tl-report "$BIN/tl-report" \
  --size "Fashion-MNIST: first $TRAIN training and $TEST test images; $EPOCHS epochs; DDP comparisons $CNN_STEPS steps (CNN), $R20_STEPS steps (ResNet-20 on $CIFAR synthetic CIFAR-10 images)"
log "done: $OUT/README.md"

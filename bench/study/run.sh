#!/usr/bin/env bash
# The training-study report, from one command: on real Fashion-MNIST (small CNN) and synthetic
# CIFAR-10 (small CNN, ResNet-18), per-epoch data-wait / compute / communication / total time
# against loader threads 0..4; six optimizers at the same budget; BatchNorm on vs off. Writes
# OUT/README.md, OUT/*.csv and OUT/*.png (bench/study/report.py); raw runs stay in OUT/runs.
# Every number comes from tl-launch's metrics.jsonl and names the device that produced it
# (this script trains on the CPU; GPU rows appear only from runs made with --device cuda).
#
# usage: bench/study/run.sh [BUILD_DIR] [OUT_DIR] [--full]
#   default size: Fashion-MNIST's first 2048 training / 1000 test images, 3 epochs; synthetic
#   CIFAR-10 of 512 (CNN) and 256 (ResNet-18) training images, one epoch per loader setting.
#   --full: all of Fashion-MNIST, 10 epochs; 10,000 synthetic CIFAR-10 images.
set -euo pipefail
BUILD="${1:-build}"
OUT="${2:-docs/reports/study}"
FULL="${3:-}"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPORT=study
# shellcheck source=bench/reference/report_setup.sh
source "$HERE/../reference/report_setup.sh"
case "$FULL" in
  --full) TRAIN=60000; TEST=10000; EPOCHS=10; CIFAR_CNN=10000; CIFAR_R18=10000 ;;
  "") TRAIN=2048; TEST=1000; EPOCHS=3; CIFAR_CNN=512; CIFAR_R18=256 ;;
  *) die "unknown option '$FULL' (expected --full)" ;;
esac

report_prepare "$TRAIN" "$TEST"
"$BIN/tl-data" synth --out "$RUNS/cifar-cnn" --train "$CIFAR_CNN" --test 256 --seed 5 >/dev/null
"$BIN/tl-data" synth --out "$RUNS/cifar-r18" --train "$CIFAR_R18" --test 256 --seed 5 >/dev/null

COMMON="--compute-threads 1 --log-every 0 --seed 7 --logical-workers 2"
FM_CNN="--model cnn --dataset fashion-mnist --data-dir $FM --batch 32 $COMMON"

# 1. Loader threads: 2 processes (one logical worker each), one epoch per setting, default
#    augmentation (CIFAR: crop + flip; Fashion-MNIST: shift). Settings alternate per model.
for w in 0 1 2 3 4; do
  log "1/3 loader threads $w"
  tl "loader-fm-cnn-w$w" 2 $FM_CNN --workers "$w" --epochs 1 --optimizer sgd --lr 0.05 --momentum 0.9
  tl "loader-cifar-cnn-w$w" 2 --model cnn --dataset cifar10 --data-dir "$RUNS/cifar-cnn" --batch 32 $COMMON \
    --workers "$w" --epochs 1 --optimizer sgd --lr 0.05 --momentum 0.9
  tl "loader-cifar-r18-w$w" 2 --model resnet18 --dataset cifar10 --data-dir "$RUNS/cifar-r18" --batch 32 $COMMON \
    --workers "$w" --epochs 1 --optimizer sgd --lr 0.05 --momentum 0.9
done

# 2. Optimizers at the same budget (epochs, batch, data, model): PyTorch's usual learning rates,
#    constant schedule, test accuracy after every epoch.
OPT_COMMON="--epochs $EPOCHS --eval --workers 1 --lr-schedule constant --warmup-epochs 0"
while read -r name flags; do
  log "2/3 optimizer $name"
  # shellcheck disable=SC2086
  tl "opt-$name" 2 $FM_CNN $OPT_COMMON $flags
done <<'EOF'
sgd --optimizer sgd --lr 0.05 --momentum 0 --weight-decay 0
nesterov --optimizer nesterov --lr 0.05 --momentum 0.9 --dampening 0 --weight-decay 0
adagrad --optimizer adagrad --lr 0.01 --lr-decay 0 --weight-decay 0 --initial-accumulator 0
adadelta --optimizer adadelta --lr 1.0 --rho 0.9 --weight-decay 0
adam --optimizer adam --lr 0.001 --beta1 0.9 --beta2 0.999 --weight-decay 0
adamw --optimizer adamw --lr 0.001 --beta1 0.9 --beta2 0.999 --weight-decay 0.01
EOF

# 3. BatchNorm on and off: the CNN on Fashion-MNIST and on synthetic CIFAR-10, SGD with momentum.
for bn in on off; do
  log "3/3 BatchNorm $bn"
  flag=""; [ $bn = off ] && flag="--no-batchnorm"
  tl "bn-fm-$bn" 2 $FM_CNN $OPT_COMMON $flag --optimizer sgd --lr 0.05 --momentum 0.9 --weight-decay 0
  tl "bn-cifar-$bn" 2 --model cnn --dataset cifar10 --data-dir "$RUNS/cifar-cnn" --batch 32 $COMMON $OPT_COMMON \
    $flag --optimizer sgd --lr 0.05 --momentum 0.9 --weight-decay 0
done

log "report"
"$PY" "$HERE/report.py" --runs "$RUNS" --out "$OUT" --tl-report "$BIN/tl-report" \
  --size "Fashion-MNIST: first $TRAIN training and $TEST test images, $EPOCHS epochs; synthetic CIFAR-10: $CIFAR_CNN (CNN) and $CIFAR_R18 (ResNet-18) training images, 256 test images"
log "done: $OUT/README.md"

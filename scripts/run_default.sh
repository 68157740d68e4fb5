#!/usr/bin/env bash
# Sets everything up, then trains the embedded default job: a small CNN on the real
# Fashion-MNIST (Debian's dataset-fashion-mnist), 2 processes, one epoch, test accuracy at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the default job runs: tl-launch (and tl-coordinator, which --workers auto starts);
# scripts/test.sh builds everything else.
./scripts/setup.sh tl-launch tl-coordinator
MPI_FLAGS=(--oversubscribe)
if [ "$(id -u)" -eq 0 ]; then MPI_FLAGS+=(--allow-run-as-root); fi
OUT="${TL_OUTPUT_DIR:-out/default}"
mpirun "${MPI_FLAGS[@]}" -np 2 build/launcher/tl-launch \
  --model cnn --dataset fashion-mnist --data-dir /usr/share/datasets/fashion-mnist \
  --epochs 1 --batch 64 --optimizer sgd --lr 0.05 --momentum 0.9 --workers 1 \
  --eval --output-dir "$OUT" "$@"
echo "metrics: $OUT/metrics.jsonl  summary: $OUT/summary.json"

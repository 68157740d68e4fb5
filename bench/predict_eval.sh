#!/usr/bin/env bash
# tl-predict's evaluation: MAPE per metric on held-out models for the analytic model (calibrated
# on the other models' runs), the ridge regression and the graph network (fitted on them) and
# the mean of the training runs.
# Uses a dataset from bench/predict_dataset.sh (made first when the file is missing).
#
# usage: bench/predict_eval.sh [BUILD_DIR] [DATASET] [HOLDOUT]
set -euo pipefail
BUILD="${1:-build}"
DATASET="${2:-${TMPDIR:-/tmp}/tl-predict-runs.jsonl}"
HOLDOUT="${3:-resnet-14,mlp}"
if [ ! -s "$DATASET" ]; then "$(dirname "$0")/predict_dataset.sh" "$BUILD" "$DATASET"; fi
"$BUILD/launcher/tl-predict" evaluate --dataset "$DATASET" --holdout "$HOLDOUT"

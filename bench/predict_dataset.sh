#!/usr/bin/env bash
# tl-predict's training data: short tl-launch jobs over a family of model variants (models,
# depths, batches, N = 1..3, exact and fp32 reduction) on this machine, each recording its twelve
# resource metrics (summary.json "usage"). One JSON line per run: {"shape": ..., "measured": ...}.
# 30 runs of 12 steps: a few minutes on 2 cores.
#
# usage: bench/predict_dataset.sh [BUILD_DIR] [OUT_FILE] [STEPS]
set -euo pipefail
BUILD="${1:-build}"
OUT="${2:-${TMPDIR:-/tmp}/tl-predict-runs.jsonl}"
STEPS="${3:-12}"
BIN="$BUILD/launcher"
PY=/usr/bin/python3
WORK="${TMPDIR:-/tmp}/tl-predict-dataset"
rm -rf "$WORK" && mkdir -p "$WORK"
"$BIN/tl-data" synth --out "$WORK/cifar" --train 2000 --test 10 --seed 5 >/dev/null

MPI="mpirun --oversubscribe --bind-to none"
if [ "$(id -u)" -eq 0 ]; then MPI="$MPI --allow-run-as-root"; fi
: > "$OUT"
run=0
for model in "cnn 0" "mlp 0" "resnet 8" "resnet 14" "resnet 20"; do
  set -- $model
  arch=$1 depth=$2
  for batch in 8 32; do
    for np in 1 2 3; do
      run=$((run + 1))
      reduction=exact; [ $((run % 2)) -eq 0 ] && reduction=fp32
      out="$WORK/run$run"
      depthFlag=""; [ "$depth" -gt 0 ] && depthFlag="--depth $depth"
      if ! $MPI -np "$np" "$BIN/tl-launch" --dataset cifar10 --data-dir "$WORK/cifar" --model "$arch" $depthFlag \
          --batch "$batch" --steps "$STEPS" --reduction "$reduction" --compute-threads 1 --workers 0 \
          --log-every 0 --output-dir "$out" >"$WORK/run$run.log" 2>&1; then
        echo "run $run ($arch $depth batch $batch N=$np) failed; see $WORK/run$run.log" >&2
        exit 1
      fi
      "$PY" - "$out/summary.json" "$arch" "$depth" "$batch" "$np" "$STEPS" "$reduction" >>"$OUT" <<'PYEOF'
import json, sys
path, arch, depth, batch, np, steps, reduction = sys.argv[1:]
s = json.load(open(path))
names = ["compute_idle_s", "compute_burst_s", "compute_burst_util", "memory_idle_s", "memory_burst_s",
         "memory_burst_mb", "tx_idle_s", "tx_burst_s", "tx_burst_mb_per_s", "rx_idle_s", "rx_burst_s",
         "rx_burst_mb_per_s"]
shape = {"model": arch, "depth": int(depth), "batch": int(batch), "processes": int(np),
         "steps": int(steps), "reduction": reduction, "optimizer": "sgd", "device": "cpu",
         "compute_threads": 1}
print(json.dumps({"shape": shape, "measured": {k: s["usage"][k] for k in names},
                  "tx_bytes_per_step": s["usage"]["tx_bytes_per_step"], "wall_time_s": s["wall_time_s"]}))
PYEOF
      echo "run $run: $arch ${depth} batch $batch N=$np $reduction"
    done
  done
done
echo "wrote $run runs to $OUT"

#!/usr/bin/env bash
# tl-predict's training data: short tl-launch jobs over a family of model variants on this
# machine, each recording its twelve resource metrics (summary.json "usage"). One JSON line per
# run: {"shape": ..., "measured": ..., "observed": ...}; "observed" keeps the counts the analytic
# calibration reads (bursts, steady-state span, steps, bytes per step).
#
# The family: cnn and mlp; the CIFAR ResNet at depths 8, 14, 20, 26; cnn, resnet-8 and resnet-20
# also without BatchNorm (a different layer graph of the same depth). tl-launch has no width
# flag (the mlp's hidden sizes are not a job flag), so widths are not varied. Batch 8, 16 and
# 32; N = 1, 2, 3; exact and fp32 reduction alternating; one compute thread; 12 steps.
# 81 runs: 3.5 minutes on 2 shared cores at load average 3, 10 minutes at load average 8
# (measured 2026-11-26).
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
PARTIAL="$OUT.partial"
: > "$PARTIAL"
run=0
# arch depth batchnorm
for model in "cnn 0 1" "cnn 0 0" "mlp 0 1" "resnet 8 1" "resnet 8 0" "resnet 14 1" "resnet 20 1" \
             "resnet 20 0" "resnet 26 1"; do
  set -- $model
  arch=$1 depth=$2 bn=$3
  for batch in 8 16 32; do
    for np in 1 2 3; do
      run=$((run + 1))
      reduction=exact; [ $((run % 2)) -eq 0 ] && reduction=fp32
      out="$WORK/run$run"
      flags=""
      [ "$depth" -gt 0 ] && flags="--depth $depth"
      [ "$bn" -eq 0 ] && flags="$flags --no-batchnorm"
      if ! $MPI -np "$np" "$BIN/tl-launch" --dataset cifar10 --data-dir "$WORK/cifar" --model "$arch" $flags \
          --batch "$batch" --steps "$STEPS" --reduction "$reduction" --compute-threads 1 --workers 0 \
          --log-every 0 --output-dir "$out" >"$WORK/run$run.log" 2>&1; then
        echo "run $run ($arch $depth batch $batch N=$np) failed; see $WORK/run$run.log" >&2
        exit 1
      fi
      "$PY" - "$out/summary.json" "$arch" "$depth" "$bn" "$batch" "$np" "$STEPS" "$reduction" >>"$PARTIAL" <<'PYEOF'
import json, sys
path, arch, depth, bn, batch, np, steps, reduction = sys.argv[1:]
s = json.load(open(path))
u = s["usage"]
names = ["compute_idle_s", "compute_burst_s", "compute_burst_util", "memory_idle_s", "memory_burst_s",
         "memory_burst_mb", "tx_idle_s", "tx_burst_s", "tx_burst_mb_per_s", "rx_idle_s", "rx_burst_s",
         "rx_burst_mb_per_s"]
shape = {"model": arch, "depth": int(depth), "batchnorm": bn == "1", "batch": int(batch),
         "processes": int(np), "steps": int(steps), "reduction": reduction, "optimizer": "sgd",
         "device": "cpu", "compute_threads": 1}
observed = {k: u[k] for k in ["compute_bursts", "tx_bursts", "rx_bursts", "span_s", "first_step", "last_step",
                              "tx_bytes_per_step", "rx_bytes_per_step"]}
observed["wall_time_s"] = s["wall_time_s"]
print(json.dumps({"shape": shape, "measured": {k: u[k] for k in names}, "observed": observed}))
PYEOF
      echo "run $run: $arch ${depth} bn=$bn batch $batch N=$np $reduction"
    done
  done
done
mv "$PARTIAL" "$OUT"
echo "wrote $run runs to $OUT"

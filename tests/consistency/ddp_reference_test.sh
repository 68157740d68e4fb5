#!/usr/bin/env bash
# tl against real PyTorch DDP (bench/reference/ddp_reference.py: gloo, one process per rank),
# the fast subset of bench/consistency: a CNN with BatchNorm and dropout, 10 steps on synthetic
# CIFAR-10, the same initial weights (tl's --steps 0 --save-model), data order and dropout draws.
# N = 4: tl (2 ESTs on each of 2 processes) = DDP (4 ranks) with exact averaging, every step's
# loss and the final params_sha256; stock DDP (float32 gloo sums) is recorded, not asserted.
# On CIFAR-10 also with --clip-grad-norm (clip_grad_norm_ in DDP): every step's grad_norm too;
# and with the GPT recipe's knobs (issue 40): a warm-up and cosine in steps (a LambdaLR in DDP),
# weight decay on matrices only (two parameter groups), clipping and 2 micro-batches (accumulation
# with no_sync). Every step's lr is compared.
# Skipped (exit 77) when /usr/bin/python3 (or TL_PYTHON) cannot import torch.
# With DATASET tensors the same job reads a tl-data tensors-synth folder (float32 .npy arrays of
# 3x32x32, 10 classes): tl's array dataset gives DDP's batches, byte for byte.
# usage: ddp_reference_test.sh LAUNCHER_BIN_DIR SOURCE_DIR [DATASET: cifar10 (default) | tensors]
set -uo pipefail
BIN="$1"
SRC="$2"
DATASET="${3:-cifar10}"
PY="${TL_PYTHON:-/usr/bin/python3}"
if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "SKIP: $PY cannot import torch (python3-torch is not installed)"
  exit 77
fi
WORK="${TL_TEST_TMP:-/tmp}/ddp_reference_test_$DATASET"
rm -rf "$WORK" && mkdir -p "$WORK"
MPIRUN="${TL_MPIEXEC:-mpirun} --oversubscribe --bind-to none"
fail() { echo "FAIL: $*"; exit 1; }

if [ "$DATASET" = tensors ]; then
  "$BIN/tl-data" tensors-synth --out "$WORK/data" --train 256 --test 64 --shape 3,32,32 --classes 10 \
    --seed 5 >/dev/null || fail "tl-data tensors-synth"
else
  "$BIN/tl-data" synth --out "$WORK/data" --train 256 --test 64 --seed 5 >/dev/null || fail "tl-data synth"
fi
BASE="--model cnn --dataset $DATASET --data-dir $WORK/data --batch 8 --seed 11 --optimizer sgd --lr 0.05
      --momentum 0.9 --dampening 0 --compute-threads 1 --augment off --workers 0 --log-every 0"
JOB="$BASE --weight-decay 0 --lr-schedule constant --warmup-epochs 0"
PYBASE="--model cnn --dataset $DATASET --data-dir $WORK/data --batch 8 --seed 11 --lr 0.05 --momentum 0.9
        --threads 1 --steps 10"
PYJOB="$PYBASE"

# compare TL_RUN DDP_RUN: 0 when every step's loss and the final params_sha256 are equal;
# prints the first step that differs and the largest relative difference.
compare() {
  "$PY" - "$1" "$2" <<'PY'
import csv, json, sys
tl_run, ddp_run = sys.argv[1], sys.argv[2]
tl = {r["step"]: r["loss"] for r in map(json.loads, open(tl_run + "/metrics.jsonl")) if r.get("type") == "step"}
rows = list(csv.DictReader(open(ddp_run + "/steps.csv")))
ddp = {int(r["step"]): float(r["loss"]) for r in rows}
if sorted(tl) != sorted(ddp) or len(tl) != 10:
    sys.exit("steps differ: tl %s, DDP %s" % (sorted(tl), sorted(ddp)))
tl_steps = [r for r in map(json.loads, open(tl_run + "/metrics.jsonl")) if r.get("type") == "step"]
def same_per_step(column):  # a column DDP recorded, every step: tl must have each value exactly
    ddp_values = {int(r["step"]): float(r[column]) for r in rows if r.get(column) not in (None, "", "nan")}
    if not ddp_values:
        return
    tl_values = {r["step"]: r.get(column) for r in tl_steps}
    bad = [s for s in sorted(ddp_values) if tl_values.get(s) != ddp_values[s]]
    print("  %s: %d steps, first that differs: %s (DDP's first %r, last %r)"
          % (column, len(ddp_values), bad[0] if bad else "none", ddp_values[min(ddp_values)],
             ddp_values[max(ddp_values)]))
    if bad or len(ddp_values) != 10:
        sys.exit(1)
same_per_step("lr")         # the learning rate each step used, as the optimizer got it
same_per_step("grad_norm")  # with --clip-grad-norm: the norm before clipping
diff = [s for s in sorted(tl) if tl[s] != ddp[s]]
worst = max(abs(tl[s] - ddp[s]) / abs(tl[s]) for s in tl)
same = json.load(open(tl_run + "/summary.json"))["params_sha256"] == json.load(open(ddp_run + "/summary.json"))["params_sha256"]
print("  first step that differs: %s, max relative loss difference %.3g, same params_sha256: %s"
      % (diff[0] if diff else "none", worst, same))
sys.exit(0 if not diff and same else 1)
PY
}

N=4
$MPIRUN -np 1 "$BIN/tl-launch" $JOB --logical-workers $N --steps 0 --save-model "$WORK/init.pt" \
  --output-dir "$WORK/init" >"$WORK/init.log" 2>&1 || fail "tl-launch --steps 0 --save-model: $(head -3 "$WORK/init.log")"
$MPIRUN -np 2 "$BIN/tl-launch" $JOB --logical-workers $N --placement 2,2 --steps 10 --output-dir "$WORK/tl" \
  >"$WORK/tl.log" 2>&1 || fail "tl-launch: $(head -3 "$WORK/tl.log")"
"$PY" "$SRC/bench/reference/ddp_reference.py" $PYJOB --ranks $N --init "$WORK/init.pt" --averaging exact,stock \
  --out "$WORK/ddp" >"$WORK/ddp.log" 2>&1 || fail "PyTorch DDP: $(tail -5 "$WORK/ddp.log")"

status=0
echo "tl (4 ESTs, 2,2 on 2 processes) vs PyTorch DDP, 4 ranks, exact averaging hook:"
compare "$WORK/tl" "$WORK/ddp/exact" || { echo "FAIL: tl differs from DDP with exact averaging"; status=1; }
echo "tl vs stock PyTorch DDP, 4 ranks (float32 gloo sums; recorded, not asserted):"
compare "$WORK/tl" "$WORK/ddp/stock"

if [ "$DATASET" = cifar10 ]; then
  # Clipping to 0.5 (the CNN's gradient norms are a few units: every step clips), on 3,1.
  $MPIRUN -np 2 "$BIN/tl-launch" $JOB --logical-workers $N --placement 3,1 --steps 10 --clip-grad-norm 0.5 \
    --output-dir "$WORK/tl-clip" >"$WORK/tl-clip.log" 2>&1 || fail "tl-launch --clip-grad-norm: $(head -3 "$WORK/tl-clip.log")"
  "$PY" "$SRC/bench/reference/ddp_reference.py" $PYJOB --ranks $N --init "$WORK/init.pt" --averaging exact \
    --clip-grad-norm 0.5 --out "$WORK/ddp-clip" >"$WORK/ddp-clip.log" 2>&1 ||
    fail "PyTorch DDP with clip_grad_norm_: $(tail -5 "$WORK/ddp-clip.log")"
  echo "tl --clip-grad-norm 0.5 (3,1) vs PyTorch DDP with clip_grad_norm_, exact averaging hook:"
  compare "$WORK/tl-clip" "$WORK/ddp-clip/exact" || { echo "FAIL: tl differs from DDP with clipping"; status=1; }
  if cmp -s <(grep -o '"params_sha256": *"[0-9a-f]*"' "$WORK/tl-clip/summary.json") \
            <(grep -o '"params_sha256": *"[0-9a-f]*"' "$WORK/tl/summary.json"); then
    echo "FAIL: clipping changed nothing (the bound never bit)"; status=1
  fi

  # The GPT recipe on 3,1: warm-up 3 steps, cosine to 0.005 at the last step (index 9, the
  # default --decay-steps), weight decay 0.1 on tensors of 2 or more dimensions, clipping at 1,
  # and each batch of 8 in 2 micro-batches (BatchNorm's running statistics see both; DDP's
  # accumulation under no_sync).
  RECIPE="--weight-decay 0.1 --weight-decay-on matrices --lr-schedule cosine --warmup-steps 3 --min-lr 0.005
          --clip-grad-norm 1 --micro-batches 2"
  $MPIRUN -np 2 "$BIN/tl-launch" $BASE $RECIPE --logical-workers $N --placement 3,1 --steps 10 \
    --output-dir "$WORK/tl-recipe" >"$WORK/tl-recipe.log" 2>&1 || fail "tl-launch recipe: $(head -3 "$WORK/tl-recipe.log")"
  "$PY" "$SRC/bench/reference/ddp_reference.py" $PYBASE $RECIPE --ranks $N --init "$WORK/init.pt" --averaging exact \
    --out "$WORK/ddp-recipe" >"$WORK/ddp-recipe.log" 2>&1 || fail "PyTorch DDP recipe: $(tail -5 "$WORK/ddp-recipe.log")"
  echo "tl recipe (3,1) vs PyTorch DDP with LambdaLR, parameter groups, clip_grad_norm_ and accumulation, exact averaging hook:"
  compare "$WORK/tl-recipe" "$WORK/ddp-recipe/exact" || { echo "FAIL: tl differs from DDP with the recipe"; status=1; }
fi
[ $status = 0 ] && echo "PASS"
exit $status

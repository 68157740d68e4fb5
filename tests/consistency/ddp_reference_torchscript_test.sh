#!/usr/bin/env bash
# tl's own-model path (--model-file, issue 28) against real PyTorch DDP
# (bench/reference/ddp_reference.py --model-file: gloo, one process per rank, exact averaging).
# Two jobs, N = 4 logical workers: tl with 2 ESTs on each of 2 processes, DDP with 4 ranks; the
# same TorchScript file (the same initial weights), data order and dropout draws:
#  gpt:    examples/gpt's model (export.py), --model-returns loss, --dataset tokens, AdamW with
#          decoupled weight decay;
#  resnet: tl's CIFAR ResNet scripted with tl's initial weights (bench/reference/script_resnet.py),
#          BatchNorm, --dataset cifar10, SGD with momentum and weight decay.
#  gpt_recipe: the gpt job with every knob of the GPT recipe (docs/guide/gpt-recipe.md).
#  gpt_epochs_micro (short): gpt_epochs (below) in 2 micro-batches, its short batches too.
# Asserted: every step's loss (and lr and grad_norm where DDP records them) and the final
# params_sha256 are equal (bench/reference/compare_runs.py).
# MODE short (CTest): a 1-layer GPT of width 16 on 20000 `tl-data tokens-synth` tokens and a
#   ResNet-8 on 40 images, 8 steps each. The ResNet's shards are 10 images, batches of 4, 4, 2:
#   its 8 steps cross two epochs (reshuffled) and take short batches. The same GPT on 600 tokens
#   (37 samples: shards of 10, batches of 4, 4, 2) crosses epochs too, but there tl parts from
#   exact averaging at step 8: tl's fixed-point reduction rounds gradient elements far below
#   their tensor's largest, which exact averaging keeps (docs/reports/ddp_reference_torchscript.md).
#   That job asserts tl = DDP with tl's reduction in the comm hook (--averaging fixed) instead,
#   and records exact averaging. MODE full (docs/reports/ddp_reference_torchscript.md): a 2-layer GPT of width
#   64, context 64, on the fortunes corpus (examples/gpt/prepare_data.py) and a ResNet-20, 40
#   steps each, and stock DDP (float32 gloo sums) recorded beside exact, not asserted.
# Skipped (exit 77) when /usr/bin/python3 (or TL_PYTHON) cannot import torch.
# usage: ddp_reference_torchscript_test.sh LAUNCHER_BIN_DIR SOURCE_DIR [MODE: short (default) | full]
set -uo pipefail
BIN="$1"
SRC="$2"
MODE="${3:-short}"
PY="${TL_PYTHON:-/usr/bin/python3}"
case "$MODE" in short|full) ;; *) echo "FAIL: unknown MODE '$MODE' (expected short or full)"; exit 2 ;; esac
if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "SKIP: $PY cannot import torch (python3-torch is not installed)"
  exit 77
fi
WORK="${TL_TEST_TMP:-/tmp}/ddp_reference_torchscript_$MODE"
rm -rf "$WORK" && mkdir -p "$WORK"
MPIRUN="${TL_MPIEXEC:-mpirun} --oversubscribe --bind-to none"
REF="$SRC/bench/reference"
fail() { echo "FAIL: $*"; exit 1; }
now() { date +%s.%N; }
seconds() { "$PY" -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"; }
N=4
COMMON="--seed 11 --lr-schedule constant --warmup-epochs 0 --compute-threads 1 --workers 0 --log-every 0"
if [ "$MODE" = full ]; then
  STEPS=40 AVERAGING=exact,stock
else
  STEPS=8 AVERAGING=exact
fi
ASSERTED=exact
status=0

# run NAME STEPS "TL_JOB" "DDP_JOB": tl (2,2) and DDP (4 ranks), then the comparison.
run() {
  local name="$1" STEPS="$2" tljob="$3" ddpjob="$4" t0 t1 t2
  t0=$(now)
  $MPIRUN -np 2 "$BIN/tl-launch" $tljob $COMMON --logical-workers $N --placement 2,2 --steps $STEPS \
    --output-dir "$WORK/$name/tl" >"$WORK/$name/tl.log" 2>&1 || fail "$name: tl-launch: $(tail -3 "$WORK/$name/tl.log")"
  t1=$(now)
  "$PY" "$REF/ddp_reference.py" $ddpjob --seed 11 --threads 1 --ranks $N --steps $STEPS \
    --averaging $AVERAGING --out "$WORK/$name/ddp" >"$WORK/$name/ddp.log" 2>&1 \
    || fail "$name: PyTorch DDP: $(tail -5 "$WORK/$name/ddp.log")"
  t2=$(now)
  echo "$name: tl $(seconds "$t0" "$t1") s, PyTorch DDP ($AVERAGING) $(seconds "$t1" "$t2") s"
  "$PY" "$REF/compare_runs.py" "$WORK/$name/tl" "$WORK/$name/ddp/$ASSERTED" $STEPS \
    --label "$name: tl (4 ESTs, 2,2) vs DDP (4 ranks, $ASSERTED averaging)" || status=1
  if [ "$ASSERTED" = fixed ]; then
    "$PY" "$REF/compare_runs.py" "$WORK/$name/tl" "$WORK/$name/ddp/exact" $STEPS \
      --label "$name: tl vs DDP, exact averaging (recorded, not asserted)"
  fi
  if [ "$AVERAGING" = exact,stock ]; then
    "$PY" "$REF/compare_runs.py" "$WORK/$name/tl" "$WORK/$name/ddp/stock" $STEPS \
      --label "$name: tl vs stock DDP (float32 gloo sums; recorded, not asserted)"
  fi
}

# --- gpt: examples/gpt's model, loss-returning, on tokens, AdamW.
mkdir -p "$WORK/gpt"
if [ "$MODE" = full ]; then
  "$PY" "$SRC/examples/gpt/prepare_data.py" --out "$WORK/gpt/corpus" >"$WORK/gpt/prepare.log" 2>&1 \
    || fail "examples/gpt/prepare_data.py: $(tail -2 "$WORK/gpt/prepare.log")"
  SEQ=64 GPT="--seq-len 64 --layers 2 --width 64 --heads 4" BATCH=8
else
  "$BIN/tl-data" tokens-synth --out "$WORK/gpt/corpus" --train 20000 --val 200 --vocab 16 --seed 3 >/dev/null \
    || fail "tl-data tokens-synth"
  echo '{"vocab_size": 16}' >"$WORK/gpt/corpus/meta.json"  # what export.py reads
  SEQ=16 GPT="--seq-len 16 --layers 1 --width 16 --heads 2" BATCH=4
fi
"$PY" "$SRC/examples/gpt/export.py" --data "$WORK/gpt/corpus" --out "$WORK/gpt/gpt.pt" $GPT --dropout 0.1 \
  --seed 0 >"$WORK/gpt/export.log" 2>&1 || fail "examples/gpt/export.py: $(tail -2 "$WORK/gpt/export.log")"
echo "gpt: $(cat "$WORK/gpt/export.log")"
ADAMW="--optimizer adamw --lr 0.002 --beta1 0.9 --beta2 0.99 --eps 1e-8 --weight-decay 0.01"
run gpt $STEPS "--model-file $WORK/gpt/gpt.pt --model-returns loss --dataset tokens --data-dir $WORK/gpt/corpus
         --seq-len $SEQ --batch $BATCH $ADAMW" \
        "--model-file $WORK/gpt/gpt.pt --model-returns loss --dataset tokens --data-dir $WORK/gpt/corpus
         --seq-len $SEQ --batch $BATCH $ADAMW"

# --- gpt_recipe: the same GPT with the GPT recipe (issue 40): AdamW (0.9, 0.95), warm-up and
# cosine in steps (a LambdaLR in DDP), weight decay on matrices but the position embedding
# (--no-decay over the TorchScript module's parameter names), clipping, 2 micro-batches (no_sync).
RECIPE="--optimizer adamw --lr 0.002 --beta1 0.9 --beta2 0.95 --eps 1e-8 --weight-decay 0.1 --weight-decay-on matrices
        --no-decay ^positions\\. --lr-schedule cosine --warmup-steps 2 --min-lr 0.0002 --clip-grad-norm 1 --micro-batches 2"
mkdir -p "$WORK/gpt_recipe"
COMMON="--seed 11 --compute-threads 1 --workers 0 --log-every 0" \
  run gpt_recipe $STEPS "--model-file $WORK/gpt/gpt.pt --model-returns loss --dataset tokens --data-dir $WORK/gpt/corpus
         --seq-len $SEQ --batch $BATCH $RECIPE" \
        "--model-file $WORK/gpt/gpt.pt --model-returns loss --dataset tokens --data-dir $WORK/gpt/corpus
         --seq-len $SEQ --batch $BATCH $RECIPE"

# --- resnet: tl's CIFAR ResNet, scripted with tl's initial weights, BatchNorm, SGD + momentum.
mkdir -p "$WORK/resnet"
if [ "$MODE" = full ]; then DEPTH=20 TRAIN=1024 BATCH=16; else DEPTH=8 TRAIN=40 BATCH=4; fi
"$BIN/tl-data" synth --out "$WORK/resnet/data" --train $TRAIN --test 64 --seed 5 >/dev/null || fail "tl-data synth"
DATA="--dataset cifar10 --data-dir $WORK/resnet/data --augment off --batch $BATCH"
$MPIRUN -np 1 "$BIN/tl-launch" --model resnet --depth $DEPTH $DATA $COMMON --logical-workers $N --steps 0 \
  --save-model "$WORK/resnet/init.pt" --output-dir "$WORK/resnet/init" >"$WORK/resnet/init.log" 2>&1 \
  || fail "tl-launch --steps 0 --save-model: $(tail -3 "$WORK/resnet/init.log")"
"$PY" "$REF/script_resnet.py" --init "$WORK/resnet/init.pt" --depth $DEPTH --out "$WORK/resnet/resnet.pt" \
  >"$WORK/resnet/script.log" 2>&1 || fail "script_resnet.py: $(tail -2 "$WORK/resnet/script.log")"
echo "resnet: $(cat "$WORK/resnet/script.log")"
SGD="--optimizer sgd --lr 0.05 --momentum 0.9 --weight-decay 0.0005"
run resnet $STEPS "--model-file $WORK/resnet/resnet.pt $DATA $SGD --dampening 0" \
           "--model-file $WORK/resnet/resnet.pt --dataset cifar10 --data-dir $WORK/resnet/data --batch $BATCH $SGD"

# --- gpt_epochs (short only): the GPT on 600 tokens, crossing two epochs with short batches.
if [ "$MODE" = short ]; then
  mkdir -p "$WORK/gpt_epochs"
  "$BIN/tl-data" tokens-synth --out "$WORK/gpt_epochs/corpus" --train 600 --val 200 --vocab 16 --seed 3 \
    >/dev/null || fail "tl-data tokens-synth"
  GPTJOB="--model-file $WORK/gpt/gpt.pt --model-returns loss --dataset tokens --data-dir $WORK/gpt_epochs/corpus
          --seq-len 16 --batch 4 $ADAMW"
  AVERAGING=fixed,exact ASSERTED=fixed run gpt_epochs $STEPS "$GPTJOB" "$GPTJOB"
  # The same with 2 micro-batches: the short batches of 2 are cut into pieces of 1.
  mkdir -p "$WORK/gpt_epochs_micro"
  AVERAGING=fixed ASSERTED=fixed run gpt_epochs_micro $STEPS "$GPTJOB --micro-batches 2" "$GPTJOB --micro-batches 2"
fi

[ $status = 0 ] && echo "PASS"
exit $status

#!/usr/bin/env bash
# The GPT example, one command from the text to a trained model:
#   examples/gpt/run.sh [OUT]        (OUT defaults to out/gpt; run from anywhere)
# 1. prepare_data.py: the fortunes text -> OUT/corpus/{train,val}.npy (character ids)
# 2. export.py: the model of model.py, scripted -> OUT/gpt.pt
# 3. tl-launch: 4 ESTs on 2 processes, --model-returns loss, the GPT recipe (AdamW 0.9/0.95 at
#    peak lr 0.01, 10 warm-up steps, cosine to 0.001, decay 0.1 on matrices, clipping at 1:
#    docs/guide/gpt-recipe.md), validation on 20 fixed batches of
#    val.npy every 50 steps (the lowest kept in OUT/run/best/), and on all of it at the end
# 4. the validation loss next to the unigram baseline; exit 1 unless it is below
# Needs Debian's fortunes and python3-torch (python is used only for steps 1 and 2) and a
# built tree (scripts/setup.sh). STEPS, SEQ_LEN, LAYERS and PROCESSES override the defaults.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/out/gpt}"
steps="${STEPS:-300}"
seq_len="${SEQ_LEN:-64}"
layers="${LAYERS:-2}"
processes="${PROCESSES:-2}"
mkdir -p "$out"

/usr/bin/python3 "$here/prepare_data.py" --out "$out/corpus"
/usr/bin/python3 "$here/export.py" --data "$out/corpus" --out "$out/gpt.pt" \
    --seq-len "$seq_len" --layers "$layers"
mpirun_flags=(--oversubscribe)
if [ "$(id -u)" = 0 ]; then mpirun_flags+=(--allow-run-as-root); fi
mpirun "${mpirun_flags[@]}" -np "$processes" "$root/build/launcher/tl-launch" \
    --model-file "$out/gpt.pt" --model-returns loss \
    --dataset tokens --data-dir "$out/corpus" --seq-len "$seq_len" \
    --logical-workers 4 --batch 16 --steps "$steps" \
    --optimizer adamw --lr 0.01 --beta1 0.9 --beta2 0.95 --weight-decay 0.1 --weight-decay-on matrices \
    --lr-schedule cosine --warmup-steps 10 --min-lr 0.001 --clip-grad-norm 1 \
    --eval --eval-every 50 --keep-best --log-every 50 --output-dir "$out/run" --save-model "$out/gpt-trained.pt"
# The run as a picture: loss, validation loss, learning rate, samples/s against the step, events marked.
"$root/build/launcher/tl-report" run "$out/run" --out "$out/run.png"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
meta = json.load(open(f"{out}/corpus/meta.json"))
summary = json.load(open(f"{out}/run/summary.json"))
loss = summary.get("test_loss")
for r in map(json.loads, open(f"{out}/run/metrics.jsonl")):
    if r.get("type") == "eval":
        print(f"step {r['step']:4d}: validation loss {r['val_loss']:.3f} nats/char (perplexity {r['val_ppl']:.2f})")
if "best" in summary:
    print(f"best: step {summary['best']['step']}, validation loss {summary['best']['val_loss']:.3f} "
          f"({out}/run/best/)")
print(f"validation loss {loss:.3f} nats/char against the unigram baseline "
      f"{meta['unigram_val_loss']:.3f} (params_sha256 {summary['params_sha256']})")
if loss is None or not loss < meta["unigram_val_loss"]:
    sys.exit("examples/gpt: the validation loss is not below the unigram baseline")
PY

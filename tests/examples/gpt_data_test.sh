#!/usr/bin/env bash
# The data side of examples/gpt: prepare_data.py turns the fortunes text into token files that
# tl-data reads as --dataset tokens, export.py scripts the model and it takes a batch of them.
# Usage: gpt_data_test.sh TOOL_DIR SOURCE_DIR. Exit 77 (skipped) where Debian's python3 has no
# torch or the fortunes package is missing (scripts/test.sh installs both).
set -euo pipefail
tools="$1"
src="$2"
work="${TL_TEST_TMP:-/tmp}/examples_gpt_data"
rm -rf "$work" && mkdir -p "$work"
if ! /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
  echo "skipped: /usr/bin/python3 cannot import torch and numpy"; exit 77
fi
if [ ! -d /usr/share/games/fortunes ]; then
  echo "skipped: the fortunes package is not installed (scripts/test.sh installs it)"; exit 77
fi
/usr/bin/python3 "$src/examples/gpt/prepare_data.py" --out "$work/corpus"
"$tools/tl-data" info --kind tokens --dir "$work/corpus" --seq-len 128 | tee "$work/info.txt"
grep -q "uint16 tokens" "$work/info.txt"
/usr/bin/python3 "$src/examples/gpt/export.py" --data "$work/corpus" --out "$work/gpt.pt" \
    --seq-len 128 --layers 2
# The saved module loads and computes a finite loss on the first window of train.npy.
/usr/bin/python3 - "$work" <<'PY'
import json, math, sys
import numpy as np, torch
work = sys.argv[1]
meta = json.load(open(f"{work}/corpus/meta.json"))
assert meta["train_tokens"] > 1_000_000, meta["train_tokens"]
assert 0 < meta["unigram_val_loss"] < math.log(meta["vocab_size"]), meta
ids = torch.from_numpy(np.load(f"{work}/corpus/train.npy")[:129].astype(np.int64))
loss = torch.jit.load(f"{work}/gpt.pt")(ids[:-1].view(1, 128), ids[1:].view(1, 128))
assert loss.dim() == 0 and math.isfinite(loss.item()), loss
print(f"ok: vocabulary {meta['vocab_size']}, first-window loss {loss.item():.3f}")
PY

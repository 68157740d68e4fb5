"""Scripts the example GPT with TorchScript and saves it for tl (--model-file).

Usage: /usr/bin/python3 export.py --data CORPUS --out gpt.pt [--seq-len 128] [--layers 4]
       [--width 128] [--heads 4] [--dropout 0.1] [--seed 0]
The vocabulary size comes from CORPUS/meta.json (prepare_data.py); the initial weights from
torch.manual_seed(seed).
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Gpt  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    with open(os.path.join(a.data, "meta.json")) as f:
        meta = json.load(f)
    torch.manual_seed(a.seed)
    model = Gpt(meta["vocab_size"], a.seq_len, a.width, a.layers, a.heads, a.dropout)
    scripted = torch.jit.script(model)
    # A trial step, so an export that cannot train fails here and not in tl.
    x = torch.randint(0, meta["vocab_size"], (2, a.seq_len))
    loss = scripted(x, torch.roll(x, -1, 1))
    loss.backward()
    scripted.save(a.out)
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {a.out}: GPT of {a.layers} layers, width {a.width}, {a.heads} heads, context "
          f"{a.seq_len}, vocabulary {meta['vocab_size']}, {params} parameters "
          f"(initial loss {loss.item():.3f})")


if __name__ == "__main__":
    main()

"""Turns English text into a character-level --dataset tokens folder for tl.

Usage: /usr/bin/python3 prepare_data.py --out CORPUS [--source DIR_OR_FILE ...] [--val 0.1]
By default it reads the fortune cookies of Debian's `fortunes` package (about 2.5 MB of plain
English under /usr/share/games/fortunes): every plain-text file there, '%' separator lines
dropped. Writes CORPUS/train.npy and CORPUS/val.npy (uint16 character ids: the last --val part
of the text is validation) and CORPUS/meta.json: the characters in id order, the vocabulary
size and the unigram baseline, the validation cross-entropy (nats per character) of predicting
every character by its training frequency, which a trained model must beat clearly.
"""
import argparse
import json
import math
import os
from collections import Counter

import numpy as np

DEFAULT_SOURCE = "/usr/share/games/fortunes"


def text_files(source):
    if os.path.isfile(source):
        return [source]
    if not os.path.isdir(source):
        raise SystemExit(f"prepare_data.py: '{source}' is missing (install Debian's fortunes "
                         "package, or give --source)")
    files = []
    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        # The .dat files are strfile indexes; .u8 names are links to the same texts.
        if os.path.isfile(path) and not os.path.islink(path) and "." not in name:
            files.append(path)
    return files


def read_text(files):
    parts = []
    for path in files:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
        parts.append("".join(line for line in text.splitlines(keepends=True)
                             if line.strip() != "%"))
    return "".join(parts)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--source", nargs="*", default=[DEFAULT_SOURCE])
    p.add_argument("--val", type=float, default=0.1)
    a = p.parse_args()
    files = [f for s in a.source for f in text_files(s)]
    text = read_text(files)
    if len(text) < 10000:
        raise SystemExit(f"prepare_data.py: only {len(text)} characters in {a.source}")
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = np.fromiter((index[c] for c in text), dtype=np.uint16, count=len(text))
    split = int(len(ids) * (1 - a.val))
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "train.npy"), ids[:split])
    np.save(os.path.join(a.out, "val.npy"), ids[split:])
    counts = Counter(ids[:split].tolist())
    total = split
    val = Counter(ids[split:].tolist())
    # Unseen characters get one count, so the baseline stays finite.
    unigram = -sum(n * math.log(max(counts.get(c, 0), 1) / total) for c, n in val.items())
    unigram /= len(ids) - split
    meta = {"chars": "".join(chars), "vocab_size": len(chars), "train_tokens": int(split),
            "val_tokens": int(len(ids) - split), "unigram_val_loss": unigram,
            "sources": files}
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"wrote {a.out}: {split} training and {len(ids) - split} validation characters from "
          f"{len(files)} files, vocabulary {len(chars)}, unigram baseline {unigram:.3f} nats/char")


if __name__ == "__main__":
    main()

"""Exports tl's built-in `cnn` as TorchScript, with tl's own initial weights.

Usage: /usr/bin/python3 export.py --init init.pt --out cnn.pt [--channels 1] [--image-size 28]
       [--classes 10]
The network is bench/reference/ddp_models.py's SmallCnn (the PyTorch definition of
runtime/models/small_cnn.cpp, layer for layer); the weights are the state dict that
`tl-launch --model cnn --steps 0 --save-model init.pt` wrote, so `tl-launch --model-file cnn.pt`
starts where `tl-launch --model cnn` starts and trains to the same bits.
"""
import argparse
import os
import sys

import torch

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "bench", "reference"))
import ddp_models  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--init", required=True, help="tl's initial state dict (--steps 0 --save-model)")
    p.add_argument("--out", required=True)
    p.add_argument("--channels", type=int, default=1)
    p.add_argument("--image-size", type=int, default=28)
    p.add_argument("--classes", type=int, default=10)
    a = p.parse_args()
    model = ddp_models.build("cnn", 0, a.channels, a.image_size, a.classes, True, -1)
    state = torch.load(a.init, weights_only=False)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        sys.exit(f"export.py: error: {a.init} does not fit the cnn: missing {missing}, "
                 f"unexpected {unexpected}")
    scripted = torch.jit.script(model)
    scripted.save(a.out)
    print(f"wrote {a.out}: tl's cnn, {sum(t.numel() for t in model.parameters())} parameters, "
          f"weights from {a.init}")


if __name__ == "__main__":
    main()

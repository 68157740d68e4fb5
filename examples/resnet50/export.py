"""Scripts torchvision's ResNet-50 with TorchScript and saves it for tl (--model-file).

Usage: /usr/bin/python3 export.py --out resnet50.pt [--classes 10] [--seed 0]
The network is torchvision.models.resnet50 (Debian's python3-torchvision, no pretrained
weights: nothing is downloaded) with `--classes` outputs; its initial weights come from
torch.manual_seed(seed). A trial step at 64 px runs before saving, so an export that cannot
train fails here and not in tl.
"""
import argparse

import torch
import torchvision


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    # zero_init_residual: each residual block starts as the identity, which keeps the first
    # steps from scratch stable at small batches (8 per EST here).
    model = torchvision.models.resnet50(weights=None, num_classes=a.classes, zero_init_residual=True)
    scripted = torch.jit.script(model)
    x = torch.randn(2, 3, 64, 64)
    torch.nn.functional.cross_entropy(scripted(x), torch.tensor([0, 1])).backward()
    scripted.save(a.out)
    params = sum(t.numel() for t in model.parameters())
    print(f"wrote {a.out}: torchvision {torchvision.__version__} ResNet-50, {a.classes} classes, "
          f"{params} parameters")


if __name__ == "__main__":
    main()

"""TorchScript modules for tests/launcher/test_own_model.cpp, exported with the system PyTorch.

  own_models.py export DIR     writes the modules (and the bad inputs) into DIR
  own_models.py verify TS SD [tokens]   checks that the TorchScript module TS holds the state dict SD
                                        (and runs on images, or on token ids)

Exit 77 (CTest's skip) when this python has no torch.
"""
import os
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("no torch in", sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "reference"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "gpt"))
import ddp_models  # noqa: E402  (tl's built-in models in PyTorch)
import model as gpt_model  # noqa: E402  (examples/gpt's decoder-only transformer)


class BnDropoutCnn(nn.Module):
    """A small CNN for 3x32x32 images with BatchNorm and dropout (in-model randomness)."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(8 * 8 * 8, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 4)
        return self.fc(self.drop(x.flatten(1)))


class ReturnsLoss(nn.Module):
    """forward(inputs, targets) -> its own scalar loss (--model-returns loss)."""

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.net = BnDropoutCnn()
        self.reduction = reduction

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y, reduction=self.reduction)


class NoParameters(nn.Module):
    def forward(self, x):
        return x.flatten(1)[:, :10]


class FlatMnist(nn.Module):
    """Expects 1x28x28 images: a CIFAR batch does not fit its first layer."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(28 * 28, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))


def export(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1)
    torch.jit.script(BnDropoutCnn()).save(os.path.join(out, "bn_dropout_cnn.pt"))
    torch.manual_seed(2)
    torch.jit.script(BnDropoutCnn()).save(os.path.join(out, "other_cnn.pt"))
    # tl's --model cnn, built as tl builds it under --seed 7 (same init order, same generator)
    torch.manual_seed(7)
    torch.jit.script(ddp_models.SmallCnn(3, 32, 10)).save(os.path.join(out, "builtin_cnn_seed7.pt"))
    torch.manual_seed(3)
    torch.jit.script(ReturnsLoss()).save(os.path.join(out, "returns_loss.pt"))
    torch.jit.script(ReturnsLoss("none")).save(os.path.join(out, "loss_per_sample.pt"))
    torch.jit.script(NoParameters()).save(os.path.join(out, "no_parameters.pt"))
    torch.jit.script(FlatMnist()).save(os.path.join(out, "flat_mnist.pt"))
    torch.jit.script(BnDropoutCnn(classes=5)).save(os.path.join(out, "five_classes.pt"))
    # examples/gpt's model at its smallest, for `tl-data tokens-synth --vocab 32` with
    # --seq-len 8; and one whose vocabulary is too small for that data.
    torch.manual_seed(4)
    torch.jit.script(gpt_model.Gpt(32, context=8, width=16, layers=1, heads=2)).save(os.path.join(out, "tiny_gpt.pt"))
    torch.jit.script(gpt_model.Gpt(16, context=8, width=16, layers=1, heads=2)).save(os.path.join(out, "gpt_vocab16.pt"))
    # token data with a negative id (int32), which no embedding takes
    import numpy as np
    os.makedirs(os.path.join(out, "negative_tokens"), exist_ok=True)
    ids = np.arange(100, dtype=np.int32) % 7
    ids[50] = -3
    np.save(os.path.join(out, "negative_tokens", "train.npy"), ids)
    torch.save(BnDropoutCnn().state_dict(), os.path.join(out, "state_dict.pt"))
    with open(os.path.join(out, "text.pt"), "w") as f:
        f.write("not a module\n")
    with open(os.path.join(out, "bn_dropout_cnn.pt"), "rb") as f:
        whole = f.read()
    with open(os.path.join(out, "truncated.pt"), "wb") as f:
        f.write(whole[: len(whole) // 2])


def verify(scripted, state_dict, inputs="images"):
    module = torch.jit.load(scripted)
    saved = torch.load(state_dict, weights_only=False)
    mine = module.state_dict()
    if list(mine) != list(saved):
        print("names differ:", list(mine), list(saved))
        return 1
    for name, tensor in saved.items():
        if not torch.equal(mine[name], tensor):
            print("tensor differs:", name)
            return 1
    x = torch.zeros(2, 3, 32, 32)
    if inputs == "tokens":  # a language model on 8 token ids a sample, returning its loss
        module(torch.zeros(2, 8, dtype=torch.long), torch.zeros(2, 8, dtype=torch.long))  # it still runs
    elif len(module.forward.schema.arguments) > 2:  # forward(self, inputs, targets): returns its loss
        module(x, torch.zeros(2, dtype=torch.long))  # it still runs
    else:
        module(x)  # it still runs
    print("verified", len(saved), "tensors")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export(sys.argv[2])
    elif sys.argv[1] == "verify":
        sys.exit(verify(*sys.argv[2:5]))
    else:
        sys.exit("usage: own_models.py export DIR | verify TS SD [tokens]")

#!/usr/bin/env python3
"""tl's models against PyTorch definitions of the same architectures.

Usage: pytorch_parity.py <tl_model_dump executable> <scratch dir>

For every case, tl_model_dump builds the model in C++ under torch::manual_seed(0) and writes
its state dict names, state dict files (tl::models::saveStateDict) and the outputs of one
training-mode and one eval-mode forward. This script builds the reference model below under
torch.manual_seed(0) and checks that
  - the state dict names, order and shapes are identical (names.txt and the .pt files),
  - torch.load reads the files as a dict name -> tensor that load_state_dict accepts strictly,
  - the C++ initialisation equals PyTorch's for the same seed, value for value,
  - the forward outputs agree (training mode from the initial state, dropout masks included,
    then eval mode from the state after that forward, whose BatchNorm statistics must agree),
all bit for bit.
Exit status 77 (CTest: skipped) when this interpreter has no torch.
"""
import os
import subprocess
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("SKIPPED: this python has no torch")
    sys.exit(77)


def norm(channels, batch_norm):
    return nn.BatchNorm2d(channels) if batch_norm else nn.Identity()


class SmallCnn(nn.Module):
    def __init__(self, in_channels, image_size, classes, batch_norm, dropout):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 32, 3, padding=1, bias=not batch_norm)
        self.bn1 = norm(32, batch_norm)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=not batch_norm)
        self.bn2 = norm(64, batch_norm)
        self.fc1 = nn.Linear(64 * (image_size // 4) ** 2, 128)
        self.fc2 = nn.Linear(128, classes)
        self.p = 0.25 if dropout < 0 else dropout

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = F.dropout(x, self.p, self.training).flatten(1)
        x = F.dropout(F.relu(self.fc1(x)), self.p, self.training)
        return self.fc2(x)


class Mlp(nn.Module):
    def __init__(self, in_features, classes, dropout, hidden=(256, 128)):
        super().__init__()
        widths = [in_features, *hidden, classes]
        for i in range(len(widths) - 1):
            setattr(self, f"fc{i + 1}", nn.Linear(widths[i], widths[i + 1]))
        self.layers = len(widths) - 1
        self.p = max(dropout, 0.0)

    def forward(self, x):
        x = x.flatten(1)
        for i in range(1, self.layers):
            x = F.relu(getattr(self, f"fc{i}")(x))
            if self.p > 0:
                x = F.dropout(x, self.p, self.training)
        return getattr(self, f"fc{self.layers}")(x)


class BasicBlock(nn.Module):
    """kuangliu/pytorch-cifar's BasicBlock; option_a: He et al.'s zero-pad shortcut instead."""

    def __init__(self, in_planes, planes, stride, option_a, batch_norm):
        super().__init__()
        bias = not batch_norm
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=bias)
        self.bn1 = norm(planes, batch_norm)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=bias)
        self.bn2 = norm(planes, batch_norm)
        self.option_a = option_a
        self.pad = planes // 4
        self.shortcut = nn.Sequential()
        if (stride != 1 or in_planes != planes) and not option_a:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride=stride, bias=bias), norm(planes, batch_norm))
        self.reshape = stride != 1 or in_planes != planes

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.option_a and self.reshape:
            out = out + F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad), "constant", 0)
        else:
            out = out + self.shortcut(x)
        return F.relu(out)


class CifarResNet(nn.Module):
    def __init__(self, in_channels, classes, widths, blocks, option_a, batch_norm):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=not batch_norm)
        self.bn1 = norm(widths[0], batch_norm)
        channels = widths[0]
        for i, (width, count) in enumerate(zip(widths, blocks)):
            layer = []
            for b in range(count):
                stride = 2 if i > 0 and b == 0 else 1
                layer.append(BasicBlock(channels, width, stride, option_a, batch_norm))
                channels = width
            setattr(self, f"layer{i + 1}", nn.Sequential(*layer))
        self.stages = len(widths)
        self.linear = nn.Linear(channels, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        for i in range(self.stages):
            x = getattr(self, f"layer{i + 1}")(x)
        return self.linear(F.adaptive_avg_pool2d(x, 1).flatten(1))


class InvertedResidual(nn.Module):
    """torchvision.models.shufflenetv2.InvertedResidual."""

    def __init__(self, inp, oup, stride):
        super().__init__()
        self.stride = stride
        branch = oup // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                nn.Conv2d(inp, inp, 3, stride, 1, bias=False, groups=inp), nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch, 1, 1, 0, bias=False), nn.BatchNorm2d(branch),
                nn.ReLU(inplace=True))
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(inp if stride > 1 else branch, branch, 1, 1, 0, bias=False),
            nn.BatchNorm2d(branch), nn.ReLU(inplace=True),
            nn.Conv2d(branch, branch, 3, stride, 1, bias=False, groups=branch),
            nn.BatchNorm2d(branch),
            nn.Conv2d(branch, branch, 1, 1, 0, bias=False), nn.BatchNorm2d(branch),
            nn.ReLU(inplace=True))

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        b, c, h, w = out.size()
        return out.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous().view(b, c, h, w)


class ShuffleNetV2(nn.Module):
    """torchvision's ShuffleNetV2 1.0x with the CIFAR stem: 3x3 stride-1 conv1, no maxpool."""

    def __init__(self, in_channels, classes):
        super().__init__()
        widths = [24, 116, 232, 464, 1024]
        self.conv1 = nn.Sequential(nn.Conv2d(in_channels, 24, 3, 1, 1, bias=False),
                                   nn.BatchNorm2d(24), nn.ReLU(inplace=True))
        channels = 24
        for name, repeats, width in zip(["stage2", "stage3", "stage4"], [4, 8, 4], widths[1:4]):
            blocks = [InvertedResidual(channels, width, 2)]
            blocks += [InvertedResidual(width, width, 1) for _ in range(repeats - 1)]
            setattr(self, name, nn.Sequential(*blocks))
            channels = width
        self.conv5 = nn.Sequential(nn.Conv2d(channels, 1024, 1, 1, 0, bias=False),
                                   nn.BatchNorm2d(1024), nn.ReLU(inplace=True))
        self.fc = nn.Linear(1024, classes)

    def forward(self, x):
        x = self.conv5(self.stage4(self.stage3(self.stage2(self.conv1(x)))))
        return self.fc(x.mean([2, 3]))


def reference(arch, in_channels, image_size, depth, batch_norm, dropout):
    if arch == "cnn":
        return SmallCnn(in_channels, image_size, 10, batch_norm, dropout)
    if arch == "mlp":
        return Mlp(in_channels * image_size * image_size, 10, dropout)
    if arch == "resnet18":
        return CifarResNet(in_channels, 10, [64, 128, 256, 512], [2, 2, 2, 2], False, batch_norm)
    if arch == "resnet":
        n = (depth - 2) // 6
        return CifarResNet(in_channels, 10, [16, 32, 64], [n, n, n], True, batch_norm)
    if arch == "shufflenetv2":
        return ShuffleNetV2(in_channels, 10)
    raise ValueError(arch)


# arch, in_channels, image_size, depth, batch_norm, dropout (-1: the model's default)
CASES = [
    ("cnn", 1, 28, 0, True, -1.0),
    ("cnn", 3, 32, 0, False, 0.1),
    ("mlp", 1, 28, 0, True, 0.2),
    ("resnet", 3, 32, 20, True, -1.0),
    ("resnet", 3, 32, 8, False, -1.0),
    ("resnet18", 3, 32, 0, True, -1.0),
    ("shufflenetv2", 3, 32, 0, True, -1.0),
]

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("  FAIL:", what)


def same(a, b):
    # tl and this interpreter share the Debian libtorch and both run one thread, so the same
    # architecture computes the same bits; anything looser could hide an op in another order.
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def compare_state(label, expected_names, state, reference_state):
    check(list(state.keys()) == expected_names, f"{label}: file keys differ from names.txt")
    for name, tensor in reference_state.items():
        if name not in state:
            continue
        check(state[name].dtype == tensor.dtype, f"{label}: dtype of {name}")
        check(same(state[name], tensor), f"{label}: values of {name}")


def run_case(dump, scratch, case):
    arch, in_channels, image_size, depth, batch_norm, dropout = case
    label = f"{arch} {in_channels}x{image_size}x{image_size}" + (f" depth {depth}" if depth else "") + \
        ("" if batch_norm else " no-bn") + (f" dropout {dropout}" if dropout >= 0 else "")
    print(label)
    out = os.path.join(scratch, label.replace(" ", "_"))
    subprocess.run([dump, out, arch, str(in_channels), str(image_size), str(depth),
                    "1" if batch_norm else "0", str(dropout)], check=True)

    torch.manual_seed(0)
    model = reference(*case)
    ref_state = model.state_dict()
    with open(os.path.join(out, "names.txt")) as f:
        lines = [line.split() for line in f.read().splitlines()]
    names = [line[0] for line in lines]
    check(names == list(ref_state.keys()),
          f"{label}: state dict names/order differ:\n    tl:      {names}\n    pytorch: {list(ref_state.keys())}")
    for line in lines:
        if line[0] in ref_state:
            check([int(s) for s in line[1:]] == list(ref_state[line[0]].shape), f"{label}: shape of {line[0]}")

    init = torch.load(os.path.join(out, "init.pt"), weights_only=False)
    check(isinstance(init, dict), f"{label}: torch.load did not give a dict")
    # Same seed, same init functions, same order: the same numbers.
    for name, tensor in ref_state.items():
        if name in init:
            check(torch.equal(init[name], tensor), f"{label}: initial value of {name} differs from PyTorch's")
    compare_state(label + " init.pt", names, init, ref_state)
    model.load_state_dict(init, strict=True)

    io = torch.load(os.path.join(out, "io.pt"), weights_only=False)
    torch.manual_seed(1)
    x = torch.randn(4, in_channels, image_size, image_size)
    check(torch.equal(x, io["input"]), f"{label}: the seeded input differs")
    with torch.no_grad():
        model.train()
        check(same(model(x), io["train_output"]), f"{label}: training-mode output differs")
        after = torch.load(os.path.join(out, "after.pt"), weights_only=False)
        compare_state(label + " after.pt", names, after, model.state_dict())
        model.load_state_dict(after, strict=True)
        model.eval()
        check(same(model(x), io["eval_output"]), f"{label}: eval-mode output differs")
    params = sum(p.numel() for p in model.parameters())
    print(f"  ok so far: {len(names)} entries, {params} parameters")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    dump, scratch = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    os.makedirs(scratch, exist_ok=True)
    for case in CASES:
        run_case(dump, scratch, case)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all cases match PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""tl's CIFAR ResNet (ddp_models.CifarResNet, option-A shortcuts) as a TorchScript file.

  script_resnet.py --init STATE --depth D --out FILE [--no-batchnorm]

ddp_models.CifarResNet picks its layers with getattr and builds a shortcut only in some
blocks, which torch.jit.script does not compile; ScriptableResNet here has the same layers,
the same state dict names and the same forward, written so that it scripts. The weights are
tl's own initial state dict (`tl-launch --model resnet --depth D --steps 0 --save-model
STATE`), loaded strictly. Before saving, the scripted module's output on a random batch must
equal ddp_models.CifarResNet's (eval mode) bit for bit, or the script fails.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_models  # noqa: E402


class ScriptableBlock(nn.Module):
    """ddp_models.BasicBlock without the projection shortcut (tl's `resnet` has none)."""

    def __init__(self, in_planes: int, planes: int, stride: int, batchnorm: bool):
        super().__init__()
        self.stride = stride
        self.identity = stride == 1 and in_planes == planes
        self.conv1 = ddp_models._conv(in_planes, planes, 3, stride, 1, batchnorm)
        self.bn1 = ddp_models._norm(planes, batchnorm)
        self.conv2 = ddp_models._conv(planes, planes, 3, 1, 1, batchnorm)
        self.bn2 = ddp_models._norm(planes, batchnorm)
        self.pad_front = (planes - in_planes) // 2
        self.pad_back = planes - in_planes - self.pad_front

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.identity:
            shortcut = x
        else:
            sub = x[:, :, ::self.stride, ::self.stride]
            shortcut = F.pad(sub, [0, 0, 0, 0, self.pad_front, self.pad_back], value=0.0)
        return F.relu(out + shortcut)


class ScriptableResNet(nn.Module):
    """ddp_models.CifarResNet with widths 16, 32, 64 (tl's --model resnet --depth D)."""

    def __init__(self, depth: int, in_channels: int = 3, classes: int = 10, batchnorm: bool = True):
        super().__init__()
        if depth < 8 or (depth - 2) % 6 != 0:
            raise SystemExit("script_resnet.py: error: --depth must be 6n+2 with n >= 1, got %d" % depth)
        n = (depth - 2) // 6
        channels = 16
        self.conv1 = ddp_models._conv(in_channels, channels, 3, 1, 1, batchnorm)
        self.bn1 = ddp_models._norm(channels, batchnorm)
        stages = []
        for stage, width in enumerate([16, 32, 64]):
            blocks = []
            for block in range(n):
                blocks.append(ScriptableBlock(channels, width, 2 if stage > 0 and block == 0 else 1, batchnorm))
                channels = width
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3 = stages
        self.linear = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        x = F.adaptive_avg_pool2d(x, [1, 1]).flatten(1)
        return self.linear(x)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--init", required=True, help="tl's state dict (--model resnet --steps 0 --save-model)")
    p.add_argument("--depth", type=int, default=20)
    p.add_argument("--no-batchnorm", action="store_true")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    if not os.path.isfile(a.init):
        p.error("--init: no file '%s'" % a.init)
    state = torch.load(a.init, weights_only=False)
    model = ScriptableResNet(a.depth, batchnorm=not a.no_batchnorm)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise SystemExit("script_resnet.py: error: '%s' is not tl's resnet depth %d state dict: %s"
                         % (a.init, a.depth, str(e).splitlines()[0]))
    reference = ddp_models.build("resnet", a.depth, 3, 32, 10, not a.no_batchnorm, -1)
    reference.load_state_dict(state, strict=True)
    scripted = torch.jit.script(model)
    if list(scripted.state_dict()) != list(state):
        raise SystemExit("script_resnet.py: error: the scripted module's state dict order differs from tl's")
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    scripted.eval()
    reference.eval()
    with torch.no_grad():
        if not torch.equal(scripted(x), reference(x)):
            raise SystemExit("script_resnet.py: error: the scripted ResNet's output differs from ddp_models'")
    scripted.train()
    scripted.save(a.out)
    print("wrote %s: scripted ResNet-%d with the weights of %s" % (a.out, a.depth, a.init))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

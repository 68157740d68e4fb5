"""PyTorch definitions of tl's models, layer for layer (runtime/models/).

Only structure and forward have to match: the weights come from tl's own state dict
(`tl-launch --steps 0 --save-model FILE`), whose names are these modules' names.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _conv(cin, cout, kernel, stride, padding, batchnorm):
    # tl: a conv followed by a BatchNorm has no bias; without BatchNorm it has one.
    return nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=not batchnorm)


def _norm(channels, batchnorm):
    return nn.BatchNorm2d(channels) if batchnorm else nn.Identity()


class SmallCnn(nn.Module):
    """runtime/models/small_cnn.cpp: conv-BN-ReLU-pool x2, dropout, fc1-ReLU-dropout-fc2."""

    def __init__(self, in_channels, image_size, classes, batchnorm=True, dropout=0.25):
        super().__init__()
        self.dropout = dropout
        self.conv1 = _conv(in_channels, 32, 3, 1, 1, batchnorm)
        self.bn1 = _norm(32, batchnorm)
        self.conv2 = _conv(32, 64, 3, 1, 1, batchnorm)
        self.bn2 = _norm(64, batchnorm)
        pooled = image_size // 2 // 2
        self.fc1 = nn.Linear(64 * pooled * pooled, 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = F.dropout(x, self.dropout, self.training).flatten(1)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, self.dropout, self.training)
        return self.fc2(x)


class BasicBlock(nn.Module):
    """runtime/models/basic_block.cpp: option-A (zero pad) or projection shortcuts."""

    # Constants for torch.jit.script: it compiles only the shortcut branch a block has.
    __constants__ = ["identity", "projection", "stride", "pad_front", "pad_back"]

    def __init__(self, in_planes, planes, stride, projection, batchnorm):
        super().__init__()
        self.stride = stride
        self.identity = stride == 1 and in_planes == planes
        self.conv1 = _conv(in_planes, planes, 3, stride, 1, batchnorm)
        self.bn1 = _norm(planes, batchnorm)
        self.conv2 = _conv(planes, planes, 3, 1, 1, batchnorm)
        self.bn2 = _norm(planes, batchnorm)
        self.projection = projection and not self.identity
        if self.projection:
            layers = [_conv(in_planes, planes, 1, stride, 0, batchnorm)]
            if batchnorm:
                layers.append(nn.BatchNorm2d(planes))
            self.shortcut = nn.Sequential(*layers)
        self.pad_front = (planes - in_planes) // 2
        self.pad_back = planes - in_planes - self.pad_front

    def shortcut_path(self, x):
        if self.identity:
            return x
        if self.projection:
            return self.shortcut(x)
        sub = x[:, :, ::self.stride, ::self.stride]
        return F.pad(sub, (0, 0, 0, 0, self.pad_front, self.pad_back), value=0.0)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut_path(x))


class CifarResNet(nn.Module):
    """runtime/models/resnet.cpp: 3x3 stem, stages of BasicBlocks, global average pool, linear."""

    __constants__ = ["has_layer4"]  # for torch.jit.script: a 3-stage net compiles without layer4

    def __init__(self, in_channels, classes, widths, blocks, projection, batchnorm=True):
        super().__init__()
        channels = widths[0]
        self.conv1 = _conv(in_channels, channels, 3, 1, 1, batchnorm)
        self.bn1 = _norm(channels, batchnorm)
        for stage, (width, count) in enumerate(zip(widths, blocks)):
            layer = []
            for block in range(count):
                stride = 2 if stage > 0 and block == 0 else 1
                layer.append(BasicBlock(channels, width, stride, projection, batchnorm))
                channels = width
            setattr(self, "layer%d" % (stage + 1), nn.Sequential(*layer))
        self.stages = len(widths)
        self.has_layer4 = self.stages == 4
        self.linear = nn.Linear(channels, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))  # the stages in order (3 or 4; none built with fewer)
        if self.has_layer4:
            x = self.layer4(x)
        x = F.adaptive_avg_pool2d(x, (1, 1)).flatten(1)
        return self.linear(x)


def build(name, depth, in_channels, image_size, classes, batchnorm, dropout):
    if name == "cnn":
        return SmallCnn(in_channels, image_size, classes, batchnorm, 0.25 if dropout < 0 else dropout)
    if name == "resnet":
        n = (depth - 2) // 6
        return CifarResNet(in_channels, classes, [16, 32, 64], [n, n, n], False, batchnorm)
    if name == "resnet18":
        return CifarResNet(in_channels, classes, [64, 128, 256, 512], [2, 2, 2, 2], True, batchnorm)
    raise SystemExit("ddp_reference: error: --model %s has no PyTorch definition here" % name)

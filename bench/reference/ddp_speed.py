"""PyTorch DDP reference for bench_ddp_vs_pytorch: data-parallel training of the CIFAR ResNet-18
(resnet18_step.py's definition) or ResNet-20 (He et al. 2016, option-A shortcuts, as tl's
`--model resnet --depth 20`) with torch.nn.parallel.DistributedDataParallel over gloo on CPU,
or NCCL when --device cuda, on random CIFAR-shaped batches, SGD with momentum.

Processes: under mpirun (Open MPI's OMPI_COMM_WORLD_* variables name rank and size; rank 0's
host is --master-addr) or, without them, --processes local processes started here with
torch.multiprocessing, meeting on 127.0.0.1. Rank 0 prints one JSON line:
{"images_per_s": all processes together, "step_ms": median step, "processes": P}.

usage: ddp_speed.py --model resnet18|resnet20 [--batch 32] [--steps 6] [--warmup 2]
       [--threads 1] [--processes 2] [--master-addr 127.0.0.1] [--master-port 29512]
       [--device cpu|cuda]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resnet18_step import ResNet18  # noqa: E402


class OptionABlock(nn.Module):
    """BasicBlock whose shortcut subsamples and zero-pads channels (no parameters)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.stride, self.pad = stride, cout - cin

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        short = x[:, :, :: self.stride, :: self.stride] if self.stride != 1 else x
        if self.pad:
            short = F.pad(short, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))
        return F.relu(out + short)


class ResNet20(nn.Module):
    def __init__(self, classes=10, n=3):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for cout, stride in [(16, 1), (32, 2), (64, 2)]:
            blocks = [OptionABlock(cin, cout, stride)] + [OptionABlock(cout, cout, 1) for _ in range(n - 1)]
            layers.append(nn.Sequential(*blocks))
            cin = cout
        self.layer1, self.layer2, self.layer3 = layers
        self.linear = nn.Linear(64, classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        return self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))


def train(rank, size, args):
    torch.set_num_threads(args.threads)
    backend = "nccl" if args.device == "cuda" else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=size)
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    torch.manual_seed(0)
    model = (ResNet18() if args.model == "resnet18" else ResNet20()).to(device)
    ddp = nn.parallel.DistributedDataParallel(model)  # 25 MiB buckets, overlapped with backward
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator().manual_seed(rank)
    x = torch.randn(args.batch, 3, 32, 32, generator=generator).to(device)
    y = torch.randint(0, 10, (args.batch,), generator=generator).to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(ddp(x), y).backward()
        opt.step()
        if args.device == "cuda":
            torch.cuda.synchronize()

    for _ in range(args.warmup):
        step()
    dist.barrier()
    times = []
    start = time.perf_counter()
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(json.dumps({"images_per_s": size * args.batch * args.steps / elapsed,
                          "step_ms": statistics.median(times) * 1000, "processes": size}), flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["resnet18", "resnet20"], required=True)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29512)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = p.parse_args()
    os.environ["MASTER_ADDR"] = args.master_addr
    os.environ["MASTER_PORT"] = str(args.master_port)
    if "OMPI_COMM_WORLD_RANK" in os.environ:
        train(int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"]), args)
    else:
        mp.spawn(train, args=(args.processes, args), nprocs=args.processes)


if __name__ == "__main__":
    main()

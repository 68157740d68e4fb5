"""PyTorch DDP reference for bench_ddp_vs_pytorch: data-parallel training of tl's CIFAR
ResNet-18 or ResNet-20 (ddp_models.py: layer for layer as tl's `--model resnet18` and
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
from ddp_models import build  # noqa: E402  (the models layer for layer as tl's)


def make_model(name):
    if name == "resnet18":
        return build("resnet18", 18, 3, 32, 10, True, 0.0)
    return build("resnet", 20, 3, 32, 10, True, 0.0)


def train(rank, size, args):
    torch.set_num_threads(args.threads)
    backend = "nccl" if args.device == "cuda" else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=size)
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    torch.manual_seed(0)
    model = make_model(args.model).to(device)
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

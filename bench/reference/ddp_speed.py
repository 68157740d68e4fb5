"""PyTorch DDP reference for bench_ddp_vs_pytorch: data-parallel training of tl's CIFAR
ResNet-18 or ResNet-20 (ddp_models.py: layer for layer as tl's `--model resnet18` and
`--model resnet --depth 20`) with torch.nn.parallel.DistributedDataParallel over gloo on CPU,
or NCCL when --device cuda, on random CIFAR-shaped batches, SGD with momentum. Or, with
--model-file M.pt --seq-len L --vocab V, a TorchScript module returning the loss of
(inputs, targets) token batches (tl's --model-returns loss; e.g. examples/gpt's export), on
random tokens, AdamW.

Processes: under mpirun (Open MPI's OMPI_COMM_WORLD_* variables name rank and size; rank 0's
host is --master-addr) or, without them, --processes local processes started here with
torch.multiprocessing, meeting on 127.0.0.1. Rank 0 prints one JSON line:
{"images_per_s": all processes together, "step_ms": median step, "processes": P}.

usage: ddp_speed.py --model resnet18|resnet20 | --model-file M.pt --seq-len L --vocab V
       [--batch 32] [--steps 6] [--warmup 2]
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
    generator = torch.Generator().manual_seed(rank)
    if args.model_file:
        model = torch.jit.load(args.model_file, map_location=device)
        x = torch.randint(0, args.vocab, (args.batch, args.seq_len), generator=generator).to(device)
        y = torch.roll(x, -1, 1)
    else:
        model = make_model(args.model).to(device)
        x = torch.randn(args.batch, 3, 32, 32, generator=generator).to(device)
        y = torch.randint(0, 10, (args.batch,), generator=generator).to(device)
    # gloo cannot broadcast bool tensors (a GPT's causal mask): DDP leaves those buffers alone.
    bool_buffers = [name for name, b in model.named_buffers() if b.dtype == torch.bool]
    if bool_buffers:
        nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, bool_buffers)
    ddp = nn.parallel.DistributedDataParallel(model)  # 25 MiB buckets, overlapped with backward
    if args.model_file:
        opt = torch.optim.AdamW(ddp.parameters(), lr=0.002)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)

    def loss():
        return ddp(x, y) if args.model_file else F.cross_entropy(ddp(x), y)

    def step():
        opt.zero_grad(set_to_none=True)
        loss().backward()
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
    p.add_argument("--model", choices=["resnet18", "resnet20"])
    p.add_argument("--model-file", help="TorchScript module: forward(inputs, targets) -> loss")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--vocab", type=int, default=0)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29512)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = p.parse_args()
    if (args.model is None) == (args.model_file is None):
        p.error("give --model or --model-file")
    if args.model_file and args.vocab < 1:
        p.error("--model-file needs --vocab (the token ids' range)")
    os.environ["MASTER_ADDR"] = args.master_addr
    os.environ["MASTER_PORT"] = str(args.master_port)
    # PyTorch >= 2.4 asks for a libuv TCPStore, which Debian 13's build lacks; 1.13 ignores it.
    os.environ.setdefault("USE_LIBUV", "0")
    if "OMPI_COMM_WORLD_RANK" in os.environ:
        train(int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"]), args)
    else:
        mp.spawn(train, args=(args.processes, args), nprocs=args.processes)


if __name__ == "__main__":
    main()

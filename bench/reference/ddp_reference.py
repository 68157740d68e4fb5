#!/usr/bin/python3
"""Real PyTorch DDP (gloo, one OS process per rank) on the job a tl-launch run defines.

The model's initial weights are tl's own (`tl-launch --steps 0 --save-model FILE`), the data
are the same files tl reads (Fashion-MNIST IDX or CIFAR-10 binary batches), sharded by
torch's DistributedSampler with tl's seed, no augmentation, and each rank's dropout draws come
from a generator seeded as tl seeds the logical worker of that rank (est/est_context.cpp).

--averaging stock: DDP as shipped: gloo allreduces float32 gradients (the order of the float
sums is gloo's). --averaging exact: a communication hook that gathers every rank's gradients,
sums them in float64, divides by the world size and rounds once to float32, which is what
tl's exact reduction computes.

`--averaging exact,stock` trains both, one after the other, in the same processes. Each writes
OUT/AVERAGING/steps.csv (step,epoch,loss,acc; the loss is the mean over all ranks' samples) and
OUT/AVERAGING/summary.json (params_sha256 over the state dict in order, as tl's summary.json
has it). Run with /usr/bin/python3 (Debian's python3-torch).
"""
import argparse
import hashlib
import json
import os
import socket
import sys

import ddp_data
import ddp_models


MASK64 = (1 << 64) - 1


def mix_seed(seed, rank):
    """est/est_context.cpp mixSeed: the seed of logical worker `rank`'s generator."""
    x = (seed * 0x9E3779B97F4A7C15 + rank + 0x632BE59BD9B4E019) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=["cnn", "resnet", "resnet18"])
    p.add_argument("--depth", type=int, default=20)
    p.add_argument("--no-batchnorm", action="store_true")
    p.add_argument("--dropout", type=float, default=-1)
    p.add_argument("--dataset", required=True, choices=["fashion-mnist", "mnist", "cifar10", "tensors"])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--init", required=True, help="tl's initial state dict (--steps 0 --save-model)")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--batch", type=int, required=True, help="per rank, as tl's --batch")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "nesterov"])
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--dampening", type=float, default=0.0)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--threads", type=int, required=True, help="tl's --compute-threads")
    p.add_argument("--drop-last", action="store_true", help="tl's --drop-last")
    p.add_argument("--averaging", required=True, help="exact, stock, or both: exact,stock")
    p.add_argument("--out", required=True, help="folder for AVERAGING/steps.csv and AVERAGING/summary.json")
    a = p.parse_args(argv)
    a.averaging = a.averaging.split(",")
    for mode in a.averaging:
        if mode not in ("exact", "stock"):
            p.error("--averaging: unknown mode '%s' (expected exact, stock or exact,stock)" % mode)
    for name in ("ranks", "batch", "threads"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1, got %d" % (name, getattr(a, name)))
    if a.steps < 0:
        p.error("--steps must not be negative, got %d" % a.steps)
    if not os.path.isfile(a.init):
        p.error("--init: no file '%s'" % a.init)
    return a


def exact_average_hook(state, bucket):
    """Every rank's float32 gradients, summed in float64, divided by N, rounded once."""
    import torch
    import torch.distributed as dist
    grads = bucket.buffer()
    world = dist.get_world_size()
    parts = [torch.empty_like(grads) for _ in range(world)]
    dist.all_gather(parts, grads)
    total = torch.zeros(grads.shape, dtype=torch.float64)
    for part in parts:  # rank order; float64 sums of a few float32 values are exact here
        total += part.double()
    future = torch.futures.Future()
    future.set_result((total / world).float())
    return future


def params_sha256(model):
    h = hashlib.sha256()
    for tensor in model.state_dict().values():
        h.update(tensor.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def train_rank(rank, args, port):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    images, labels, shape = ddp_data.load(args.dataset, args.data_dir)
    for averaging in args.averaging:
        train(rank, args, averaging, images, labels, shape)
    dist.destroy_process_group()


def train(rank, args, averaging, images, labels, shape):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    channels, size = shape
    model = ddp_models.build(args.model, args.depth, channels, size, 10, not args.no_batchnorm, args.dropout)
    model.load_state_dict(torch.load(args.init))
    torch.manual_seed(mix_seed(args.seed, rank))  # this rank's dropout draws, as tl's EST `rank`
    ddp = DDP(model, broadcast_buffers=True)
    if averaging == "exact":
        ddp.register_comm_hook(state=None, hook=exact_average_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum,
                          dampening=args.dampening, weight_decay=args.weight_decay,
                          nesterov=args.optimizer == "nesterov")
    data = TensorDataset(images, labels)
    sampler = DistributedSampler(data, num_replicas=args.ranks, rank=rank, shuffle=True, seed=args.seed)
    # Its own generator: a DataLoader iterator otherwise draws its base seed from the default
    # generator, which holds this rank's dropout stream.
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler, drop_last=args.drop_last,
                        generator=torch.Generator())

    rows = []
    step, epoch = 0, 0
    while step < args.steps:
        sampler.set_epoch(epoch)
        for x, y in loader:
            if step >= args.steps:
                break
            opt.zero_grad()
            logits = ddp(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            step += 1
            with torch.no_grad():
                correct = float(logits.argmax(1).eq(y).sum())
            stats = torch.tensor([loss.item() * y.numel(), correct, float(y.numel())], dtype=torch.float64)
            dist.all_reduce(stats)
            rows.append((step, epoch, stats[0].item() / stats[2].item(), stats[1].item() / stats[2].item()))
        epoch += 1

    if rank == 0:
        out = os.path.join(args.out, averaging)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "steps.csv"), "w") as f:
            f.write("step,epoch,loss,acc\n")
            for r in rows:
                f.write("%d,%d,%r,%r\n" % r)
        with open(os.path.join(out, "summary.json"), "w") as f:
            json.dump({"steps": step, "ranks": args.ranks, "averaging": averaging,
                       "params_sha256": params_sha256(model), "torch": torch.__version__}, f)
    dist.barrier()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    args = parse_args(argv)
    try:
        import torch.multiprocessing as mp
    except ImportError:
        print("ddp_reference: error: this python (%s) cannot import torch; use /usr/bin/python3" % sys.executable,
              file=sys.stderr)
        return 77
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    ddp_data.check(args.dataset, args.data_dir)  # one clear error before any process starts
    # fork: the ranks inherit the imported torch instead of importing it again each
    mp.start_processes(train_rank, args=(args, free_port()), nprocs=args.ranks, join=True, start_method="fork")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

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

--averaging fixed (a diagnostic, not PyTorch's arithmetic): tl's exact reduction as tl computes
it, fixed point with one scale per tensor (FixedPointState below), to tell its rounding apart
from any other difference where tl and exact averaging part.

`--averaging exact,stock` trains both, one after the other, in the same processes. Each writes
OUT/AVERAGING/steps.csv (step,epoch,loss,acc; the loss is the mean over all ranks' samples) and
OUT/AVERAGING/summary.json (params_sha256 over the state dict in order, as tl's summary.json
has it). Run with /usr/bin/python3 (Debian's python3-torch).

Your own model (tl-launch --model-file FILE): --model-file loads the same TorchScript file tl
loads (torch.jit.load; its weights are the initial ones, no --init), and runs it as tl does, with
the graph executor's optimisations off (runtime/models/torchscript_model.cpp), so autograd
records the ops eager PyTorch would. --model-returns loss calls forward(inputs, targets) for
the loss; otherwise --loss (cross-entropy, tl's default; nll; mse) scores forward's output as
runtime/train/model_loss.cpp does. --dataset tokens --seq-len L reads tl's token windows
(ddp_data.py). --optimizer adam|adamw are torch.optim.Adam/AdamW (single-tensor, the CPU's
default, as tl's runtime/optim/adam.cpp follows them in each PyTorch version: 2.1 and later
round the first moment with lerp_) with tl's --beta1/--beta2/--eps/--weight-decay.

--device cuda (tl-launch --device cuda; bench/gpu_check.sh stage h): every rank on cuda:0, one
GPU shared by the ranks' processes (started with spawn: CUDA cannot follow a fork), gloo between
them. Each rank asks for the kernels tl asks for (runtime/train/step_plan.cpp): cuDNN without
autotuning, deterministic cuDNN and deterministic algorithms, CUBLAS_WORKSPACE_CONFIG=:4096:8
(unless set). The exact and fixed hooks gather the float32 gradients through host memory and do
their float64/int64 arithmetic there, as on the CPU; stock DDP allreduces the CUDA buffers in
gloo. Optimizers run single-tensor (foreach=False), the form tl's optimizers follow. The data,
init and dropout seeding are the CPU path's; a rank's dropout draws come from cuda:0's generator,
seeded as tl seeds the device generator of the logical worker of that rank. --device cpu (the
default) is the path above, unchanged.
"""
import argparse
import contextlib
import hashlib
import json
import math
import os
import re
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
    p.add_argument("--model", choices=["cnn", "resnet", "resnet18"], help="a built-in architecture")
    p.add_argument("--model-file", help="a TorchScript module, as tl-launch --model-file")
    p.add_argument("--model-returns", default="logits", choices=["logits", "loss"],
                   help="--model-file: forward(x) returns class scores, or forward(x, y) its own loss")
    p.add_argument("--loss", default="cross-entropy", choices=["cross-entropy", "nll", "mse"])
    p.add_argument("--depth", type=int, default=20)
    p.add_argument("--no-batchnorm", action="store_true")
    p.add_argument("--dropout", type=float, default=-1)
    p.add_argument("--dataset", required=True, choices=["fashion-mnist", "mnist", "cifar10", "tensors", "tokens"])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--seq-len", type=int, default=0, help="tokens: tokens per sample, as tl's --seq-len")
    p.add_argument("--token-dtype", choices=["uint16", "uint32"],
                   help="tokens: read raw train.bin of this width, as tl's --token-dtype")
    p.add_argument("--init", help="tl's initial state dict (--steps 0 --save-model); not with --model-file")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--batch", type=int, required=True, help="per rank, as tl's --batch")
    p.add_argument("--micro-batches", type=int, default=1,
                   help="as tl's: the batch in K pieces (tensor_split), (loss / K).backward() each, all but "
                        "the last under no_sync")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "nesterov", "adam", "adamw"])
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--dampening", type=float, default=0.0)
    p.add_argument("--weight-decay", type=float, default=0.0, help="decoupled for adamw, as tl's")
    p.add_argument("--clip-grad-norm", type=float, default=0.0,
                   help="> 0: torch.nn.utils.clip_grad_norm_ after backward, as tl's --clip-grad-norm; "
                        "steps.csv then records grad_norm")
    p.add_argument("--weight-decay-on", default="all", choices=["all", "matrices"],
                   help="as tl's: matrices decays only parameters with >= 2 dimensions (a second "
                        "parameter group with weight_decay 0)")
    p.add_argument("--no-decay", default="", help="as tl's: no decay where re.search(REGEX, name)")
    p.add_argument("--lr-schedule", default="constant", choices=["constant", "cosine", "linear"],
                   help="tl's schedules in steps (nanoGPT's get_lr) as a LambdaLR; the epoch forms are not here")
    p.add_argument("--warmup-steps", type=int, default=-1, help="as tl's --warmup-steps (-1: not given)")
    p.add_argument("--decay-steps", type=int, default=-1, help="as tl's --decay-steps (-1: the last step)")
    p.add_argument("--min-lr", type=float, default=0.0)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--eps", type=float, default=-1, help="negative: 1e-8, tl's (and PyTorch's) Adam default")
    p.add_argument("--threads", type=int, required=True, help="tl's --compute-threads")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="where every rank trains: cpu, or cuda (all ranks on cuda:0), as tl-launch --device")
    p.add_argument("--drop-last", action="store_true", help="tl's --drop-last")
    p.add_argument("--averaging", required=True, help="exact, stock, fixed (tl's fixed-point reduction emulated), or a list: exact,stock")
    p.add_argument("--out", required=True, help="folder for AVERAGING/steps.csv and AVERAGING/summary.json")
    a = p.parse_args(argv)
    a.averaging = a.averaging.split(",")
    for mode in a.averaging:
        if mode not in ("exact", "stock", "fixed"):
            p.error("--averaging: unknown mode '%s' (expected exact, stock, fixed or a list: exact,stock)" % mode)
    if "fixed" in a.averaging and (a.ranks & (a.ranks - 1) or a.ranks > 2048):
        p.error("--averaging fixed: --ranks must be a power of two up to 2048 (the mean is then exact "
                "in float64), got %d" % a.ranks)
    for name in ("ranks", "batch", "threads"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1, got %d" % (name, getattr(a, name)))
    if a.micro_batches < 1 or a.batch % a.micro_batches:
        p.error("--micro-batches must be at least 1 and divide --batch, got %d" % a.micro_batches)
    if a.steps < 0:
        p.error("--steps must not be negative, got %d" % a.steps)
    if (a.model is None) == (a.model_file is None):
        p.error("give exactly one of --model (a built-in architecture) and --model-file (TorchScript)")
    if a.model_file is not None:
        if not os.path.isfile(a.model_file):
            p.error("--model-file: no file '%s'" % a.model_file)
        if a.init is not None:
            p.error("--init: a --model-file's initial weights are its own (the file tl loads)")
    else:
        if a.init is None:
            p.error("--init is required with --model (tl's --steps 0 --save-model state dict)")
        if not os.path.isfile(a.init):
            p.error("--init: no file '%s'" % a.init)
        if a.model_returns != "logits" or a.loss != "cross-entropy":
            p.error("--model-returns and --loss apply to --model-file (the built-in models use cross-entropy)")
        if a.dataset == "tokens":
            p.error("--dataset tokens needs --model-file (no built-in model reads tokens)")
    if a.dataset == "tokens" and a.seq_len < 1:
        p.error("--seq-len: --dataset tokens needs the tokens per sample (1 or more), got %d" % a.seq_len)
    if a.dataset != "tokens" and (a.seq_len or a.token_dtype):
        p.error("--seq-len and --token-dtype apply to --dataset tokens")
    if a.lr_schedule == "cosine" and a.warmup_steps < 0 and a.decay_steps < 0:
        p.error("--lr-schedule cosine: only tl's schedule in steps is here (give --warmup-steps or --decay-steps)")
    if a.decay_steps >= 0 and a.decay_steps <= max(0, a.warmup_steps):
        p.error("--decay-steps must come after the warm-up")
    if a.no_decay:
        try:
            re.compile(a.no_decay)
        except re.error as e:
            p.error("--no-decay: not a regular expression (%s)" % e)
    if a.optimizer in ("adam", "adamw"):
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(a, name) < 1:
                p.error("--%s must be in [0, 1), got %r" % (name, getattr(a, name)))
        if a.eps < 0:
            a.eps = 1e-8
    return a


def hook_future(device):
    """A hook's future; on CUDA one that may hold tensors of that device (a plain Future takes CPU
    tensors only)."""
    import torch
    if device.type == "cpu":
        return torch.futures.Future()
    return torch.futures.Future(devices=[device])


def exact_average_hook(state, bucket):
    """Every rank's float32 gradients, summed in float64, divided by N, rounded once.
    On CUDA the bucket is copied to host memory (a blocking copy, after backward's kernels) and
    the arithmetic is the CPU's; the mean goes back to the bucket's device."""
    import torch
    import torch.distributed as dist
    grads = bucket.buffer()
    device = grads.device
    grads = grads.cpu()  # the same tensor on the CPU
    world = dist.get_world_size()
    parts = [torch.empty_like(grads) for _ in range(world)]
    dist.all_gather(parts, grads)
    total = torch.zeros(grads.shape, dtype=torch.float64)
    for part in parts:  # rank order; float64 sums of a few float32 values are exact here
        total += part.double()
    future = hook_future(device)
    future.set_result((total / world).float().to(device))
    return future


class FixedPointState:
    """tl's exact reduction (runtime/reduce/fixed_point.h, exact_reducer.cpp), emulated.

    Per parameter tensor an exponent e: each rank's gradient g becomes round_half_even(g * 2^e)
    (int64), the integers are summed and the mean sum / (N * 2^e) is rounded once to float32.
    e puts the largest |g| of the tensor over all ranks *in the previous step* at [2^42, 2^43)
    (N <= 2048). When this step's largest |g| * 2^e leaves [2^26, 2^51] for any tensor (and at
    the first step) tl replays the step with every tensor's e set from this step's maxima. A
    gradient element more than about 2^19 below its tensor's largest is rounded before the sum,
    which exact averaging does not do."""

    VALUE_BITS = 51  # fixed::valueBits: min(51, 62 - ceil(log2 N))
    HEADROOM_BITS = 8
    MIN_PRECISION_BITS = 27

    def __init__(self, names):
        self.names = names  # id(parameter) -> name
        self.exponents = {}
        self.pending = []
        self.replays = 0
        self.unlike_exact = []  # per step: mean gradient elements unlike exact averaging's

    def exponent(self, max_abs):
        import math
        return self.VALUE_BITS - self.HEADROOM_BITS - math.frexp(max_abs)[1]

    def fits(self, max_abs, e):
        import math
        if max_abs == 0:
            return True
        largest = math.ldexp(max_abs, e)
        return math.ldexp(1.0, self.MIN_PRECISION_BITS - 1) <= largest <= math.ldexp(1.0, self.VALUE_BITS)

    def rescale(self, maxima):
        for name, max_abs in maxima.items():
            if max_abs > 0:
                self.exponents[name] = self.exponent(max_abs)
            elif name not in self.exponents:
                self.exponents[name] = self.exponent(1.0)  # all zero so far


def fixed_point_hook(state, bucket):
    """--averaging fixed. The scales depend on every tensor's maximum, so each bucket's future is
    completed when the last bucket arrives (DDP waits for them after backward)."""
    import torch
    import torch.distributed as dist
    grads = bucket.buffer()
    device = grads.device
    grads = grads.cpu()  # on CUDA through host memory, as exact_average_hook
    world = dist.get_world_size()
    parts = [torch.empty_like(grads) for _ in range(world)]
    dist.all_gather(parts, grads)
    future = hook_future(device)
    state.pending.append((future, parts, [state.names[id(p)] for p in bucket.parameters()],
                          [g.numel() for g in bucket.gradients()]))
    if not bucket.is_last():
        return future
    tensors = []  # (name, every rank's flat gradient)
    for _, parts, names, sizes in state.pending:
        offset = 0
        for name, size in zip(names, sizes):
            tensors.append((name, [part[offset:offset + size] for part in parts]))
            offset += size
    maxima = {name: max(float(x.abs().max()) if x.numel() else 0.0 for x in xs) for name, xs in tensors}
    if not state.exponents or any(not state.fits(maxima[n], state.exponents[n]) for n in maxima):
        state.replays += 1
        state.rescale(maxima)
    means, unlike = {}, 0
    for name, xs in tensors:
        e = state.exponents[name]
        total = torch.zeros(xs[0].shape, dtype=torch.int64)
        for x in xs:  # g * 2^e is exact in float64; round() is half to even
            total += (x.double() * 2.0 ** e).round().long()
        means[name] = (total.double() * 2.0 ** -e / world).float()  # N a power of two: one rounding
        unlike += int(((sum(x.double() for x in xs) / world).float() != means[name]).sum())
    state.rescale(maxima)  # the next step's scales
    state.unlike_exact.append(unlike)
    for pending, _, names, _ in state.pending:
        pending.set_result(torch.cat([means[n] for n in names]).to(device))
    state.pending = []
    return future


def params_sha256(model):
    h = hashlib.sha256()
    for tensor in model.state_dict().values():
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def use_deterministic_gpu_kernels():
    """runtime/train/step_plan.cpp's useDeterministicGpuKernels: the kernels tl runs on CUDA."""
    import torch
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before cuBLAS's first handle
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=False)


def cuda_settings(device):
    """What a CUDA run used, for its summary.json (a difference from tl starts here)."""
    import torch
    info = {"device": str(device), "name": torch.cuda.get_device_name(device), "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG")}
    try:
        info["cudnn_allow_tf32"] = torch.backends.cudnn.allow_tf32
        info["matmul_allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
    except Exception as e:  # renamed or gone in some release: say so rather than fail the run
        info["tf32"] = "unknown: %r" % e
    return info


def train_rank(rank, args, port):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(args.threads)
    if args.device == "cuda":
        use_deterministic_gpu_kernels()
        torch.cuda.set_device(0)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    # PyTorch >= 2.4 asks for a libuv TCPStore, which Debian 13's build lacks; 1.13 ignores it.
    os.environ.setdefault("USE_LIBUV", "0")
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    if args.dataset == "tokens":
        data, shape = ddp_data.load_tokens(args.data_dir, args.seq_len, args.token_dtype), None
    else:
        from torch.utils.data import TensorDataset
        images, labels, shape = ddp_data.load(args.dataset, args.data_dir)
        data = TensorDataset(images, labels)
    for averaging in args.averaging:
        train(rank, args, averaging, data, shape)
    dist.destroy_process_group()


def score(args, ddp, x, y):
    """The batch's mean loss and, where the output is class scores [B, C], those scores:
    runtime/train/model_loss.cpp's scoreBatch."""
    import torch.nn.functional as F
    if args.model_returns == "loss":
        return ddp(x, y), None
    out = ddp(x)
    if args.loss == "mse":
        prediction, target = out, y
        if out.dim() == 2 and y.dim() == 1 and not y.is_floating_point() and out.size(1) > 1:
            target = F.one_hot(y, out.size(1))
        elif out.dim() == y.dim() + 1 and out.size(-1) == 1:
            prediction = out.squeeze(-1)
        return F.mse_loss(prediction, target.to(prediction.dtype)), None
    fn = F.nll_loss if args.loss == "nll" else F.cross_entropy
    if out.dim() > 2 and y.dim() == out.dim() - 1:  # per position: [B, ..., C] against [B, ...]
        return fn(out.flatten(0, -2), y.flatten()), None
    return fn(out, y), out


def build_model(args, shape):
    import torch
    if args.model_file is not None:
        # As tl runs a TorchScript module: the graph executor's no-optimisation plan.
        torch._C._set_graph_executor_optimize(False)  # torch.jit.optimized_execution(False)
        model = torch.jit.load(args.model_file, map_location="cpu")
        model.train()
        return model
    channels, size = shape
    model = ddp_models.build(args.model, args.depth, channels, size, 10, not args.no_batchnorm, args.dropout)
    if args.device == "cpu":
        model.load_state_dict(torch.load(args.init, weights_only=False))
    else:
        model.load_state_dict(torch.load(args.init, weights_only=False, map_location="cpu"))
    return model


def step_lr_factor(args, it):
    """tl's schedule in steps (runtime/optim/lr_schedule.h, nanoGPT's get_lr) as a factor of the
    base lr, the same double operations in the same order: LambdaLR multiplies base_lr by it."""
    w = max(0, args.warmup_steps)
    d = args.decay_steps if args.decay_steps >= 0 else max(0, args.steps - 1)
    if it < w:
        return (it + 1) / (w + 1)
    if args.lr_schedule == "constant":
        return 1.0
    m = args.min_lr / args.lr if args.lr > 0 else 0.0
    if it >= d:
        return m
    r = (it - w) / (d - w)
    coeff = 0.5 * (1.0 + math.cos(math.pi * r)) if args.lr_schedule == "cosine" else 1.0 - r
    return m + coeff * (1.0 - m)


def steps_schedule(args):
    return args.warmup_steps >= 0 or args.decay_steps >= 0 or args.lr_schedule == "linear"


def param_groups(args, model):
    """tl's --weight-decay-on / --no-decay as PyTorch parameter groups (nanoGPT's configure_optimizers)."""
    if args.weight_decay_on == "all" and not args.no_decay:
        return [p for _, p in model.named_parameters()]
    decay, rest = [], []
    for name, p in model.named_parameters():
        d = args.weight_decay_on == "all" or p.dim() >= 2
        if d and args.no_decay and re.search(args.no_decay, name):
            d = False
        (decay if d else rest).append(p)
    return [g for g in ({"params": decay}, {"params": rest, "weight_decay": 0.0}) if g["params"]]


def make_optimizer(args, params):
    import torch
    if args.optimizer in ("adam", "adamw"):
        cls = torch.optim.AdamW if args.optimizer == "adamw" else torch.optim.Adam
        return cls(params, lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps,
                   weight_decay=args.weight_decay, foreach=False)
    # CUDA: single-tensor SGD, tl's form (PyTorch's CUDA default is foreach; on the CPU the default
    # is single-tensor already).
    extra = {"foreach": False} if args.device == "cuda" else {}
    return torch.optim.SGD(params, lr=args.lr, momentum=args.momentum, dampening=args.dampening,
                           weight_decay=args.weight_decay, nesterov=args.optimizer == "nesterov", **extra)


def train(rank, args, averaging, data, shape):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler

    model = build_model(args, shape)
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if args.device == "cuda":
        model.to(device)
    # this rank's dropout draws, as tl's EST `rank` (manual_seed seeds cuda:0's generator too)
    torch.manual_seed(mix_seed(args.seed, rank))
    # gloo cannot broadcast bool tensors (a GPT's causal mask): DDP leaves those buffers alone.
    # Each rank keeps its own copy; tl adopts EST 0's, the same where forward does not change them.
    bool_buffers = [name for name, b in model.named_buffers() if b.dtype == torch.bool]
    if bool_buffers:
        DDP._set_params_and_buffers_to_ignore_for_model(model, bool_buffers)
    if args.device == "cuda":
        ddp = DDP(model, device_ids=[0], broadcast_buffers=True)
    else:
        ddp = DDP(model, broadcast_buffers=True)
    fixed = None
    if averaging == "exact":
        ddp.register_comm_hook(state=None, hook=exact_average_hook)
    elif averaging == "fixed":
        fixed = FixedPointState({id(p): n for n, p in model.named_parameters()})
        ddp.register_comm_hook(state=fixed, hook=fixed_point_hook)
    opt = make_optimizer(args, param_groups(args, model))
    schedule = None
    if steps_schedule(args):
        schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: step_lr_factor(args, it))
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
            if args.device == "cuda":
                x, y = x.to(device), y.to(device)
            opt.zero_grad()
            if args.micro_batches == 1:
                loss, logits = score(args, ddp, x, y)
                loss.backward()
                loss_sum = loss.item() * y.size(0)
                correct = 0.0
                if logits is not None:
                    with torch.no_grad():
                        correct = float(logits.argmax(1).eq(y).sum())
            else:  # PyTorch's accumulation: tl's train::forwardBackwardInPieces
                pieces = [(xk, yk) for xk, yk in zip(x.tensor_split(args.micro_batches),
                                                     y.tensor_split(args.micro_batches)) if yk.size(0)]
                loss_sum, correct = 0.0, 0.0
                for k, (xk, yk) in enumerate(pieces):
                    with ddp.no_sync() if k + 1 < len(pieces) else contextlib.nullcontext():
                        loss, logits = score(args, ddp, xk, yk)
                        (loss / args.micro_batches).backward()
                    loss_sum += loss.item() * yk.size(0)
                    if logits is not None:
                        with torch.no_grad():
                            correct += float(logits.argmax(1).eq(yk).sum())
            grad_norm = float("nan")
            if args.clip_grad_norm > 0:  # on the averaged gradient, which every rank holds
                grad_norm = torch.nn.utils.clip_grad_norm_(ddp.parameters(), args.clip_grad_norm).item()
            lr = opt.param_groups[0]["lr"]
            opt.step()
            if schedule is not None:
                schedule.step()
            step += 1
            # tl's step statistics: loss x samples (the batch's first dimension), summed
            stats = torch.tensor([loss_sum, correct, float(y.size(0))], dtype=torch.float64)
            dist.all_reduce(stats)
            acc = stats[1].item() / stats[2].item() if logits is not None else float("nan")
            rows.append((step, epoch, stats[0].item() / stats[2].item(), acc, grad_norm, lr))
        epoch += 1

    if rank == 0:
        out = os.path.join(args.out, averaging)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "steps.csv"), "w") as f:
            f.write("step,epoch,loss,acc,grad_norm,lr\n")
            for r in rows:
                f.write("%d,%d,%r,%r,%r,%r\n" % r)
        with open(os.path.join(out, "summary.json"), "w") as f:
            summary = {"steps": step, "ranks": args.ranks, "averaging": averaging,
                       "params_sha256": params_sha256(model), "torch": torch.__version__}
            if args.device == "cuda":
                summary["cuda"] = cuda_settings(device)
            if fixed is not None:
                summary["fixed_point_replays"] = fixed.replays
                summary["elements_unlike_exact_per_step"] = fixed.unlike_exact
            json.dump(summary, f)
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
    ddp_data.check(args.dataset, args.data_dir, args.token_dtype, args.seq_len)  # one clear error before any process starts
    if args.device == "cuda":
        import torch
        if not torch.cuda.is_available():
            print("ddp_reference: error: --device cuda: this python's torch (%s) sees no CUDA device" % torch.__version__,
                  file=sys.stderr)
            return 1
        # The ranks' processes are spawned (a forked child cannot use CUDA safely; this process
        # has asked the driver for its devices above); they inherit this environment, cuBLAS's
        # workspace setting included.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        mp.start_processes(train_rank, args=(args, free_port()), nprocs=args.ranks, join=True, start_method="spawn")
        return 0
    # fork: the ranks inherit the imported torch instead of importing it again each
    mp.start_processes(train_rank, args=(args, free_port()), nprocs=args.ranks, join=True, start_method="fork")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

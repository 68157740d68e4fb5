"""PyTorch companion of bench_own_model: exports the modules tl trains with --model-file, and
times PyTorch's training step on them.

  own_model_step.py export DIR --vocab V
      DIR/cnn.pt       tl's --model cnn (ddp_models.SmallCnn, CIFAR input), scripted
      DIR/resnet18.pt  tl's --model resnet18 (ddp_models.py's CIFAR ResNet-18), scripted
      DIR/gpt.pt       examples/gpt's decoder (4 blocks, width 128, 4 heads, context 128,
                       dropout 0.1) over V tokens, scripted; forward(inputs, targets) -> loss
  own_model_step.py time --model cnn|resnet18|gpt --file F [--batch B] [--steps S]
                         [--warmup W] [--threads T] [--variants pt,plain,eager]
      One process, T intra-op threads, one fixed random batch; per variant W untimed steps,
      then S timed ones. Prints one JSON line {"pt": [ms, ...], ...}: each timed step's ms.
      pt     the .pt as torch.jit.load gives it (PyTorch's default graph executor)
      plain  the same .pt with the graph executor's optimisations off, as tl runs it
      eager  the un-scripted nn.Module with the .pt's weights (load_state_dict)
      eagerdet  eager with deterministic kernels only and no autotuning, as tl runs them
                (torch.use_deterministic_algorithms, cudnn.deterministic; for a GPU)
      A step: zero_grad, forward, loss (cross-entropy of the logits; the GPT's own loss),
      backward, optimizer step, loss.item(); SGD lr 0.05 momentum 0.9 for the image models
      (tl's default), AdamW lr 0.002 weight decay 0.01 for the GPT (as bench_own_model gives tl).
      --trace FILE (one variant): its timed steps run under torch.profiler (CPU ops and, on a
      GPU, kernels), each inside a span "tl::step N" as tl-launch --trace-steps marks its steps,
      exported as a Chrome trace (bench/reference/trace_summary.py compares the two).

Exit 77 when this python has no torch.
"""
import argparse
import json
import os
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("no torch in", sys.executable)
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "examples", "gpt"))
import ddp_models  # noqa: E402  (tl's built-in models in PyTorch, layer for layer)
import model as gpt_model  # noqa: E402  (examples/gpt's decoder-only transformer)

GPT_CONTEXT = 128


def build(name, vocab):
    if name == "cnn":
        return ddp_models.build("cnn", 0, 3, 32, 10, True, -1)
    if name == "resnet18":
        return ddp_models.build("resnet18", 0, 3, 32, 10, True, -1)
    if name == "gpt":
        return gpt_model.Gpt(vocab, context=GPT_CONTEXT, width=128, layers=4, heads=4, dropout=0.1)
    raise SystemExit("own_model_step.py: unknown model %s" % name)


def export(out, vocab):
    os.makedirs(out, exist_ok=True)
    for name in ("cnn", "resnet18", "gpt"):
        torch.manual_seed(0)
        torch.jit.script(build(name, vocab)).save(os.path.join(out, name + ".pt"))


def timed(step, warmup, steps, trace=None, device="cpu"):
    for _ in range(warmup):
        step()
    ms = []
    profiler = None
    if trace:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device != "cpu":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        profiler = torch.profiler.profile(activities=activities)
        profiler.__enter__()
    try:
        for k in range(steps):
            t0 = time.perf_counter()
            if profiler is not None:
                with torch.autograd.profiler.record_function("tl::step %d" % (warmup + k + 1)):
                    step()
            else:
                step()
            ms.append((time.perf_counter() - t0) * 1e3)
        if profiler is not None and device != "cpu":
            torch.cuda.synchronize()
    finally:
        if profiler is not None:
            profiler.__exit__(None, None, None)
    if profiler is not None:
        profiler.export_chrome_trace(trace)
    return ms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["export", "time"])
    p.add_argument("dir", nargs="?")
    p.add_argument("--vocab", type=int, default=96)
    p.add_argument("--model")
    p.add_argument("--file")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--variants", default="pt,plain,eager")
    p.add_argument("--device", default="cpu", help="where the module, batch and step run (loss.item() waits for it)")
    p.add_argument("--trace", help="a Chrome trace of the timed steps (torch.profiler) to this file; one variant only")
    a = p.parse_args()
    if a.trace and len(a.variants.split(",")) != 1:
        p.error("--trace: give one variant (--variants), got '%s'" % a.variants)
    if "eagerdet" in a.variants.split(","):
        # tl's setting (runtime/train/step_plan.cpp); cuBLAS reads it when it starts.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if a.command == "export":
        export(a.dir, a.vocab)
        return
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.model == "gpt":
        vocab = torch.jit.load(a.file).state_dict()["tokens.weight"].shape[0]
        x = torch.randint(0, vocab, (a.batch, GPT_CONTEXT))
        y = torch.roll(x, -1, 1)
    else:
        vocab = 0
        x = torch.randn(a.batch, 3, 32, 32)
        y = torch.randint(0, 10, (a.batch,))
    device = torch.device(a.device)
    x, y = x.to(device), y.to(device)
    out = {}
    for variant in a.variants.split(","):
        scripted = torch.jit.load(a.file, map_location=device)
        if variant in ("eager", "eagerdet"):
            module = build(a.model, vocab)
            # TorchScript keeps non-persistent buffers (the GPT's causal masks) in its state
            # dict; the module builds its own.
            missing, unexpected = module.load_state_dict(scripted.state_dict(), strict=False)
            if missing or any(not k.endswith(".mask") for k in unexpected):
                raise SystemExit("own_model_step.py: %s does not hold %s's weights: missing %s, unexpected %s"
                                 % (a.file, a.model, missing, unexpected))
            module.to(device)
        else:
            module = scripted
        module.train()
        if a.model == "gpt":
            opt = torch.optim.AdamW(module.parameters(), lr=0.002, weight_decay=0.01)
        else:
            opt = torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)

        def step():
            opt.zero_grad()
            loss = module(x, y) if a.model == "gpt" else F.cross_entropy(module(x), y)
            loss.backward()
            opt.step()
            loss.item()

        torch._C._set_graph_executor_optimize(variant != "plain")
        deterministic = variant == "eagerdet"  # the kernels tl asks for: no autotuning, deterministic only
        torch.use_deterministic_algorithms(deterministic)
        torch.backends.cudnn.deterministic = deterministic
        torch.backends.cudnn.benchmark = False
        try:
            out[variant] = timed(step, a.warmup, a.steps, a.trace, a.device)
        finally:
            torch._C._set_graph_executor_optimize(True)
            torch.use_deterministic_algorithms(False)
            torch.backends.cudnn.deterministic = False
    print(json.dumps(out))


if __name__ == "__main__":
    main()

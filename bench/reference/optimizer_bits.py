"""Whether PyTorch's optimizer implementations give the same bits on a device.

tl's optimizers follow PyTorch's single-tensor form (runtime/optim: op for op, foreach=False).
PyTorch 2.x picks the foreach form by default on CUDA, and DDP users get that default. This
runs 30 steps of SGD (momentum, weight decay, nesterov) and AdamW from the same parameters and
gradients with foreach=False, foreach=True and (AdamW) fused=True, and prints one line:

    OPTIMIZER_BITS {"sgd": {"foreach": "same"}, "adamw": {"foreach": "differs", "fused": ...}}

"same" means every parameter bit equals the single-tensor run's after every step.

    optimizer_bits.py [--device cuda] [--steps 30]
"""
import argparse
import json

import torch


def run(device, opt_name, variant, steps):
    g = torch.Generator().manual_seed(5)
    shapes = [(64, 3, 3, 3), (64,), (128, 64, 3, 3), (128,), (10, 512), (10,), (1,)]
    params = [torch.nn.Parameter(torch.randn(s, generator=g).to(device)) for s in shapes]
    kwargs = {"foreach": variant == "foreach"}
    if variant == "fused":
        kwargs = {"fused": True}
    if opt_name == "sgd":
        opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=5e-4, nesterov=True, **kwargs)
    else:
        opt = torch.optim.AdamW(params, lr=0.002, betas=(0.9, 0.95), weight_decay=0.1, **kwargs)
    history = []
    for step in range(steps):
        gs = torch.Generator().manual_seed(1000 + step)
        for p in params:
            p.grad = (torch.randn(p.shape, generator=gs) * 10.0 ** (step % 5 - 2)).to(device)
        opt.step()
        history.append([p.detach().cpu().clone() for p in params])
    return history


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    out = {"device": a.device, "torch": torch.__version__}
    for opt_name, variants in (("sgd", ["foreach"]), ("adamw", ["foreach", "fused"])):
        reference = run(a.device, opt_name, "single", a.steps)
        out[opt_name] = {}
        for variant in variants:
            try:
                got = run(a.device, opt_name, variant, a.steps)
            except (RuntimeError, TypeError) as e:  # e.g. fused needs a newer PyTorch or a GPU
                out[opt_name][variant] = "unavailable: %s" % str(e).splitlines()[0][:80]
                continue
            first = next((s for s, (x, y) in enumerate(zip(reference, got))
                          if any(not torch.equal(p, q) for p, q in zip(x, y))), None)
            out[opt_name][variant] = "same" if first is None else "differs from step %d" % first
    print("OPTIMIZER_BITS " + json.dumps(out))


if __name__ == "__main__":
    main()

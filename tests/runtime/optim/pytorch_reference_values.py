"""Prints the PyTorch 1.13 reference values pasted into test_optimizers_pytorch.cpp.

Run with the system interpreter that has torch: /usr/bin/python3 pytorch_reference_values.py
Every optimizer runs three steps on a float32 parameter [1, -2, 3] with the fixed gradients
and per-step learning rates below (the lr of step k is written into the param group before
the step, as tl's scheduled step(lr) does).
"""
import torch

PARAM = [1.0, -2.0, 3.0]
GRADS = [[0.1, -0.2, 0.3], [-0.5, 0.4, 0.05], [0.2, 0.2, -0.1]]
LR_SCALE = [1.0, 0.5, 0.25]

CASES = [
    ("sgd", torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("nesterov", torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("adagrad", torch.optim.Adagrad,
     dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1, eps=1e-10)),
    ("adadelta", torch.optim.Adadelta, dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.01)),
    ("adam", torch.optim.Adam, dict(lr=0.01, betas=(0.9, 0.999), eps=1e-3, weight_decay=0.01)),
    ("adamw", torch.optim.AdamW, dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)),
]

for name, cls, kwargs in CASES:
    p = torch.nn.Parameter(torch.tensor(PARAM, dtype=torch.float32))
    opt = cls([p], **kwargs)
    rows = []
    for grad, scale in zip(GRADS, LR_SCALE):
        opt.param_groups[0]["lr"] = kwargs["lr"] * scale
        p.grad = torch.tensor(grad, dtype=torch.float32)
        opt.step()
        rows.append("{" + ", ".join(repr(v) + "f" for v in p.detach().tolist()) + "}")
    print(f'{{"{name}", {{' + ", ".join(rows) + "}},")

#!/usr/bin/python3
"""Step by step, what a training step launched: tl's trace (tl-launch --trace-steps) beside
PyTorch's (own_model_step.py --trace, torch.profiler's Chrome trace export).

  trace_summary.py TRACE [TRACE ...] [--labels A,B,...] [--top K] [--json FILE]

Each TRACE is a Chrome trace whose steps are spans named "tl::step N" (category
user_annotation). Per step, on the host: the span's wall time, the ATen ops that started in it
(nested ones included), CUDA runtime calls that wait for the device (*Synchronize*, and
cudaMemcpy without Async); on the device: kernels, copies and sets that started between this
step's start and the next one's (the device runs behind the host), and the time the device was
busy with them (the union of their intervals). Then, per trace against the first, the ATen ops
and kernels whose count per step differs most, and the kernels whose device time differs most:
where a slower step spends its extra launches.

Prints a table; --json writes the figures. Exit 1 when a trace cannot be read or has no step.
"""
import argparse
import collections
import json
import sys

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit("trace_summary.py: error: cannot read '%s': %s" % (path, e))
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise SystemExit("trace_summary.py: error: '%s' holds no traceEvents list" % path)
    out = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X" or "ts" not in e:
            continue
        name = str(e.get("name", ""))
        # PyTorch without Kineto (Debian's 1.13) exports host ops with no category.
        cat = e.get("cat") or ("user_annotation" if name.startswith("tl::") else "cpu_op")
        out.append((float(e["ts"]), float(e.get("dur", 0.0)), name, str(cat)))
    steps = sorted((ts, dur, name) for ts, dur, name, cat in out
                   if cat == "user_annotation" and name.startswith("tl::step "))
    if not steps:
        raise SystemExit("trace_summary.py: error: '%s' has no step spans (\"tl::step N\")" % path)
    return out, steps


def busy(intervals):
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def summarise(path):
    events, steps = load(path)
    rows = []
    ops_per_step = collections.Counter()
    kernels_per_step = collections.Counter()
    kernel_us = collections.Counter()
    for i, (ts, dur, name) in enumerate(steps):
        end = ts + dur
        device_end = steps[i + 1][0] if i + 1 < len(steps) else float("inf")
        ops = [e for e in events if e[3] == "cpu_op" and e[2].startswith("aten::") and ts <= e[0] < end]
        waits = [e for e in events if e[3] in ("cuda_runtime", "cuda_driver") and ts <= e[0] < end and
                 ("Synchronize" in e[2] or e[2] in ("cudaMemcpy", "cuMemcpy", "cudaMemcpy2D"))]
        device = [e for e in events if e[3] in DEVICE_CATS and ts <= e[0] < device_end]
        kernels = [e for e in device if e[3] == "kernel"]
        for e in ops:
            ops_per_step[e[2]] += 1
        for e in kernels:
            kernels_per_step[e[2]] += 1
            kernel_us[e[2]] += e[1]
        rows.append({"step": name.split()[-1], "wall_ms": dur / 1e3, "aten_ops": len(ops),
                     "host_waits": len(waits), "host_wait_ms": sum(e[1] for e in waits) / 1e3,
                     "kernels": len(kernels), "copies_sets": len(device) - len(kernels),
                     "device_busy_ms": busy([(e[0], e[0] + e[1]) for e in device]) / 1e3})
    n = float(len(steps))
    return {"trace": path, "steps": rows,
            "ops_per_step": {k: v / n for k, v in ops_per_step.items()},
            "kernels_per_step": {k: v / n for k, v in kernels_per_step.items()},
            "kernel_ms_per_step": {k: v / n / 1e3 for k, v in kernel_us.items()}}


def differences(a, b, key, top):
    names = set(a[key]) | set(b[key])
    diff = sorted(((b[key].get(k, 0.0) - a[key].get(k, 0.0), k) for k in names), key=lambda x: -abs(x[0]))
    return [(k, a[key].get(k, 0.0), b[key].get(k, 0.0)) for d, k in diff[:top] if d != 0]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("traces", nargs="+")
    p.add_argument("--labels", help="a name per trace, comma-separated (default: the file names)")
    p.add_argument("--top", type=int, default=12, help="rows of each difference list (default 12)")
    p.add_argument("--json", help="also write the figures here")
    a = p.parse_args(argv)
    labels = a.labels.split(",") if a.labels else a.traces
    if len(labels) != len(a.traces):
        p.error("--labels: %d names for %d traces" % (len(labels), len(a.traces)))
    runs = [summarise(t) for t in a.traces]
    print("%-10s %5s %9s %9s %7s %11s %8s %7s %14s" % ("run", "step", "wall ms", "ATen ops", "kernels",
                                                       "copies/sets", "waits", "wait ms", "device busy ms"))
    for label, r in zip(labels, runs):
        for s in r["steps"]:
            print("%-10s %5s %9.2f %9d %7d %11d %8d %7.2f %14.2f" % (
                label, s["step"], s["wall_ms"], s["aten_ops"], s["kernels"], s["copies_sets"], s["host_waits"],
                s["host_wait_ms"], s["device_busy_ms"]))
    for label, r in zip(labels[1:], runs[1:]):
        for key, what, fmt in (("ops_per_step", "ATen ops per step", "%8.1f"),
                               ("kernels_per_step", "kernels per step", "%8.1f"),
                               ("kernel_ms_per_step", "kernel ms per step", "%8.3f")):
            rows = differences(runs[0], r, key, a.top)
            if not rows:
                continue
            print("\n%s, largest differences:\n  %8s %8s" % (what, labels[0][:8], label[:8]))
            for name, x, y in rows:
                print(("  " + fmt + " " + fmt + "  %s") % (x, y, name[:100]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"labels": labels, "runs": runs}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

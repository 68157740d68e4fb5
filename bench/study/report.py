#!/usr/bin/python3
"""The training-study report from the runs of bench/study/run.sh: OUT/README.md, the CSVs behind
every table and plot, and the plots (drawn by tl-report). Python's standard library only."""
import argparse
import json
import os
import platform
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from report_common import Report, write_csv  # noqa: E402

LOADER_MODELS = (("fm-cnn", "small CNN, Fashion-MNIST"), ("cifar-cnn", "small CNN, synthetic CIFAR-10"),
                 ("cifar-r18", "ResNet-18, synthetic CIFAR-10"))
OPTIMIZERS = (("sgd", "SGD, lr 0.05"), ("nesterov", "Nesterov 0.9, lr 0.05"), ("adagrad", "Adagrad, lr 0.01"),
              ("adadelta", "Adadelta, lr 1.0, rho 0.9"), ("adam", "Adam, lr 1e-3"),
              ("adamw", "AdamW, lr 1e-3, wd 0.01"))


def records(run, kind):
    with open(os.path.join(run, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, filter(str.strip, f)) if r.get("type") == kind]


def summary(run):
    with open(os.path.join(run, "summary.json")) as f:
        return json.load(f)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_of(run):
    s = summary(run)
    return "%s%s" % (s.get("device", "?"), " (emulated)" if s.get("emulated") else "")


def loader_section(rep, runs):
    rep.md("## 1. Loader threads: where an epoch's time goes\n")
    rep.md("2 processes, one logical worker each, batch 32 per worker, one epoch, default augmentation "
           "(CIFAR-10: random crop + flip; Fashion-MNIST: random shift), 1 compute thread per process. "
           "`--workers W` loader threads per process (0: the training thread loads its own batches). "
           "Times are rank 0's: data wait (the training thread waiting for a batch), compute (forward + "
           "backward + optimizer), communication (gradient reduction), total (the epoch's wall time). "
           "With 0 threads the training thread decodes and augments its own batches, so that work is "
           "inside the compute figure and data wait stays near 0. The runs of one model follow each "
           "other on a shared machine (2 cores, load average ~20 from other work while this report "
           "was made), so part of the differences between settings is that load changing.\n")
    rep.md("| model, data | device | loader threads | data wait s | compute s | comm s | total s | images/s |")
    rep.md("| --- | --- | --- | --- | --- | --- | --- | --- |")
    best = {}
    for key, title in LOADER_MODELS:
        rows = []
        for w in range(5):
            run = os.path.join(runs, "loader-%s-w%d" % (key, w))
            e = records(run, "epoch")[0]
            rows.append((w, e["data_wait_s"], e["compute_s"], e["comm_s"], e["total_s"], e["images_per_s"]))
            rep.md("| %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %.0f |" % (
                title, device_of(run), w, e["data_wait_s"], e["compute_s"], e["comm_s"], e["total_s"],
                e["images_per_s"]))
        write_csv(os.path.join(rep.args.out, "loader_%s.csv" % key),
                  ["workers", "data_wait_s", "compute_s", "comm_s", "total_s", "images_per_s"], rows, digits=6)
        best[key] = (min(rows, key=lambda r: r[4]), rows[0])
    rep.md("")
    for key, title in LOADER_MODELS:
        rep.plot("loader_%s.png" % key, "Epoch time vs loader threads: %s" % title, "loader threads per process",
                 "seconds per epoch", [(col.replace("_s", "").replace("_", " "), "loader_%s.csv" % key, "workers", col)
                                       for col in ("total_s", "compute_s", "data_wait_s", "comm_s")], markers=True)
    return best


def optimizer_section(rep, runs):
    rep.md("## 2. Optimizers at the same budget\n")
    rep.md("Small CNN (BatchNorm, dropout 0.25) on Fashion-MNIST, 2 processes x 1 logical worker, batch 32 "
           "per worker, constant learning rate, no momentum for SGD (SGD with momentum 0.9 is the "
           "BatchNorm-on run of section 3), no weight decay except AdamW's decoupled 0.01, PyTorch's "
           "usual learning rate for each optimizer; test accuracy after every epoch.\n")
    epochs = None
    table = []
    columns = {}
    for key, title in OPTIMIZERS:
        run = os.path.join(runs, "opt-" + key)
        ep = records(run, "epoch")
        columns[key] = [e["test_acc"] * 100 for e in ep]
        epochs = len(ep)
        table.append((title, device_of(run), ep[-1]["test_acc"] * 100, ep[-1]["loss"], ep[-1]["train_acc"] * 100,
                      sum(e["total_s"] for e in ep)))
    write_csv(os.path.join(rep.args.out, "optimizers.csv"), ["epoch"] + [k for k, _ in OPTIMIZERS],
              [[e + 1] + [columns[k][e] for k, _ in OPTIMIZERS] for e in range(epochs)], digits=6)
    rep.md("| optimizer | device | test acc after %d epochs | last epoch's train loss | train acc | seconds |" % epochs)
    rep.md("| --- | --- | --- | --- | --- | --- |")
    for row in sorted(table, key=lambda r: -r[2]):
        rep.md("| %s | %s | %.2f %% | %.4f | %.2f %% | %.1f |" % row)
    rep.md("")
    rep.plot("optimizers.png", "Test accuracy per epoch by optimizer (CNN, Fashion-MNIST)", "epoch",
             "test accuracy (%)", [(title, "optimizers.csv", "epoch", key) for key, title in OPTIMIZERS], markers=True)
    return sorted(table, key=lambda r: -r[2])


def batchnorm_section(rep, runs):
    rep.md("## 3. BatchNorm on and off\n")
    rep.md("The same small CNN with and without its two BatchNorm layers (`--no-batchnorm`: the convolutions "
           "get a bias instead), SGD with momentum 0.9, lr 0.05, same data and budget as above.\n")
    rep.md("| data | BatchNorm | device | test acc per epoch | final train loss |")
    rep.md("| --- | --- | --- | --- | --- |")
    out = {}
    for data, title in (("fm", "Fashion-MNIST"), ("cifar", "synthetic CIFAR-10")):
        cols = {}
        for bn in ("on", "off"):
            run = os.path.join(runs, "bn-%s-%s" % (data, bn))
            ep = records(run, "epoch")
            cols[bn] = [e["test_acc"] * 100 for e in ep]
            rep.md("| %s | %s | %s | %s | %.4f |" % (title, bn, device_of(run),
                                                     ", ".join("%.2f %%" % a for a in cols[bn]), ep[-1]["loss"]))
            out[(data, bn)] = cols[bn][-1]
        write_csv(os.path.join(rep.args.out, "batchnorm_%s.csv" % data), ["epoch", "on", "off"],
                  [[e + 1, cols["on"][e], cols["off"][e]] for e in range(len(cols["on"]))], digits=6)
    rep.md("")
    for data, title in (("fm", "Fashion-MNIST"), ("cifar", "synthetic CIFAR-10")):
        rep.plot("batchnorm_%s.png" % data, "Test accuracy per epoch, BatchNorm on vs off (CNN, %s)" % title,
                 "epoch", "test accuracy (%)", [("BatchNorm", "batchnorm_%s.csv" % data, "epoch", "on"),
                                                ("no BatchNorm", "batchnorm_%s.csv" % data, "epoch", "off")], markers=True)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--tl-report", required=True)
    p.add_argument("--size", required=True)
    args = p.parse_args()
    rep = Report(args)
    rep.md("# Training study: loader threads, optimizers, BatchNorm\n")
    rep.md("Regenerate: `bash bench/study/run.sh build docs/reports/study` (add `--full` for the large "
           "version). Size of this report: %s. Every number was produced on the CPU (%s, %d cores, shared "
           "with other work while it ran; the device column is each run's `summary.json` `device`). "
           "**No GPU rows**: no GPU was available to the session that made this report; on a GPU machine "
           "add `--device cuda` to the runs to get them.\n" % (args.size, cpu_name(), os.cpu_count()))
    best = loader_section(rep, args.runs)
    ranking = optimizer_section(rep, args.runs)
    bn = batchnorm_section(rep, args.runs)
    head = ["## Headline\n"]
    for key, title in LOADER_MODELS:
        fastest, zero = best[key]
        head.append("- %s: fastest epoch with %d loader threads, %.2f s (0 threads: %.2f s); the settings ran "
                    "one after another on a shared machine, so read section 1's caveat first." % (
                        title, fastest[0], fastest[4], zero[4]))
    head.append("- Optimizers (CNN, Fashion-MNIST): best %s at %.2f %% test accuracy, worst %s at %.2f %%." % (
        ranking[0][0], ranking[0][2], ranking[-1][0], ranking[-1][2]))
    head.append("- BatchNorm: Fashion-MNIST %.2f %% with vs %.2f %% without; synthetic CIFAR-10 %.2f %% vs %.2f %%." % (
        bn[("fm", "on")], bn[("fm", "off")], bn[("cifar", "on")], bn[("cifar", "off")]))
    rep.lines[2:2] = head + [""]
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write("\n".join(rep.lines) + "\n")
    print("\n".join(head))
    return 0


if __name__ == "__main__":
    sys.exit(main())

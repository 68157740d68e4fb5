#!/usr/bin/python3
"""The consistency report from the runs of bench/consistency/run.sh: OUT/README.md, the CSVs
behind every table and plot, and the plots (drawn by tl-report). Python's standard library
only."""
import argparse
import csv
import json
import os
import platform
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from report_common import Report, write_csv  # noqa: E402


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def tl_steps(run):
    """step -> loss of a tl-launch run (its metrics.jsonl)."""
    return {r["step"]: r["loss"] for r in read_jsonl(os.path.join(run, "metrics.jsonl")) if r.get("type") == "step"}


def tl_epochs(*runs):
    """epoch -> its record, over the segments of a run (later segments win)."""
    out = {}
    for run in runs:
        for r in read_jsonl(os.path.join(run, "metrics.jsonl")):
            if r.get("type") == "epoch" and not r.get("partial"):
                out[r["epoch"]] = r
    return out


def ddp_steps(run):
    with open(os.path.join(run, "steps.csv")) as f:
        return {int(r["step"]): float(r["loss"]) for r in csv.DictReader(f)}


def sha(run):
    with open(os.path.join(run, "summary.json")) as f:
        return json.load(f)["params_sha256"]


def rel(a, b):
    return abs(a - b) / abs(b) if b != 0 else abs(a - b)


def matrix_section(rep, runs):
    rows = []
    with open(os.path.join(runs, "matrix.csv")) as f:
        for fields in csv.reader(f):
            rows.append((fields[0], fields[1], ",".join(fields[2:-1]), fields[-1]))
    write_csv(os.path.join(rep.args.out, "matrix.csv"), ["model", "reduction", "cell", "params_sha256"], rows)
    rep.md("## 1. The bit-equality matrix\n")
    rep.md("`tests/est/test_consistency_matrix` (the CTest test, run here with `TL_CONSISTENCY_CSV`): "
           "N = 4 logical workers, 30 steps on 256 synthetic CIFAR-10 images (3 epoch boundaries), "
           "SGD with momentum; every cell's `params_sha256` against DDP mode (4 processes, one EST each). "
           "Rescales are checkpoint-restarts 4 -> 2 -> 3 processes (placement 1,2,1 at the end), once "
           "with the loader threads changed 0 -> 2 -> 3 between segments.\n")
    rep.md("The in-place chain (tl-ctl: shrink, placement change, grows with started processes) and the "
           "recovery (tl-run, three ranks SIGKILLed at random steps) come from `test_inplace_rescale` and "
           "`test_recovery`, each against its own job's reference run.\n")
    rep.md("| job | reduction | cell | params_sha256 (first 16) | same as the reference |")
    rep.md("| --- | --- | --- | --- | --- |")
    def is_reference(cell):
        return cell.startswith("ddp") or cell.startswith("uninterrupted")
    reference = {(m, r): d for m, r, c, d in rows if is_reference(c)}
    for model, reduction, cell, digest in rows:
        same = "reference" if is_reference(cell) else ("yes" if digest == reference.get((model, reduction)) else "**no**")
        rep.md("| %s | %s | %s | `%s` | %s |" % (model, reduction, cell, digest[:16], same))
    missing = os.path.join(runs, "missing.txt")
    if os.path.exists(missing):
        with open(missing) as f:
            for line in filter(str.strip, f):
                rep.md("\n**Not in this table**: %s." % line.strip())
    rep.md("\nWith `--reduction fp32` (a float allreduce) tl makes no promise; the two fp32 rows show "
           "whether this machine's float sums happened to agree.\n")
    return all(d == reference[(m, r)] for m, r, c, d in rows if r == "exact")


def ddp_section(rep, runs):
    rep.md("## 2. tl against real PyTorch DDP\n")
    rep.md("PyTorch %s (Debian's python3-torch, CPU), `DistributedDataParallel` over gloo on 127.0.0.1, "
           "one OS process per rank (`bench/reference/ddp_reference.py`). Both sides start from tl's "
           "initial weights (`tl-launch --steps 0 --save-model`), read the same files through "
           "`DistributedSampler` with tl's seed, without augmentation, with dropout drawn from the "
           "generator tl gives the logical worker of that rank, one intra-op thread, and "
           "`torch.optim.SGD` (lr 0.05, momentum 0.9). tl runs N logical workers as N/2 ESTs on each of "
           "2 processes (`--reduction exact`). *DDP exact* averages gradients with a communication hook: "
           "all ranks' float32 gradients summed in float64, divided by N, rounded once to float32. "
           "*DDP stock* is DDP as shipped: gloo sums float32 gradients in its own order.\n" % rep.args.torch)
    rep.md("| model, data | N | steps | DDP exact: steps identical to tl (from step 1) | DDP exact: same final "
           "params_sha256 | DDP exact: max rel. loss diff | DDP stock: steps identical | DDP stock: same final "
           "params_sha256 | DDP stock: max rel. loss diff |")
    rep.md("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    results = {}
    for name, title in (("cnn-n2", "CNN, Fashion-MNIST"), ("cnn-n4", "CNN, Fashion-MNIST"),
                        ("r20-n4", "ResNet-20, synthetic CIFAR-10")):
        tl_run = os.path.join(runs, name + "-tl")
        if not os.path.isdir(tl_run):
            continue
        tl = tl_steps(tl_run)
        exact = ddp_steps(os.path.join(runs, name + "-ddp", "exact"))
        stock = ddp_steps(os.path.join(runs, name + "-ddp", "stock"))
        steps = sorted(tl)
        rows = [(s, tl[s], exact[s], stock[s], rel(exact[s], tl[s]), rel(stock[s], tl[s])) for s in steps]
        write_csv(os.path.join(rep.args.out, "ddp_%s.csv" % name),
                  ["step", "tl", "ddp_exact", "ddp_stock", "rel_exact", "rel_stock"], rows)

        def identical_prefix(column):
            return next((i for i, r in enumerate(rows) if r[column] != r[1]), len(rows))
        same_exact = sha(tl_run) == sha(os.path.join(runs, name + "-ddp", "exact"))
        same_stock = sha(tl_run) == sha(os.path.join(runs, name + "-ddp", "stock"))
        n = name.split("-n")[1]
        r = {"steps": len(rows), "exact_prefix": identical_prefix(2), "stock_prefix": identical_prefix(3),
             "same_exact": same_exact, "same_stock": same_stock, "max_exact": max(x[4] for x in rows),
             "max_stock": max(x[5] for x in rows), "title": "%s, N = %s" % (title, n)}
        rep.md("| %s | %s | %d | %d | %s | %.3g | %d | %s | %.3g |" % (
            title, n, r["steps"], r["exact_prefix"], "**yes**" if same_exact else "no", r["max_exact"],
            r["stock_prefix"], "yes" if same_stock else "no", r["max_stock"]))
        results[name] = r
    rep.md("")
    for name, title in (("cnn-n4", "CNN on Fashion-MNIST, N = 4"), ("r20-n4", "ResNet-20 on synthetic CIFAR-10, N = 4")):
        if name not in results:
            continue
        rep.plot("ddp_%s_loss.png" % name, "Training loss per step: %s" % title, "step", "loss",
                 [("tl (4 ESTs on 2 processes)", "ddp_%s.csv" % name, "step", "tl"),
                  ("PyTorch DDP, exact averaging *", "ddp_%s.csv" % name, "step", "ddp_exact"),
                  ("PyTorch DDP, stock gloo", "ddp_%s.csv" % name, "step", "ddp_stock")])
        rep.plot("ddp_%s_reldiff.png" % name, "|loss - tl's loss| / tl's loss: %s" % title, "step",
                 "relative difference", [("PyTorch DDP, stock gloo", "ddp_%s.csv" % name, "step", "rel_stock"),
                                         ("PyTorch DDP, exact averaging", "ddp_%s.csv" % name, "step", "rel_exact")],
                 log_y=True)
    rep.md("On the log plots a relative difference of exactly 0 cannot be drawn: a curve starts where its run "
           "first differs from tl's.\n")
    rep.md("**Why stock DDP differs beyond 2 ranks.** Float addition is commutative but not associative. "
           "With 2 ranks gloo computes a + b once, correctly rounded, and the division by 2 is exact, "
           "which equals rounding (a + b) / 2 once: stock DDP and tl agree bit for bit (the N = 2 row). "
           "With 4 ranks gloo's float32 sum rounds after each partial sum, in an order set by its "
           "algorithm, so a gradient element can differ from the exact average in its last bit. Training "
           "amplifies such differences step by step: the runs drift apart from the first step that rounds "
           "differently, and the relative loss difference grows from about 1e-7 to the table's maximum. "
           "No float32 allreduce can give the same bits on every placement; tl's "
           "`--reduction exact` sums integers, whose sum does not depend on the order.\n")
    rep.md("**Why exact-averaging DDP can still part from tl after many steps.** The hook and tl compute the "
           "same mean of the same float32 gradients except in two corners. tl quantises each gradient "
           "element to an int64 on a grid shared by its tensor (a power-of-two scale about 2^52 times finer "
           "than the tensor's largest element, with 8 bits of headroom), so an element more than about "
           "2^28 below its tensor's largest one keeps fewer than float32's 24 bits before the sum, where "
           "the hook's float64 sum keeps them all; and the hook rounds twice (to float64, then to "
           "float32), which differs from one rounding when the float64 quotient lands on a float32 tie. "
           "Either changes one bit of one element, and training amplifies it as above. Where the table "
           "shows fewer identical steps than steps, one of them happened at the first differing step; "
           "which one was not isolated for this report.\n")
    return results


def epochs_section(rep, runs):
    rep.md("## 3. `--reduction fp32` drifts across placements, `exact` does not\n")
    rep.md("The EasyScale experiment: the same job (CNN, Fashion-MNIST, N = 4, evaluation after every "
           "epoch) on 4 processes (DDP mode), on 2 (placement 2,2) and on 1 (placement 4), with each "
           "reduction. With fp32 a process first adds its ESTs' gradients in float, then allreduces the "
           "float sums: the order of additions changes with the placement.\n")
    placements = (("np4", "4 processes"), ("np2", "2 processes, 2,2"), ("np1", "1 process, 4"))
    data = {}
    for red in ("fp32", "exact"):
        for key, _ in placements:
            run = os.path.join(runs, "epochs-%s-%s" % (red, key))
            data[(red, key)] = (tl_steps(run), tl_epochs(run), sha(run))
    steps = sorted(data[("fp32", "np4")][0])
    rows = []
    for s in steps:
        row = [s]
        for red in ("fp32", "exact"):
            ref = data[(red, "np4")][0][s]
            row += [rel(data[(red, "np2")][0][s], ref), rel(data[(red, "np1")][0][s], ref)]
        rows.append(row)
    write_csv(os.path.join(rep.args.out, "reduction_steps.csv"),
              ["step", "fp32_np2", "fp32_np1", "exact_np2", "exact_np1"], rows)
    rep.plot("reduction_loss_diff.png", "|loss - loss on 4 processes| / loss, per step (CNN, N = 4)", "step",
             "relative difference", [("fp32, 2 processes (2,2)", "reduction_steps.csv", "step", "fp32_np2"),
                                     ("fp32, 1 process (4)", "reduction_steps.csv", "step", "fp32_np1"),
                                     ("exact, 2 processes", "reduction_steps.csv", "step", "exact_np2"),
                                     ("exact, 1 process", "reduction_steps.csv", "step", "exact_np1")], log_y=True)
    rep.md("(exact: 0 at every step, so nothing to draw on the log axis. The test accuracy of exact runs "
           "can still differ by a test image or two: see section 4.)\n")
    epochs = sorted(data[("fp32", "np4")][1])
    rep.md("| reduction | epoch | test acc, 4 processes | 2 processes | 1 process | max test acc diff | "
           "max rel. diff of epoch loss |")
    rep.md("| --- | --- | --- | --- | --- | --- | --- |")
    for red in ("fp32", "exact"):
        for e in epochs:
            recs = [data[(red, k)][1][e] for k, _ in placements]
            accs = [r["test_acc"] for r in recs]
            losses = [r["loss"] for r in recs]
            rep.md("| %s | %d | %.2f %% | %.2f %% | %.2f %% | %.2f pp | %.3g |" % (
                red, e, 100 * accs[0], 100 * accs[1], 100 * accs[2], 100 * (max(accs) - min(accs)),
                max(rel(l, losses[0]) for l in losses)))
    rep.md("")
    for red in ("fp32", "exact"):
        hashes = [data[(red, k)][2] for k, _ in placements]
        rep.md("- %s: final `params_sha256` %s" % (
            red, "identical in all three placements (`%s`)" % hashes[0][:16] if len(set(hashes)) == 1
            else "different: " + ", ".join("`%s`" % h[:16] for h in hashes)))
    rep.md("")
    return data, epochs


def longer_section(rep, runs, data, epochs):
    rep.md("## 4. Several epochs: three placements and a rescale chain, one curve\n")
    chain_runs = [os.path.join(runs, "epochs-chain-" + s) for s in "abc"]
    chain = tl_epochs(*chain_runs)
    chain_sha = sha(chain_runs[-1])
    rows = []
    for e in epochs:
        rows.append([e + 1] + [data[("exact", k)][1][e]["test_acc"] * 100 for k in ("np4", "np2", "np1")]
                    + [chain[e]["test_acc"] * 100 if e in chain else float("nan")])
    write_csv(os.path.join(rep.args.out, "epochs_exact.csv"),
              ["epoch", "np4", "np2", "np1", "chain"], [[r[0]] + [float(v) for v in r[1:]] for r in rows])
    rep.plot("epochs_test_acc.png", "Test accuracy per epoch, --reduction exact (CNN, Fashion-MNIST, N = 4)",
             "epoch", "test accuracy (%)",
             [("4 processes (DDP mode)", "epochs_exact.csv", "epoch", "np4"),
              ("2 processes, 2,2", "epochs_exact.csv", "epoch", "np2"),
              ("1 process, 4", "epochs_exact.csv", "epoch", "np1"),
              ("rescaled 4 -> 2 -> 1 processes *", "epochs_exact.csv", "epoch", "chain")], markers=True)
    rep.md("The chain: one epoch on 4 processes (loader on the training thread), checkpoint, resume on 2 "
           "(2 loader threads), checkpoint, resume on 1 process with placement 4 (3 loader threads).\n")
    rep.md("| epoch | 4 processes | 2 processes | 1 process | rescale chain |")
    rep.md("| --- | --- | --- | --- | --- |")
    for r in rows:
        rep.md("| %d | %.2f %% | %.2f %% | %.2f %% | %.2f %% |" % tuple(r))
    spread = max(max(r[1:]) - min(r[1:]) for r in rows)
    rep.md("\nTraining is identical: the three placements have the same loss at every step (section 3), and "
           "all four end with the same parameters. "
           "The test accuracies %s: the evaluation is not part of the contract. It splits the test set "
           "over the job's processes (process p scores samples p, p + P, ...) in batches of up to 256, and "
           "the CPU convolution kernels round differently for different batch shapes, so a test image whose "
           "two best logits nearly tie can flip between placements.\n" % (
               "are equal at every epoch" if spread == 0 else
               "differ by up to %.2f pp (a few of the test images) in some epochs" % spread))
    same = chain_sha == data[("exact", "np4")][2]
    rep.md("\nFinal `params_sha256` of the chain: `%s`, %s the uninterrupted run's.\n" % (
        chain_sha[:16], "the same as" if same else "**different from**"))
    return same


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--tl-report", required=True)
    p.add_argument("--size", required=True, help="what size of run produced the report")
    p.add_argument("--torch", default="1.13")
    args = p.parse_args()
    try:
        with open(os.path.join(args.runs, "cnn-n4-ddp", "exact", "summary.json")) as f:
            args.torch = json.load(f)["torch"]
    except (OSError, KeyError, ValueError):
        pass
    rep = Report(args)
    rep.md("# Consistency report: tl against itself and against PyTorch DDP\n")
    rep.md("Regenerate: `bash bench/consistency/run.sh build docs/reports/consistency` (add `--full` "
           "for the large version). Size of this report: %s. Device: CPU (%s, %d cores, shared with "
           "other work); no GPU.\n" % (args.size, platform.machine(), os.cpu_count()))
    matrix_ok = matrix_section(rep, args.runs)
    ddp = ddp_section(rep, args.runs)
    data, epochs = epochs_section(rep, args.runs)
    chain_ok = longer_section(rep, args.runs, data, epochs)
    head = ["## Headline\n"]
    head.append("- Bit-equality matrix: %s." % ("every exact-reduction cell has its reference run's `params_sha256` (DDP mode, or the uninterrupted run)"
                                               if matrix_ok else "**a cell differs from its reference**"))
    for name, r in ddp.items():
        head.append("- %s, %d steps: tl and PyTorch DDP with exact averaging %s; stock DDP: %s." % (
            r["title"], r["steps"],
            "identical at every step and in the final `params_sha256`" if r["same_exact"] and r["exact_prefix"] == r["steps"]
            else "identical for the first %d steps, then apart (max relative loss difference %.2g)" % (
                r["exact_prefix"], r["max_exact"]),
            "identical too" if r["same_stock"] else "identical for %d step(s), max relative loss difference %.2g" % (
                r["stock_prefix"], r["max_stock"])))
    fp32 = [data[("fp32", k)][1][epochs[-1]]["test_acc"] for k in ("np4", "np2", "np1")]
    head.append("- fp32 reduction: after %d epochs the three placements' test accuracies span %.2f pp; "
                "exact: identical training (every step's loss, final `params_sha256`) in every placement and "
                "through the rescale chain (%s)." % (
                    len(epochs), 100 * (max(fp32) - min(fp32)), "yes" if chain_ok else "**no**"))
    rep.lines[2:2] = head + [""]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write("\n".join(rep.lines) + "\n")
    print("\n".join(head))
    return 0 if matrix_ok and chain_ok else 1


if __name__ == "__main__":
    sys.exit(main())

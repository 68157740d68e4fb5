#!/usr/bin/python3
"""Compares a tl run with a ddp_reference.py run, step by step.

  compare_runs.py TL_OUTPUT_DIR DDP_OUT_DIR STEPS [--label TEXT]

TL_OUTPUT_DIR holds tl-launch's metrics.jsonl and summary.json; DDP_OUT_DIR ddp_reference.py's
steps.csv and summary.json (one averaging mode's folder). Exit 0 when both have exactly steps
1..STEPS, every step's loss is the same float and the final params_sha256 is equal; else 1,
naming the first step that differs. Prints one line either way.
"""
import csv
import json
import os
import sys


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--label"):
        raise SystemExit("usage: compare_runs.py TL_OUTPUT_DIR DDP_OUT_DIR STEPS [--label TEXT]")
    tl_run, ddp_run, steps = argv[0], argv[1], int(argv[2])
    label = argv[4] if len(argv) == 5 else "tl vs DDP"
    for path in (os.path.join(tl_run, "metrics.jsonl"), os.path.join(tl_run, "summary.json"),
                 os.path.join(ddp_run, "steps.csv"), os.path.join(ddp_run, "summary.json")):
        if not os.path.isfile(path):
            raise SystemExit("compare_runs.py: error: '%s' is missing" % path)
    with open(os.path.join(tl_run, "metrics.jsonl")) as f:
        records = [r for r in map(json.loads, f) if r.get("type") == "step"]
    tl = {r["step"]: r["loss"] for r in records}
    with open(os.path.join(ddp_run, "steps.csv")) as f:
        rows = list(csv.DictReader(f))
    ddp = {int(r["step"]): float(r["loss"]) for r in rows}
    # The learning rate and the norm before clipping, where DDP recorded them: the same doubles.
    for key in ("lr", "grad_norm"):
        theirs = {int(r["step"]): float(r[key]) for r in rows if r.get(key) not in (None, "", "nan")}
        ours = {r["step"]: r.get(key) for r in records}
        bad = [s for s in sorted(theirs) if ours.get(s) != theirs[s]]
        if bad:
            print("%s: DIFFERENT: %s differs from step %d: tl %r, DDP %r"
                  % (label, key, bad[0], ours.get(bad[0]), theirs[bad[0]]))
            return 1
    want = list(range(1, steps + 1))
    if sorted(tl) != want or sorted(ddp) != want:
        print("%s: DIFFERENT: steps differ (want 1..%d): tl %s, DDP %s" % (label, steps, sorted(tl)[-3:], sorted(ddp)[-3:]))
        return 1
    diff = [s for s in want if tl[s] != ddp[s]]
    worst = max(abs(tl[s] - ddp[s]) / max(abs(tl[s]), 1e-300) for s in want)
    with open(os.path.join(tl_run, "summary.json")) as f:
        tl_hash = json.load(f)["params_sha256"]
    with open(os.path.join(ddp_run, "summary.json")) as f:
        ddp_hash = json.load(f)["params_sha256"]
    same = tl_hash == ddp_hash
    ok = not diff and same
    print("%s: %s: %d steps, losses %s (first loss %r, last %r), max relative loss difference %.3g, "
          "params_sha256 tl %s, DDP %s (%s)"
          % (label, "identical" if ok else "DIFFERENT", steps,
             "identical" if not diff else "differ from step %d" % diff[0], tl[1], tl[steps], worst,
             tl_hash, ddp_hash, "same" if same else "different"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

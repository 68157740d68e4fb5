#!/usr/bin/env python3
"""gpu_check.json from the stages bench/gpu_check.sh ran: WORK/stages/*.json (status, seconds) and
WORK/logs/NAME.log (each stage's output, parsed here for its figures), written to OUT.

    gpu_check_report.py OUT WORK

    bench/gpu_check_report.py OUT_DIR

Rewritten after every stage, so that whatever ran is there even if the run is cut short.
docs/guide/gpu.md says what each figure means."""
import json
import os
import re
import sys
import time

TITLES = {
    "env": "the machine: glibc/libstdc++ against the bundle, GPU, PyTorch",
    "unpack": "the bundle unpacked; the relocated Open MPI runs (mpirun -np 2 hostname)",
    "configure": "CMake against the machine's PyTorch (NCCL on for cuda)",
    "build": "tl-launch, tl-data, tl-ctl, tl-run, bench_context_switch, bench_own_model",
    "a": "consistency matrix (gpu_consistency.sh matrix): one params_sha256 across placements and rescales",
    "b": "NCCL with one process: ResNet-18, 4 ESTs, --gpu-comm nccl vs mpi",
    "h": "tl (CNN, 4 ESTs, 3,1 on 2 processes, exact reduction) vs real PyTorch DDP (4 ranks, gloo) on the device: fixed-point hook asserted, exact averaging recorded",
    "c": "--overlap on/off, exact and fp32: the same bits (gpu_consistency.sh overlap)",
    "d": "ResNet-18 (batch 32) and GPT step: tl vs PyTorch on the same .pt (bench_own_model; 8 steps on a GPU)",
    "e": "EST context-switch overhead (bench_context_switch) and the exact reduction's share of a ResNet-18 step",
    "f": "in-place shrink and grow, processes sharing the device (gpu_consistency.sh inplace, --gpu-comm mpi)",
    "g": "SIGKILL recovery under tl-run vs cold restart (bench_recovery.sh)",
}


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def consistency_rows(log):
    """Rows of gpu_consistency.sh's table: model, run, params_sha256 (16 hex), images/s, verdict."""
    rows = []
    for line in log.splitlines():
        m = re.match(r"^(cnn|resnet20)\s+(.+?)\s+([0-9a-f]{16}|failed)\s+(\S+)\s+(.*)$", line)
        if m:
            ips = m.group(4)
            rows.append({"model": m.group(1), "run": m.group(2).strip(), "params_sha256_16": m.group(3),
                         "images_per_s": float(ips) if re.match(r"^[0-9.]+$", ips) else None,
                         "verdict": m.group(5).strip()})
    return rows


def overlap_rows(log):
    rows = []
    for line in log.splitlines():
        m = re.match(r"^resnet18 (exact|fp32)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*?)\s{2,}(\S.*)$", line)
        if m:
            rows.append({"reduction": m.group(1), "off_ms_per_step": float(m.group(2)),
                         "on_ms_per_step": float(m.group(3)), "on_over_off": float(m.group(4)),
                         "on_over_off_range": m.group(5), "buckets_during_backward_on": m.group(6).strip(),
                         "bits_on_vs_off": m.group(7).strip()})
    return rows


def figures(name, log, meta):
    f = {}
    if name == "env":
        for line in log.splitlines():
            if line.startswith("ENV "):
                f = json.loads(line[4:])
    elif name == "unpack":
        m = re.search(r"mpirun \(Open MPI\) (\S+)", log)
        f["open_mpi"] = m.group(1) if m else None
    elif name == "configure":
        f["nccl"] = "ON" if "NCCL backend ON" in log else "OFF"
        m = re.search(r"CUDA toolkit: (.*)", log)
        if m:
            f["cuda_nccl_hints"] = m.group(1)
    elif name == "build":
        m = re.findall(r"^\[(\d+)/(\d+)\]", log, re.M)
        if m:
            f["steps_done"], f["steps_total"] = int(m[-1][0]), int(m[-1][1])
        if meta["status"] != "passed":
            errs = [l for l in log.splitlines() if re.search(r"error|Error|FAILED|undefined reference", l)]
            f["errors_first_200_lines"] = errs[:200]
            f["full_log"] = "logs/build.log"
    elif name in ("a", "f"):
        rows = consistency_rows(log)
        f["rows"] = rows
        f["exact_runs"] = sum(1 for r in rows if "fp32" not in r["run"] and not r["run"].startswith("CPU"))
        f["exact_mismatches"] = [r["model"] + ": " + r["run"] for r in rows
                                 if r["verdict"].startswith(("DIFFERS", "FAILED"))]
    elif name == "c":
        f["rows"] = overlap_rows(log)
    elif name == "b":
        for line in log.splitlines():
            m = re.match(r"RESULT (\S+) (\S+) (\S+)", line)
            if m:
                f[m.group(1)] = {"params_sha256": m.group(2), "images_per_s": float(m.group(3))}
            if line.startswith("VERDICT "):
                f["verdict"] = line[8:]
    elif name == "h":
        # compare_runs.py's lines, one per DDP averaging: "DDP exact (recorded)|DDP fixed (asserted):
        # identical|DIFFERENT: N steps, losses identical|differ from step K (first loss A, last B),
        # max relative loss difference R, params_sha256 tl X, DDP Y (same|different)"
        for m in re.finditer(r"^DDP (exact|fixed) \(\w+\): (identical|DIFFERENT): (\d+) steps, losses"
                             r" (identical|differ from step (\d+)) \(first loss (\S+), last (\S+)\),"
                             r" max relative loss difference (\S+), params_sha256 tl (\S+), DDP (\S+)"
                             r" \((same|different)\)$", log, re.M):
            f[m.group(1)] = {"verdict": "same" if m.group(2) == "identical" else "DIFFERS",
                             "steps": int(m.group(3)), "losses_identical": m.group(5) is None,
                             "first_differing_step": int(m.group(5)) if m.group(5) else None,
                             "first_loss": float(m.group(6)), "last_loss": float(m.group(7)),
                             "max_relative_loss_difference": float(m.group(8)),
                             "params_sha256_tl": m.group(9), "params_sha256_ddp": m.group(10),
                             "same_params_sha256": m.group(11) == "same"}
        for m in re.finditer(r"^DDP (exact|fixed) \(\w+\): DIFFERENT: steps differ (.*)$", log, re.M):
            f[m.group(1)] = {"verdict": "DIFFERS", "steps_differ": m.group(2)}
        if "fixed" in f:
            f["verdict"] = f["fixed"]["verdict"]  # the pass condition
        m = re.search(r"^SECONDS init (\S+) tl (\S+) ddp (\S+)$", log, re.M)
        if m:
            f["seconds"] = {"tl_init": float(m.group(1)), "tl_run": float(m.group(2)), "ddp_run": float(m.group(3))}
        m = re.search(r"^DDP_SUMMARY (\{.*\})$", log, re.M)
        if m:
            ddp = json.loads(m.group(1))
            f["ddp_torch"] = ddp.get("torch")
            if "cuda" in ddp:
                f["ddp_cuda_settings"] = ddp["cuda"]
            # per step: mean-gradient elements where tl's fixed-point rounding parts from exact
            # averaging's (the exact comparison can part only from the first step with a count > 0)
            f["elements_unlike_exact_per_step"] = ddp.get("elements_unlike_exact_per_step")
    elif name == "d":
        f["table"] = [l for l in log.splitlines() if re.match(r"^\s*(cnn|resnet18|gpt|model|ratio|tl|PyTorch|built-in)", l)
                      or "x PyTorch" in l or "target" in l][:60]
        # "  resnet18: tl / PyTorch eager nn.Module       0.904  met": the ratios against the targets
        f["ratios"] = {m.group(1).strip(): {"ratio": float(m.group(2)), "target_1_05": m.group(3)}
                       for m in re.finditer(r"^  ((?:cnn|resnet18|gpt): [^\n]*?)\s+([0-9.]+)\s+(met|MISSED)\s*$", log, re.M)}
        m = re.search(r"^OPTIMIZER_BITS (\{.*\})$", log, re.M)
        if m:
            f["optimizer_bits"] = json.loads(m.group(1))
        # per traced step of ResNet-18, tl's and PyTorch eager's: wall ms, ATen ops, kernels,
        # host waits for the device, device busy ms (trace_summary.py; traces in logs/d-trace/)
        m = re.search(r"^TRACE_SUMMARY (\{.*\})$", log, re.M)
        if m:
            f["trace_steps"] = json.loads(m.group(1))
    elif name == "e":
        rows = []
        for line in log.splitlines():
            m = re.match(r"^(cnn|resnet20)\s+(\d+)\s+(\S+)", line)
            if m:
                rows.append({"model": m.group(1), "k": int(m.group(2)), "line": line.strip()})
            m = re.search(r"mean of the medians ([+-][0-9.]+)%, worst median ([+-][0-9.]+)%", line)
            if m:
                f["context_switch_mean_overhead_pct"] = float(m.group(1))
                f["context_switch_worst_overhead_pct"] = float(m.group(2))
            m = re.match(r"SHARE (\S+) comm_s (\S+) total_s (\S+) steps (\d+) share (\S+) ms_per_step (\S+)"
                         r" median_step_ms (\S+)", line)
            if m:
                f["reduction_" + m.group(1)] = {"comm_s": float(m.group(2)), "total_s": float(m.group(3)),
                                                "steps": int(m.group(4)), "comm_share_of_step": float(m.group(5)),
                                                "ms_per_step": float(m.group(6)),
                                                "median_step_ms": float(m.group(7))}
        f["context_switch_rows"] = rows
        ex, fp = f.get("reduction_exact"), f.get("reduction_fp32")
        if ex and fp and ex["median_step_ms"] > 0:
            # What the exact reduction adds to a step over the fp32 one, as a share of the exact step.
            f["exact_extra_share_of_step"] = round(1 - fp["median_step_ms"] / ex["median_step_ms"], 4)
    elif name == "g":
        for line in log.splitlines():
            m = re.match(r"^\| (tl-run \(copy of the last boundary\)|cold restart from checkpoint)\s*\|\s*(\S+)\s*\|\s*(\S+)\s*\|\s*(\S+)\s*\|\s*(\S+)", line)
            if m:
                f["tl_run" if m.group(1).startswith("tl-run") else "cold_restart"] = {
                    "kill_to_next_step_s": float(m.group(2)), "kill_to_progress_regained_s": float(m.group(3)),
                    "completed_steps_recomputed": int(m.group(4)), "step_s_before_kill": float(m.group(5))}
            m = re.match(r"params_sha256: tl-run (\S+), cold restart (\S+) \((\S+)\)", line)
            if m:
                f["params_sha256_tl_run"], f["params_sha256_cold"], f["same_bits"] = m.group(1), m.group(2), m.group(3)
    return f


def main():
    out, work = sys.argv[1], sys.argv[2]
    order = read(os.path.join(work, "stages", "order")).split()
    t0 = float(os.environ.get("TL_GPU_CHECK_T0", time.time()))
    stages = {}
    for name in order:
        try:
            meta = json.load(open(os.path.join(work, "stages", name + ".json")))
        except (OSError, ValueError):
            continue
        log = read(os.path.join(work, "logs", name + ".log"))
        entry = {"what": TITLES.get(name, name), "status": meta["status"], "seconds": meta["seconds"],
                 "limit_s": meta["limit_s"]}
        if meta.get("reason"):
            entry["reason"] = meta["reason"]
        if meta["status"] != "skipped":
            entry["rc"] = meta["rc"]
            entry["log"] = "logs/%s.log in logs.tar.gz" % name
            try:
                entry["figures"] = figures(name, log, meta)
            except Exception as e:  # a figure that cannot be read must not hide the others
                entry["figures"] = {"error": "could not parse logs/%s.log: %r" % (name, e)}
            if meta["status"] != "passed":
                entry["log_tail"] = log.splitlines()[-40:]
        stages[name] = entry
    ran = [s for s in stages.values() if s["status"] != "skipped"]
    verdict = "passed" if ran and all(s["status"] == "passed" for s in ran) else "failed"
    doc = {"check": "bench/gpu_check.sh", "device": os.environ.get("TL_GPU_CHECK_DEVICE", "cuda"),
           "budget_s": int(os.environ.get("TL_GPU_CHECK_BUDGET_S", "540")),
           "elapsed_s": round(time.time() - t0, 1), "verdict": verdict,
           "stages": stages}
    tmp = os.path.join(out, "gpu_check.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, os.path.join(out, "gpu_check.json"))


if __name__ == "__main__":
    main()

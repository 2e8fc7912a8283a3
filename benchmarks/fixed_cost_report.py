"""fixed_cost.sh's report: per model, the median training seconds of one WIKI epoch with the
before and after builds (alternating pairs in one run), op calls per step, and the whole
step's share of this machine's SGEMM peak by the exact GEMM FLOPs of --plan; into
fixed_cost.json and fixed_cost.md in --out-dir.

    fixed_cost_report.py --work DIR --models tgn,jodie,apan --pairs N --gemm JSON
                         --before DIR --after DIR --out-dir DIR [--wait-policy P]
"""
import argparse
import json
import os
import statistics

from bench_metrics import commit, cpu_model, fixed, run_metrics, utc_now, write_json
from speedup_report import sgemm_peak

SIDES = ("before", "after")


def plan_flops(path):
    """The GEMM FLOPs of one training epoch from a --plan JSON line, or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        for line in f:
            if line.startswith('{"plan"'):
                return json.loads(line)["plan"]["flops"]["total"]
    return None


def side_figures(runs):
    """Medians over a side's run folders: training seconds and op calls per step."""
    seconds, calls = [], []
    for run in runs:
        epochs, _ = run_metrics(run)
        if not epochs:
            continue
        seconds.append(epochs[0]["train_seconds"])
        calls.append(epochs[0].get("calls", {}).get("op_calls_per_step"))
    known_calls = [c for c in calls if c is not None]
    return {"runs": len(seconds), "train_seconds": seconds,
            "median_train_seconds": statistics.median(seconds) if seconds else None,
            "op_calls_per_step": statistics.median(known_calls) if known_calls else None}


def model_row(work, model, pairs, peak):
    """One model's figures for both builds, their ratios and shares of the SGEMM peak."""
    flops = plan_flops(os.path.join(work, f"{model}-plan.json"))
    row = {"model": model, "gemm_flops_per_epoch": flops}
    for side in SIDES:
        fig = side_figures([os.path.join(work, f"{model}-{side}-{i}") for i in range(pairs)])
        s = fig["median_train_seconds"]
        fig["share_of_sgemm_peak"] = flops / s / peak if flops and s and peak else None
        row[side] = fig
    b, a = row["before"], row["after"]
    row["epoch_time_ratio"] = (a["median_train_seconds"] / b["median_train_seconds"]
                               if a["median_train_seconds"] and b["median_train_seconds"] else None)
    row["op_calls_ratio"] = (b["op_calls_per_step"] / a["op_calls_per_step"]
                             if a["op_calls_per_step"] and b["op_calls_per_step"] else None)
    return row


def percent(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def markdown(rows, peak, peak_source, wait_policy="default"):
    head = ("| model | op calls/step before | after | before/after | epoch s before (median) "
            "| after | after/before | % SGEMM peak before | after |")
    lines = [f"SGEMM peak: {fixed(peak / 1e9 if peak else None, 1)} GFLOP/s ({peak_source}). "
             f"OMP_WAIT_POLICY: {wait_policy}.", "", head, "|" + "---|" * 9]
    for r in rows:
        b, a = r["before"], r["after"]
        lines.append(f"| {r['model']} | {fixed(b['op_calls_per_step'], 1)} "
                     f"| {fixed(a['op_calls_per_step'], 1)} | {fixed(r['op_calls_ratio'], 2)}x "
                     f"| {fixed(b['median_train_seconds'], 2)} "
                     f"| {fixed(a['median_train_seconds'], 2)} | {fixed(r['epoch_time_ratio'], 3)} "
                     f"| {percent(b['share_of_sgemm_peak'])} | {percent(a['share_of_sgemm_peak'])} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("--work", "--models", "--gemm", "--before", "--after", "--out-dir"):
        p.add_argument(flag, required=flag != "--gemm", default="")
    p.add_argument("--pairs", type=int, required=True)
    p.add_argument("--wait-policy", default="default", choices=("default", "active", "passive"))
    a = p.parse_args(argv)
    peak, peak_source = sgemm_peak(a.gemm, os.path.dirname(os.path.dirname(__file__)))
    rows = [model_row(a.work, m, a.pairs, peak) for m in a.models.split(",")]
    md = markdown(rows, peak, peak_source, a.wait_policy)
    result = {"commit": commit(), "generated": utc_now(), "cpu": cpu_model(),
              "cores": os.cpu_count(), "before": a.before, "after": a.after, "pairs": a.pairs,
              "omp_wait_policy": a.wait_policy,
              "sgemm_peak_flops": peak, "sgemm_peak_source": peak_source, "models": rows}
    os.makedirs(a.out_dir, exist_ok=True)
    write_json(os.path.join(a.out_dir, "fixed_cost.json"), result, "fixed-cost")
    with open(os.path.join(a.out_dir, "fixed_cost.md"), "w") as f:
        f.write(md)
    print(md, end="")


if __name__ == "__main__":
    main()

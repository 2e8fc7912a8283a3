"""benchmarks/lr_study.sh's report: the learning-rate rules at enlarged batches.

    python3 lr_study_report.py OUT MANIFEST EPOCHS MAX_EVENTS CORES WARMUP

Per run: the best validation per-batch-mean AP, the test AP at that epoch and the final
loss. Per (model, dataset, batch, rule, warm-up): means and sds over the seeds. Per (model,
dataset, batch): the cell chosen on mean validation AP (never test AP), its paired gain over
`none` without warm-up, and batch 600's figures beside it.
"""
import statistics
import sys

from bench_metrics import (commit, cpu_model, fixed, known_mean, manifest_lines, run_metrics,
                           utc_now, write_json)

KEYS = ("best_val_ap", "test_ap", "test_new_ap", "final_loss")


def run_entry(fields):
    """One manifest line -> one run's entry."""
    model, dataset, batch, rule, warmup, epochs, seed, run, rc = fields
    e = {"model": model, "dataset": dataset, "batch_size": int(batch), "lr_scaling": rule,
         "warmup_steps": int(warmup), "epochs": int(epochs), "seed": int(seed), "run_dir": run,
         "exit_code": int(rc)}
    epoch_lines, tests = run_metrics(run)
    if not epoch_lines or not tests:
        return e
    val = [(l.get("val") or {}).get("ap_batch_mean") for l in epoch_lines]
    t = tests[-1]
    best = t.get("best_epoch")
    e.update({"val_ap": val,
              "best_val_ap": val[best - 1] if best and best <= len(val) else None,
              "test_ap": (t.get("test") or {}).get("ap_batch_mean"),
              "test_new_ap": (t.get("test_new_nodes") or {}).get("ap_batch_mean"),
              "final_loss": epoch_lines[-1]["loss"]})
    return e


def spread(values):
    v = [x for x in values if x is not None]
    return statistics.stdev(v) if len(v) > 1 else None


def cell_summary(runs):
    c = {k: known_mean(r.get(k) for r in runs) for k in KEYS}
    c.update({k + "_sd": spread(r.get(k) for r in runs) for k in ("best_val_ap", "test_ap")})
    c["seeds"] = sum(r.get("test_ap") is not None for r in runs)
    return c


def paired_gain(a, b, key):
    """Runs `a` minus runs `b` in `key`, seed by seed."""
    bs = {r["seed"]: r.get(key) for r in b}
    d = [r[key] - bs[r["seed"]] for r in a
         if r.get(key) is not None and bs.get(r["seed"]) is not None]
    return {"mean": known_mean(d), "sd": spread(d), "n": len(d), "gains": sum(x > 0 for x in d)}


def cell_name(rule, warmup):
    return rule if warmup == 0 else f"{rule}+w{warmup}"


def summarise(runs):
    """{(model, dataset, batch): {cell name: runs}} -> per-group cells and the choice."""
    groups = {}
    for r in runs:
        key = (r["model"], r["dataset"], r["batch_size"])
        groups.setdefault(key, {}).setdefault(cell_name(r["lr_scaling"], r["warmup_steps"]),
                                              []).append(r)
    out = []
    for (model, dataset, batch), cells in sorted(groups.items()):
        g = {"model": model, "dataset": dataset, "batch_size": batch,
             "cells": {name: cell_summary(rs) for name, rs in cells.items()}}
        scored = {n: c["best_val_ap"] for n, c in g["cells"].items() if c["best_val_ap"] is not None}
        if batch != 600 and scored:
            chosen = max(scored, key=scored.get)
            g["chosen"] = chosen
            if "none" in cells:
                g["chosen_gain"] = {k: paired_gain(cells[chosen], cells["none"], k)
                                    for k in ("best_val_ap", "test_ap")}
        out.append(g)
    return out


def table(groups):
    lines = ["| model | data | batch | rule | seeds | best val AP (sd) | test AP (sd) | final loss |",
             "|---|---|---|---|---|---|---|---|"]
    for g in groups:
        for name, c in g["cells"].items():
            mark = " **chosen**" if g.get("chosen") == name else ""
            lines.append(
                f"| {g['model']} | {g['dataset']} | {g['batch_size']} | {name}{mark} | {c['seeds']} "
                f"| {fixed(c['best_val_ap'], 4)} ({fixed(c['best_val_ap_sd'], 4)}) "
                f"| {fixed(c['test_ap'], 4)} ({fixed(c['test_ap_sd'], 4)}) "
                f"| {fixed(c['final_loss'], 4)} |")
    return "\n".join(lines)


def gains_table(groups):
    lines = ["| model | data | batch | chosen | val AP gain over none (sd) | test AP gain (sd) "
             "| seeds gaining (test) |", "|---|---|---|---|---|---|---|"]
    for g in groups:
        gain = g.get("chosen_gain")
        if not gain:
            continue
        v, t = gain["best_val_ap"], gain["test_ap"]
        lines.append(f"| {g['model']} | {g['dataset']} | {g['batch_size']} | {g['chosen']} "
                     f"| {fixed(v['mean'], 4)} ({fixed(v['sd'], 4)}) "
                     f"| {fixed(t['mean'], 4)} ({fixed(t['sd'], 4)}) | {t['gains']} of {t['n']} |")
    return "\n".join(lines)


def main(argv):
    out, manifest = argv[0], argv[1]
    epochs, max_events, cores, warmup = map(int, argv[2:6])
    runs = [run_entry(f) for f in manifest_lines(manifest)]
    groups = summarise(runs)
    result = {"benchmark": "lr_study", "commit": commit(), "generated": utc_now(),
              "cpu": cpu_model(), "cores": cores, "epochs": epochs, "max_events": max_events,
              "warmup_steps": warmup, "groups": groups, "runs": runs}
    write_json(out, result, "lr_study")
    print(table(groups))
    print()
    print(gains_table(groups))
    return 1 if any(r["exit_code"] != 0 for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

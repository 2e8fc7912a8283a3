"""Time to single-device accuracy, the speed-up suite's headline (speedup_report.py).

The target of a (dataset, model): the mean over seeds of one device's best validation
per-batch-mean AP within its first E_ref epochs (P = 1 `strict`, batch 600), minus 0.005.
Each run reaches it at the first epoch whose validation AP is at least the target: its
epochs, optimiser steps and training seconds there (measured where the ranks fit the cores),
and the same epochs times the cost model's epoch on the CPU profile (for oversubscribed P)
and on the GPU profile (the headline). Seconds are medians over the seeds that reached it.
"""
import statistics

from bench_metrics import fixed, known_mean

E_REF = {"tgn": 5, "jodie": 10, "apan": 10}  # the reference's epochs per model
MARGIN = 0.005
REFERENCE = "strict"  # at P = 1: one device at batch 600
HEADLINE = ("strict", "strict-600", "depbloom", "depbloom-op")


def e_ref(model, epochs):
    """The reference's epochs: the model's E_ref, or the epochs run when fewer."""
    return min(E_REF.get(model, epochs), epochs)


def targets(rows):
    """{(dataset, model): {"target", "reference_best_val", "seeds", "e_ref"}} from the P = 1
    reference runs that finished."""
    best, span = {}, {}
    for r in rows:
        if r["ranks"] == 1 and r["config"] == REFERENCE and r.get("curve"):
            n = e_ref(r["model"], len(r["curve"]))
            vals = [c["val_ap"] for c in r["curve"][:n] if c.get("val_ap") is not None]
            if vals:
                best.setdefault((r["dataset"], r["model"]), []).append(max(vals))
                span[(r["dataset"], r["model"])] = n
    return {k: {"target": statistics.fmean(v) - MARGIN, "reference_best_val": statistics.fmean(v),
                "seeds": len(v), "e_ref": span[k]} for k, v in best.items()}


def reach(row, target):
    """The run's figures at the first epoch reaching `target` (None where it never does)."""
    for i, c in enumerate(row.get("curve") or []):
        if c.get("val_ap") is not None and c["val_ap"] >= target:
            epochs = i + 1
            gpu = (row.get("modelled") or {}).get("epoch_seconds")
            cpu = (row.get("modelled_cpu") or {}).get("epoch_seconds")
            return {"epochs": epochs, "steps": c.get("steps"),
                    "measured_seconds": None if row["oversubscribed"] else c.get("train_seconds"),
                    "modelled_cpu_seconds": cpu * epochs if cpu else None,
                    "modelled_gpu_seconds": gpu * epochs if gpu else None}
    return None


def median(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def cell(runs, target):
    """One (dataset, model, P, config) over its seeds."""
    reached = [x for x in (reach(r, target) for r in runs) if x]
    best_val = [max((c["val_ap"] for c in r["curve"] if c.get("val_ap") is not None), default=None)
                for r in runs]
    c = {"seeds": len(runs), "reached": len(reached),
         "epochs_to_target": median(x["epochs"] for x in reached),
         "steps_to_target": median(x["steps"] for x in reached),
         "best_val_ap": known_mean(best_val),
         "test_ap_at_best_val": known_mean(r.get("test_ap_batch_mean") for r in runs),
         "events_per_s": known_mean(r.get("events_per_s") for r in runs)}
    for k in ("measured_seconds", "modelled_cpu_seconds", "modelled_gpu_seconds"):
        c[k] = median(x[k] for x in reached)
    # The CPU column: measured where the ranks fit the cores, else the CPU profile's.
    over = runs[0]["oversubscribed"]
    c["cpu_seconds"] = c["modelled_cpu_seconds"] if over else c["measured_seconds"]
    c["cpu_seconds_label"] = "modelled" if over else "measured"
    return c


def ratio(a, b):
    return a / b if a and b else None


def headline(rows):
    """The time-to-target table: one entry per (dataset, model, P, config) that ran."""
    goals = targets(rows)
    groups = {}
    for r in rows:
        if r.get("curve"):
            groups.setdefault((r["dataset"], r["model"], r["ranks"], r["config"]), []).append(r)
    out = []
    for (d, m, p, c), runs in groups.items():
        goal = goals.get((d, m))
        e = {"dataset": d, "model": m, "ranks": p, "config": c,
             "batch_size": runs[0].get("batch_size"), "target": goal and goal["target"]}
        if goal:
            e.update(cell(runs, goal["target"]))
        out.append(e)
    index = {(e["dataset"], e["model"], e["ranks"], e["config"]): e for e in out}
    for e in out:
        same_p = index.get((e["dataset"], e["model"], e["ranks"], "strict"), {})
        one = index.get((e["dataset"], e["model"], 1, REFERENCE), {})
        for k in ("cpu_seconds", "modelled_gpu_seconds"):
            e[f"{k}_speedup_vs_strict"] = ratio(same_p.get(k), e.get(k))
            e[f"{k}_speedup_vs_one_device"] = ratio(one.get(k), e.get(k))
    order = lambda e: (e["dataset"], e["model"], e["ranks"],
                       HEADLINE.index(e["config"]) if e["config"] in HEADLINE else len(HEADLINE))
    return sorted(out, key=order), goals


def grid_cell(config):
    """(k, m) of a grid configuration "op-kK-mM", else None."""
    if not config.startswith("op-k"):
        return None
    k, m = config[4:].split("-m")
    return int(k), int(m)


def choose(entries):
    """Per (dataset, model): the grid cell with the shortest modelled GPU time to target
    among those whose mean best validation AP reaches the target (ties: the smaller k, then
    the smaller m), with the grid it was chosen from; {} without grid entries."""
    grids = {}
    for e in entries:
        if grid_cell(e["config"]) and e.get("target") is not None:
            grids.setdefault((e["dataset"], e["model"]), []).append(e)
    out = {}
    for key, cells in grids.items():
        ok = [e for e in cells if e["best_val_ap"] is not None and e["best_val_ap"] >= e["target"]
              and e.get("modelled_gpu_seconds") is not None]
        best = min(ok, key=lambda e: (e["modelled_gpu_seconds"], grid_cell(e["config"])),
                   default=None)
        out[key] = {"chosen": best and grid_cell(best["config"]), "cells": cells}
    return out


def grid_markdown(chosen):
    lines = []
    for (d, m), g in sorted(chosen.items()):
        pick = g["chosen"]
        lines += ["", f"{d}, {m}: chosen " + (f"k = {pick[0]}, m = {pick[1]}" if pick else
                                               "none (no cell's mean best validation AP reaches the target)"),
                  "", "| k | m | P | mean best val AP | target | reached | epochs to target "
                  "| GPU s to target (modelled) | test AP at best val |", "|---|---|---|---|---|---|---|---|---|"]
        for e in sorted(g["cells"], key=lambda e: grid_cell(e["config"])):
            k, mm = grid_cell(e["config"])
            lines.append(f"| {k} | {mm} | {e['ranks']} | {fixed(e['best_val_ap'], 4)} | {e['target']:.4f} "
                         f"| {e['reached']} of {e['seeds']} | {fixed(e['epochs_to_target'], 1)} "
                         f"| {fixed(e['modelled_gpu_seconds'], 3)} | {fixed(e['test_ap_at_best_val'], 4)} |")
    return "\n".join(lines) + "\n"


def markdown(entries, goals, head):
    lines = [f"Target: one device's (P = 1 `strict`, batch 600) mean best validation per-batch AP "
             f"over its first E_ref epochs (TGN 5, JODIE 10, APAN 10, or the epochs run when fewer), "
             f"minus {MARGIN}; every configuration trains {head['epochs']} epochs, no early stop. Seconds: medians over the seeds that reached it; CPU "
             f"seconds measured on this machine where P <= {head['cores']} cores, else modelled "
             f"(cpu-here); GPU seconds modelled ({head['profile']}).", ""]
    for (d, m), g in sorted(goals.items()):
        lines.append(f"- {d}, {m}: target {g['target']:.4f} (reference {g['reference_best_val']:.4f} "
                     f"over {g['seeds']} seed(s), {g['e_ref']} epochs)")
    lines += ["", "| dataset | model | P | config | batch | reached | epochs to target "
              "| steps to target | CPU s to target | x strict (CPU) | x one device (CPU) "
              "| GPU s to target (modelled) | x strict (GPU) | x one device (GPU) "
              "| test AP at best val | best val AP | events/s |", "|" + "---|" * 17]
    for e in entries:
        if e.get("target") is None:
            lines.append(f"| {e['dataset']} | {e['model']} | {e['ranks']} | {e['config']} "
                         f"| {e['batch_size']} | no reference run |" + " |" * 11)
            continue
        never = e["reached"] == 0
        cpu = ("never" if never else f"{fixed(e['cpu_seconds'], 1)} ({e['cpu_seconds_label']})")
        lines.append(
            f"| {e['dataset']} | {e['model']} | {e['ranks']} | {e['config']} | {e['batch_size']} "
            f"| {e['reached']} of {e['seeds']} | {'never' if never else fixed(e['epochs_to_target'], 1)} "
            f"| {fixed(e['steps_to_target'], 0)} | {cpu} "
            f"| {fixed(e['cpu_seconds_speedup_vs_strict'], 2)} "
            f"| {fixed(e['cpu_seconds_speedup_vs_one_device'], 2)} "
            f"| {'never' if never else fixed(e['modelled_gpu_seconds'], 3)} "
            f"| {fixed(e['modelled_gpu_seconds_speedup_vs_strict'], 2)} "
            f"| {fixed(e['modelled_gpu_seconds_speedup_vs_one_device'], 2)} "
            f"| {fixed(e['test_ap_at_best_val'], 4)} | {fixed(e['best_val_ap'], 4)} "
            f"| {fixed(e['events_per_s'], 0)} |")
    lines += ["", "never: no seed reached the target in the epochs run (its best validation AP is "
              "given). x strict: `strict` at P x 600 at the same P over this configuration; "
              "x one device: P = 1 `strict` over this configuration."]
    return "\n".join(lines) + "\n"


def per_run(rows, goals):
    """Each run's own figures against its (dataset, model)'s target, for the CSV."""
    for r in rows:
        goal = goals.get((r["dataset"], r["model"]))
        hit = reach(r, goal["target"]) if goal and r.get("curve") else None
        r["target"] = goal["target"] if goal else None
        r["epochs_to_target"] = hit["epochs"] if hit else None
        r["steps_to_target"] = hit["steps"] if hit else None
        r["seconds_to_target"] = hit["measured_seconds"] if hit else None


def same(got, want):
    """A CSV cell (a string, "" for none) against a recomputed value."""
    if not got or want is None:
        return not got and want is None
    return abs(float(got) - float(want)) <= 1e-12 * max(1.0, abs(float(want)))


def check(csv_rows, curve_of):
    """speedup.csv's time-to-target cells against the runs' metrics.jsonl: the targets from
    the reference runs, then each run's epochs, steps and seconds to its target.
    `curve_of(run_dir)` reads a run's curve. Returns the mismatches."""
    rows = [{"dataset": r["dataset"], "model": r["model"], "ranks": int(r["ranks"]),
             "config": r["config"], "oversubscribed": r["oversubscribed"] == "True",
             "curve": curve_of(r["run_dir"]), "csv": r}
            for r in csv_rows if r["status"] == "exit 0"]
    goals = targets(rows)
    per_run(rows, goals)
    bad = []
    for x in rows:
        where = f"{x['dataset']} {x['model']} P={x['ranks']} {x['config']} seed {x['csv']['seed']}"
        for k in ("target", "epochs_to_target", "steps_to_target", "seconds_to_target"):
            if not same(x["csv"].get(k), x[k]):
                bad.append(f"{where}: {k} {x['csv'].get(k)!r} in the CSV, {x[k]!r} from metrics.jsonl")
    return bad

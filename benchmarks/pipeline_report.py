"""pipeline.sh's report: the runs its manifest lists (one line per run: dataset, ranks,
repetition, pipeline.enabled, run folder, exit code) into one JSON file (per dataset and
ranks, medians with the pipeline off and on and the speed ratio of each back-to-back
pair), and a Markdown table on stdout.

    pipeline_report.py OUT MANIFEST REPS MAX_EVENTS CORES
"""
import statistics
import sys

from bench_metrics import commit, fixed, manifest_lines, run_metrics, write_json

TIMES = ("train_seconds", "loop_s", "hidden_s", "deferred_share", "side_busy_s",
         "side_wait_s", "collective_wait_s")
NO_SLOWER = 0.97  # off time / on time at or above this: the pipeline is no slower


def median(v):
    return statistics.median(v) if v else None


def run_entry(run, rc):
    """One run: its first epoch's training time and critical_path figures."""
    epochs, _ = run_metrics(run)
    e = {"run_dir": run, "exit_code": int(rc)}
    if epochs:
        l = epochs[0]
        cp = l["critical_path"]
        e.update({"train_seconds": l["train_seconds"], "loop_s": cp["loop_s"],
                  "hidden_s": cp["hidden_s"], "deferred_share": cp["deferred_share"],
                  "side_busy_s": cp["busy_s"]["side"], "side_wait_s": cp["side_wait_s"],
                  "collective_wait_s": cp["collective_wait_s"], "rows": cp["rows"],
                  "val_ap": (l.get("val") or {}).get("ap")})
    return e


def read_runs(manifest):
    """{(dataset, ranks): {pipeline on: {repetition: run entry}}}"""
    runs = {}
    for dataset, p, rep, on, run, rc in manifest_lines(manifest):
        runs.setdefault((dataset, int(p)), {}).setdefault(on == "true", {})[int(rep)] = \
            run_entry(run, rc)
    return runs


def cell(dataset, p, by):
    """One (dataset, ranks) cell from its runs `by` (pipeline on -> repetition -> run)."""
    c = {"dataset": dataset, "ranks": p, "strategy": "depbloom" if p > 1 else "single-device"}
    for on, name in ((False, "off"), (True, "on")):
        rs = [r for r in by.get(on, {}).values() if "train_seconds" in r]
        c[name] = {k: median([r[k] for r in rs]) for k in TIMES}
        c[name]["runs"] = len(rs)
    off, on = by.get(False, {}), by.get(True, {})
    pairs = [off[k]["train_seconds"] / on[k]["train_seconds"] for k in off
             if k in on and "train_seconds" in off[k] and "train_seconds" in on[k]]
    c["speed_ratio_on_vs_off"] = {"median": median(pairs), "pairs": pairs,
                                  "no_slower": median(pairs) >= NO_SLOWER if pairs else None}
    c["runs"] = {name: [by.get(on, {})[k] for k in sorted(by.get(on, {}))]
                 for on, name in ((False, "off"), (True, "on"))}
    return c


def table(cells):
    """The Markdown table of the cells, as lines."""
    lines = ["| data | ranks | epoch off s | epoch on s | off/on | loop on s | hidden s "
             "| deferred share |", "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        lines.append(
            f"| {c['dataset']} | {c['ranks']} | {fixed(c['off']['train_seconds'], 1)} | "
            f"{fixed(c['on']['train_seconds'], 1)} | "
            f"{fixed(c['speed_ratio_on_vs_off']['median'], 3)} | "
            f"{fixed(c['on']['loop_s'], 1)} | {fixed(c['on']['hidden_s'], 3)} | "
            f"{fixed(c['on']['deferred_share'], 3)} |")
    return lines


def main(argv):
    out, manifest = argv[0:2]
    reps, max_events, cores = map(int, argv[2:5])
    cells = [cell(d, p, by) for (d, p), by in sorted(read_runs(manifest).items())]
    write_json(out, {"benchmark": "pipeline", "commit": commit(), "cores": cores, "reps": reps,
                     "max_events": max_events, "model": "tgn (configs/tgn-wiki.yaml)",
                     "cells": cells}, "pipeline")
    print("\n".join(table(cells)))


if __name__ == "__main__":
    main(sys.argv[1:])

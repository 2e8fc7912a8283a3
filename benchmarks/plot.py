#!/usr/bin/env python3
"""Plots of the speed-up suite (benchmarks/speedup.sh) and of single runs.

  benchmarks/plot.py [benchmarks/results/speedup.json] [-o DIR]
      time_to_target.png  time to one device's accuracy against P per configuration
                   (GPU modelled solid, CPU measured or modelled dashed)
      speedup.png  speed-up over strict at the same P, per dataset (measured solid,
                   modelled dashed)
      ap.png       test AP (per-batch mean) per configuration and P
      bytes.png    bytes exchanged per epoch (all collectives) per configuration and P
      stages.png   one training step's stages, stacked: strict, depbloom and depbloom-op,
                   measured and modelled
  benchmarks/plot.py runs/<dir> [-o FILE]
      loss and validation AP per epoch of any depbloom-train run (default runs/<dir>/curves.png)
Matplotlib with the Agg backend: no display is needed."""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)
import matplotlib.ticker  # noqa: E402

CONFIGS = ("strict", "strict-600", "depbloom", "depbloom-op")
DATASETS = ("wiki", "reddit", "wikitalk")
COLOURS = dict(zip(CONFIGS, ("#444444", "#1f77b4", "#2ca02c", "#d62728")))
DPI = 80
# A step's stages in the order they run (metrics.jsonl's stage_s holds them sorted by name).
STAGES = ("sample", "gather", "memory_update", "refine", "embed", "loss", "backward", "reduce",
          "optimise", "write_back")


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    print(f"[plot] wrote {path} ({os.path.getsize(path) // 1024} KB)", file=sys.stderr)


def panels(groups, title):
    """One axis per (dataset, model), side by side; returns (figure, {(dataset, model): axis})."""
    rank = lambda d: DATASETS.index(d) if d in DATASETS else len(DATASETS)
    keys = sorted({(g["dataset"], g["model"]) for g in groups}, key=lambda k: (rank(k[0]), k))
    fig, axes = plt.subplots(1, len(keys), figsize=(3.6 * len(keys) + 0.6, 3.2), squeeze=False)
    fig.suptitle(title, fontsize=10)
    for ax, (d, m) in zip(axes[0], keys):
        ax.set_title(f"{d}, {m}", fontsize=9)
        ax.tick_params(labelsize=8)
    return fig, dict(zip(keys, axes[0]))


def series(groups, d, m, config, key):
    pts = sorted((g["ranks"], g[key]) for g in groups
                 if (g["dataset"], g["model"], g["config"]) == (d, m, config) and g.get(key) is not None)
    return [p for p, _ in pts], [v for _, v in pts]


def plot_speedup(groups, path):
    fig, axes = panels(groups, "speed-up over strict at the same P (modelled: dashed)")
    for (d, m), ax in axes.items():
        for c in CONFIGS[1:]:
            x, y = series(groups, d, m, c, "speedup_vs_strict")
            if x:
                ax.plot(x, y, "o-", color=COLOURS[c], label=f"{c} (measured)", lw=1.2, ms=4)
            x, y = series(groups, d, m, c, "modelled_speedup_vs_strict")
            if x:
                ax.plot(x, y, "x--", color=COLOURS[c], label=f"{c} (modelled)", lw=1.0, ms=5)
        ax.axhline(1.0, color="#999999", lw=0.8)
        ax.set_xlabel("ranks P", fontsize=8)
        ax.set_xticks(sorted({g["ranks"] for g in groups}))
    first = next(iter(axes.values()))
    first.set_ylabel("strict epoch time / config's", fontsize=8)
    first.legend(fontsize=6, loc="best")
    save(fig, path)


def plot_time_to_target(entries, path):
    fig, axes = panels(entries, "time to one device's accuracy (GPU modelled: solid; CPU: dashed)")
    for (d, m), ax in axes.items():
        for c in CONFIGS:
            for key, style in (("modelled_gpu_seconds", "o-"), ("cpu_seconds", "x--")):
                x, y = series(entries, d, m, c, key)
                if x:
                    ax.plot(x, y, style, color=COLOURS[c], lw=1.2, ms=4,
                            label=f"{c} ({'GPU' if key.startswith('modelled') else 'CPU'})")
        ax.set_yscale("log")
        ax.set_xlabel("ranks P", fontsize=8)
        ax.set_xticks(sorted({e["ranks"] for e in entries}))
    first = next(iter(axes.values()))
    first.set_ylabel("seconds to target", fontsize=8)
    first.legend(fontsize=6, loc="best")
    save(fig, path)


def plot_bars(groups, key, ylabel, title, path, scale=1.0):
    fig, axes = panels(groups, title)
    ranks = sorted({g["ranks"] for g in groups})
    width = 0.8 / len(CONFIGS)
    for (d, m), ax in axes.items():
        for i, c in enumerate(CONFIGS):
            x, y = series(groups, d, m, c, key)
            if x:
                pos = [ranks.index(p) + (i - 2) * width for p in x]
                ax.bar(pos, [v * scale for v in y], width, color=COLOURS[c], label=c)
        ax.set_xticks(range(len(ranks)))
        ax.set_xticklabels([f"P={p}" for p in ranks], fontsize=8)
    first = next(iter(axes.values()))
    first.set_ylabel(ylabel, fontsize=8)
    first.legend(fontsize=6, loc="best")
    save(fig, path)


def stacked(ax, bars, stages, ylabel):
    cmap = plt.get_cmap("tab20")
    bottom = [0.0] * len(bars)
    for i, st in enumerate(stages):
        h = [1e3 * s.get(st, 0.0) for _, s in bars]
        if any(h):
            ax.bar(range(len(bars)), h, 0.6, bottom=bottom, color=cmap(i % 20), label=st)
        bottom = [b + v for b, v in zip(bottom, h)]
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([b for b, _ in bars], fontsize=7)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=8)


def plot_stages(data, path):
    """One step of the largest P that ran without oversubscription, first dataset and model:
    measured on this machine's CPU ranks, and beside it (its own scale) the modelled step."""
    runs = [r for r in data["runs"] if r.get("stage_seconds_per_step") and not r["oversubscribed"]
            and r["config"] in CONFIGS]
    if not runs:
        print("[plot] no run with stage times: stages.png not drawn", file=sys.stderr)
        return
    p = max(r["ranks"] for r in runs)
    d, m = runs[0]["dataset"], runs[0]["model"]
    pick = sorted((r for r in runs if (r["dataset"], r["model"], r["ranks"]) == (d, m, p)
                   and r["seed"] == runs[0]["seed"]), key=lambda r: CONFIGS.index(r["config"]))
    measured = [(r["config"], r["stage_seconds_per_step"]) for r in pick
                if r["config"] in ("strict", "depbloom", "depbloom-op")]
    modelled = []
    for r in pick:
        mod, steps = r.get("modelled") or {}, (r.get("plan") or {}).get("steps")
        if r["config"] not in ("strict", "depbloom") or not steps:
            continue
        # The model's serial step by stage where it gives them, else as one block.
        for kind in ("serial", "pipelined"):
            total = mod.get(f"epoch_seconds_{kind}")
            if kind == "serial" and mod.get("stage_seconds"):
                modelled.append((f"{r['config']}\n{kind}", mod["stage_seconds"]))
            elif total is not None:
                modelled.append((f"{r['config']}\n{kind}", {"step (modelled)": total / steps}))
    stages = [st for st in STAGES if any(st in s for _, s in measured + modelled)]
    for _, s in measured + modelled:
        stages += [k for k in s if k not in stages]
    cols = [len(measured)] + ([len(modelled)] if modelled else [])
    fig, axes = plt.subplots(1, len(cols), figsize=(1.2 * sum(cols) + 2.8, 3.4), squeeze=False,
                             gridspec_kw={"width_ratios": cols})
    stacked(axes[0][0], measured, stages, "ms per step (measured, CPU ranks)")
    if modelled:
        stacked(axes[0][1], modelled, stages, f"ms per step (modelled, {data.get('profile')})")
    fig.suptitle(f"one training step's stages: {d}, {m}, P={p}", fontsize=9)
    handles = {}
    for ax in axes[0]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    axes[0][-1].legend(handles.values(), handles.keys(), fontsize=6, loc="center left",
                       bbox_to_anchor=(1.0, 0.5))
    save(fig, path)


def plot_suite(json_path, out_dir):
    data = json.load(open(json_path))
    groups = [g for g in data["summary"] if g["status"] == "ran" or g.get("modelled_epoch_seconds")]
    os.makedirs(out_dir, exist_ok=True)
    reached = [e for e in data.get("time_to_target", []) if e.get("reached")]
    if reached:
        plot_time_to_target(reached, os.path.join(out_dir, "time_to_target.png"))
    plot_speedup(groups, os.path.join(out_dir, "speedup.png"))
    plot_bars(groups, "test_ap_batch_mean", "test AP (per-batch mean)", "test AP per configuration",
              os.path.join(out_dir, "ap.png"))
    plot_bars(groups, "bytes_per_epoch", "MB per epoch (all collectives)",
              "bytes exchanged per epoch", os.path.join(out_dir, "bytes.png"), 1e-6)
    plot_stages(data, os.path.join(out_dir, "stages.png"))


def plot_run(run, out):
    path = os.path.join(run, "metrics.jsonl")
    lines = [json.loads(l) for l in open(path) if l.strip()]
    ep = [l for l in lines if "epoch" in l and l.get("split") != "test"]
    if not ep:
        sys.exit(f"{path}: no epoch lines")
    x = [l["epoch"] for l in ep]
    val = [(l.get("val") or {}).get("ap_batch_mean") for l in ep]
    fig, (a, b) = plt.subplots(1, 2, figsize=(7, 2.8))
    a.plot(x, [l["loss"] for l in ep], "o-", ms=3)
    a.set_title("training loss", fontsize=9)
    b.plot([e for e, v in zip(x, val) if v is not None], [v for v in val if v is not None], "o-", ms=3)
    b.set_title("validation AP (per-batch mean)", fontsize=9)
    for ax in (a, b):
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("epoch", fontsize=8)
        ax.tick_params(labelsize=8)
    fig.suptitle(os.path.basename(os.path.normpath(run)), fontsize=9)
    save(fig, out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", nargs="?", default="benchmarks/results/speedup.json",
                   help="speedup.json, or a run folder holding metrics.jsonl")
    p.add_argument("-o", "--out", help="folder for the suite's PNGs (default: beside the JSON), "
                   "or the PNG of a run (default: <run>/curves.png)")
    a = p.parse_args()
    if os.path.isdir(a.source):
        plot_run(a.source, a.out or os.path.join(a.source, "curves.png"))
    elif os.path.exists(a.source):
        plot_suite(a.source, a.out or os.path.dirname(os.path.abspath(a.source)))
    else:
        sys.exit(f"no {a.source}: run benchmarks/speedup.sh first, or name a run folder")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Critical-path pipelining (pipeline.enabled, docs/strategies.md): TGN on the shipped WIKI
# stream and on the synthetic REDDIT shape (scale 0.1), one device and 2 ranks (strategy
# depbloom), one training epoch per run with the pipeline off and on, alternating (off, on,
# then on, off, ...) N times. Per cell: the epoch's training time, the step loop's wall time,
# the time hidden by overlap and the deferred share (metrics.jsonl's critical_path), each a
# median, and the median over the repetitions of (off time / on time) of the pair run
# back to back: >= 0.97 is "no slower". All into one JSON file.
#
#   benchmarks/pipeline.sh [--smoke] [--reps N] [--cells "wiki:1 wiki:2 reddit:1 reddit:2"]
#                          [--out FILE] [--work DIR]
#
#   --smoke   WIKI, one device, the first 20,000 events, 1 repetition (a minute or two)
#   --reps N  repetitions of each (off, on) pair (default 5)
#   --cells   dataset:ranks pairs (default all four)
#   --out     default benchmarks/results/pipeline.json
#   --work    run folders (DIR/<time>/), default runs/pipeline
# Environment: DEPBLOOM_TRAIN, DEPBLOOM_DATA (default build-dev/depbloom-{train,data}).
# Timings need a quiet machine: other work on the cores moves them more than the pipeline.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=pipeline
source "$root/benchmarks/bench_common.sh"

cells="wiki:1 wiki:2 reddit:1 reddit:2" reps=5 max_events=0
out=$root/benchmarks/results/pipeline.json work=$root/runs/pipeline
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) cells=wiki:1 reps=1 max_events=20000 ;;
    --reps) reps=$2; shift ;;
    --cells) cells=$2; shift ;;
    --out) out=$(absolute "$2"); shift ;;
    --work) work=$(absolute "$2"); shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

start_runs

status=0
# run DATASET RANKS REP PIPELINE: one epoch, appended to the manifest.
run() {
  local dataset=$1 p=$2 rep=$3 on=$4 rc=0 data
  local dir=$runs/$dataset-p$p-r$rep-$on
  case $dataset in
    wiki) data=data/wikipedia/wikipedia_edges.csv ;;
    reddit) data=$(reddit_data) || { status=1; return; } ;;
  esac
  mkdir -p "$dir"
  log "$dataset, $p rank(s), repetition $rep, pipeline $on into $dir"
  local ranks=(--threads "$cores")
  # Two ranks share the cores (depbloom-train --ranks divides run.threads 0 among them).
  ((p > 1)) && ranks=(--ranks "$p" --set strategy.name=depbloom)
  "$train" --config configs/tgn-wiki.yaml --data "$data" --device cpu "${ranks[@]}" \
    --set "pipeline.enabled=$on" --set train.epoch=1 --set train.patience=0 \
    --set "data.max_events=$max_events" --set run.checkpoint=false --set run.progress=false \
    --out "$dir" >"$dir/train.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { log "failed with exit code $rc (see $dir/train.log)"; status=1; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$dataset" "$p" "$rep" "$on" "$dir" "$rc" >>"$manifest"
}

for cell in $cells; do
  for ((rep = 0; rep < reps; ++rep)); do
    if ((rep % 2 == 0)); then order="false true"; else order="true false"; fi
    for on in $order; do run "${cell%:*}" "${cell#*:}" "$rep" "$on"; done
  done
done

PYTHONPATH="$root/benchmarks" python3 - "$out" "$manifest" "$reps" "$max_events" "$cores" <<'EOF'
import statistics, sys
from bench_metrics import commit, run_metrics, write_json

out, manifest = sys.argv[1:3]
reps, max_events, cores = map(int, sys.argv[3:6])
median = lambda v: statistics.median(v) if v else None

runs = {}
for line in open(manifest):
    dataset, p, rep, on, run, rc = line.rstrip("\n").split("\t")
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
    runs.setdefault((dataset, int(p)), {}).setdefault(on == "true", {})[int(rep)] = e

table = []
for (dataset, p), by in sorted(runs.items()):
    cell = {"dataset": dataset, "ranks": p, "strategy": "depbloom" if p > 1 else "single-device"}
    for on, name in ((False, "off"), (True, "on")):
        rs = [r for r in by.get(on, {}).values() if "train_seconds" in r]
        cell[name] = {k: median([r[k] for r in rs]) for k in
                      ("train_seconds", "loop_s", "hidden_s", "deferred_share", "side_busy_s",
                       "side_wait_s", "collective_wait_s")}
        cell[name]["runs"] = len(rs)
    pairs = [by[False][k]["train_seconds"] / by[True][k]["train_seconds"]
             for k in by.get(False, {}) if k in by.get(True, {})
             and "train_seconds" in by[False][k] and "train_seconds" in by[True][k]]
    cell["speed_ratio_on_vs_off"] = {"median": median(pairs), "pairs": pairs,
                                     "no_slower": median(pairs) >= 0.97 if pairs else None}
    cell["runs"] = {name: [by.get(on, {})[k] for k in sorted(by.get(on, {}))]
                    for on, name in ((False, "off"), (True, "on"))}
    table.append(cell)

write_json(out, {"benchmark": "pipeline", "commit": commit(), "cores": cores, "reps": reps,
                 "max_events": max_events, "model": "tgn (configs/tgn-wiki.yaml)",
                 "cells": table}, "pipeline")
print("| data | ranks | epoch off s | epoch on s | off/on | loop on s | hidden s | deferred share |")
print("|---|---|---|---|---|---|---|---|")
fmt = lambda x, f="{:.3f}": "-" if x is None else f.format(x)
for c in table:
    print(f"| {c['dataset']} | {c['ranks']} | {fmt(c['off']['train_seconds'], '{:.1f}')} | "
          f"{fmt(c['on']['train_seconds'], '{:.1f}')} | {fmt(c['speed_ratio_on_vs_off']['median'])} | "
          f"{fmt(c['on']['loop_s'], '{:.1f}')} | {fmt(c['on']['hidden_s'])} | "
          f"{fmt(c['on']['deferred_share'])} |")
EOF
exit $status

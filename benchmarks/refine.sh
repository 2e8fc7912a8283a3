#!/usr/bin/env bash
# Intra-batch memory refinement (refine.micro_batches = m, docs/refine.md): TGN, JODIE
# and APAN on the shipped WIKI stream and TGN on the synthetic REDDIT shape (scale 0.1),
# batch 600 (m = 1) and batches 2400 and 4800 with m = 1, 4, 8, 3 epochs, paired seeds; and
# for TGN on WIKI batch 4800 with 8x the epochs (as many optimiser steps as batch 600), so
# that the AP lost to fewer steps and the AP lost to stale memory are told apart. Per run:
# test AP (per-batch mean, transductive and new node), validation AP per epoch, training
# events/s, the share of memory rows refined and the refine stage's seconds. Per (model,
# dataset, batch, epochs) m is chosen on mean validation AP (never test AP) and set against
# m = 1 and batch 600. All into one JSON file, and Markdown tables on stdout.
#
#   benchmarks/refine.sh [--smoke | --quick | --acceptance] [--no-equal-steps] [--seeds N]
#                        [--epochs E] [--out FILE] [--work DIR] [--aggregate last|mean]
#                        [--coherence W] [--coherence-sample S] [--start identity|updater]
#                        [--cells "B:M ..."]
#                        [--pairs "MODEL:DATA ..."] [--steps-m "M ..."]
#                        [--steps-pairs "MODEL:DATA ..."] [--eval-batch N]
#                        [--resume DIR]
#
#   --smoke       TGN WIKI, first 20,000 events, 1 epoch, 1 seed, batch 2400, m = 1, 4
#                 (about a minute on 2 cores)
#   --quick       TGN WIKI, 3 epochs, 1 seed: batch 600 (m = 1), batch 4800 (m = 1, 4)
#   --acceptance  issue 17's acceptance: TGN WIKI, 3 epochs, 3 seeds: batch 600 (m = 1),
#                 batch 4800 (m = 1, 4, 8), and batch 4800 for 24 epochs (m = 1, 4, 8)
#   --no-equal-steps  leave out the 8x-epochs runs
#   --seeds N     run.seed 0 .. N-1 for every cell, the same seeds in every cell (default 3)
#   --epochs E    the cells' epochs (default 3; the equal-steps runs take 8 E)
#   --out FILE    default benchmarks/results/refine.json
#   --work DIR    run folders (DIR/<time>/), default runs/refine (REDDIT: data/synth/reddit)
#   --aggregate   refine.aggregate for the m > 1 runs (default last)
#   --coherence W refine.coherence_weight for the m > 1 runs (default 0: off)
#   --coherence-sample S  refine.coherence_sample (default 0.1)
#   --start S     refine.start for the m > 1 runs (default identity; updater: the correction
#                 starts from the memory updater's output)
#   --cells "B:M ..."  the (batch, m) cells instead of the mode's, e.g. "4800:1 4800:4"
#   --pairs "MODEL:DATA ..."  the (model, dataset) pairs instead of the mode's, e.g. "apan:wiki"
#   --steps-m "M ..."  the m values of the equal-steps runs (default "1 4 8")
#   --steps-pairs "MODEL:DATA ..."  the pairs given equal-steps runs (default tgn:wiki)
#   --eval-batch N  eval.batch_size (default the config's: 200, the TGN authors'; TGL
#                 evaluates at the training batch, which --eval-batch train selects)
#   --resume DIR  add to the run folder DIR (an earlier or interrupted run's): runs its
#                 manifest records as finished are not run again, and the JSON covers all
#                 of DIR's runs (options that change a run's settings must be the same)
# Environment: DEPBLOOM_TRAIN, DEPBLOOM_DATA (default build-dev/depbloom-{train,data}).
# A failed run is recorded with its exit code; the script exits 1.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=refine
source "$root/benchmarks/bench_common.sh"

pairs="tgn:wiki jodie:wiki apan:wiki tgn:reddit" cells="600:1 2400:1 2400:4 2400:8 4800:1 4800:4 4800:8"
steps_pairs="tgn:wiki" epochs=3 seeds=3 seeds_opt="" max_events=0 aggregate=last
coherence=0 coherence_sample=0.1 start=identity equal_steps=1 cells_opt="" pairs_opt="" steps_m="1 4 8"
eval_batch="" resume="" epochs_opt="" steps_pairs_opt=""
out=$root/benchmarks/results/refine.json work=$root/runs/refine
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) pairs=tgn:wiki cells="2400:1 2400:4" steps_pairs="" epochs=1 seeds=1 max_events=20000 ;;
    --quick) pairs=tgn:wiki cells="600:1 4800:1 4800:4" steps_pairs="" seeds=1 ;;
    --acceptance) pairs=tgn:wiki cells="600:1 4800:1 4800:4 4800:8" steps_pairs=tgn:wiki seeds=3 ;;
    --no-equal-steps) equal_steps=0 ;;
    --coherence) coherence=$2; shift ;;
    --coherence-sample) coherence_sample=$2; shift ;;
    --start) start=$2; shift ;;
    --seeds) seeds_opt=$2; shift ;;
    --epochs) epochs_opt=$2; shift ;;
    --cells) cells_opt=$2; shift ;;
    --pairs) pairs_opt=$2; shift ;;
    --steps-m) steps_m=$2; shift ;;
    --steps-pairs) steps_pairs_opt=$2; shift ;;
    --eval-batch) eval_batch=$2; shift ;;
    --resume) resume=$(cd "$(absolute "$2")" && pwd) || exit 2; shift ;;
    --out) out=$(absolute "$2"); shift ;;
    --work) work=$(absolute "$2"); shift ;;
    --aggregate) aggregate=$2; shift ;;
    -h|--help) sed -n '2,45p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
# The options win over the modes, whatever the order.
seeds=${seeds_opt:-$seeds} epochs=${epochs_opt:-$epochs} cells=${cells_opt:-$cells}
pairs=${pairs_opt:-$pairs} steps_pairs=${steps_pairs_opt:-$steps_pairs}
((equal_steps)) || steps_pairs=""

start_runs

status=0
# run MODEL DATASET DATA BATCH M EPOCHS SEED: one training run, appended to the manifest.
run() {
  local model=$1 dataset=$2 data=$3 batch=$4 m=$5 ep=$6 seed=$7 rc=0
  local dir=$runs/$model-$dataset-b$batch-m$m-e$ep-s$seed eval_set=()
  if finished_run "$dir"; then log "$dir: finished before, kept"; return; fi
  [[ -z $eval_batch ]] || eval_set=(--set "eval.batch_size=$([[ $eval_batch == train ]] && echo "$batch" || echo "$eval_batch")")
  mkdir -p "$dir"
  log "$model $dataset batch $batch m=$m, $ep epoch(s), seed $seed into $dir"
  # The final test reloads the best epoch from memory (train/fit.cpp), so no checkpoints.
  "$train" --config "configs/$model-wiki.yaml" --data "$data" --device cpu --threads "$cores" \
    --seed "$seed" --set "train.batch_size=$batch" --set "refine.micro_batches=$m" \
    --set "refine.aggregate=$aggregate" --set "refine.coherence_weight=$([[ $m -gt 1 ]] && echo "$coherence" || echo 0)" \
    --set "refine.coherence_sample=$coherence_sample" --set "refine.start=$start" --set "train.epoch=$ep" --set train.patience=0 \
    --set "data.max_events=$max_events" --set run.checkpoint=false --set run.progress=false \
    "${eval_set[@]}" --out "$dir" >"$dir/train.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { log "failed with exit code $rc (see $dir/train.log)"; status=1; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$model" "$dataset" "$batch" "$m" "$ep" "$seed" "$dir" "$rc" >>"$manifest"
}

for pair in $pairs; do
  model=${pair%%:*} dataset=${pair#*:}
  case $dataset in
    wiki) data=data/wikipedia/wikipedia_edges.csv ;;
    reddit) data=$(reddit_data) || { log "no REDDIT data"; status=1; continue; } ;;
  esac
  for ((seed = 0; seed < seeds; ++seed)); do
    for cell in $cells; do run "$model" "$dataset" "$data" "${cell%:*}" "${cell#*:}" "$epochs" "$seed"; done
    # Equal steps: batch 4800 for 8x the epochs of batch 600.
    [[ " $steps_pairs " == *" $pair "* ]] || continue
    for m in $steps_m; do run "$model" "$dataset" "$data" 4800 "$m" $((8 * epochs)) "$seed"; done
  done
done

PYTHONPATH="$root/benchmarks" python3 - "$out" "$manifest" "$epochs" "$max_events" "$cores" "$aggregate" \
  "$coherence" "$coherence_sample" "${eval_batch:-config}" "$start" <<'EOF'
import datetime, statistics, sys
from bench_metrics import commit, run_device, run_metrics, write_json

out, manifest = sys.argv[1:3]
epochs, max_events, cores = map(int, sys.argv[3:6])
aggregate = sys.argv[6]
coherence, coherence_sample = map(float, sys.argv[7:9])
eval_batch = sys.argv[9]  # "config" (the config's eval.batch_size), "train" or a number
start = sys.argv[10]  # refine.start of the m > 1 runs

def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()

def summarise(model, dataset, batch, m, ep, seed, run, rc):
    e = {"model": model, "dataset": dataset, "batch_size": batch, "micro_batches": m,
         "aggregate": aggregate if m > 1 else None,
         "coherence_weight": coherence if m > 1 else 0.0,
         "start": start if m > 1 else None, "epochs": ep, "seed": seed,
         "run_dir": run, "exit_code": int(rc)}
    dev = run_device(run)
    if dev:
        e["device"], e["cpu_threads"] = dev
    ep_lines, tests = run_metrics(run)
    if not ep_lines:
        return e
    per = lambda f: [f(l) for l in ep_lines]
    val = per(lambda l: (l.get("val") or {}).get("ap_batch_mean"))
    t = tests[-1] if tests else {}
    best = t.get("best_epoch")
    pick = lambda s: (t.get(s) or {}).get("ap_batch_mean")
    refined, rows = per(lambda l: l["refined_rows_per_batch"]), per(lambda l: l["memory_rows_per_batch"])
    e.update({
        "epochs_run": len(ep_lines), "best_epoch": best, "val_ap_batch_mean": val,
        "best_val_ap_batch_mean": val[best - 1] if best and best <= len(val) else None,
        "test_ap_batch_mean": pick("test"), "test_new_nodes_ap_batch_mean": pick("test_new_nodes"),
        "test_ap": (t.get("test") or {}).get("ap"),
        "events_per_s": statistics.fmean(per(lambda l: l["events_per_s"])),
        "train_seconds_per_epoch": statistics.fmean(per(lambda l: l["train_seconds"])),
        "refined_rows_per_batch": refined, "memory_rows_per_batch": rows,
        # Refined copies are per (row, micro-batch): a row read in several can count twice.
        "refined_share": statistics.fmean(r / u if u else 0.0 for r, u in zip(refined, rows)),
        "refine_seconds": per(lambda l: l["stage_s"].get("refine", 0.0)),
        "final_loss": ep_lines[-1]["loss"],
        "final_coherence_loss": ep_lines[-1].get("coherence_loss")})
    return e

runs = []
for line in open(manifest):
    mo, d, b, m, ep, seed, run, rc = line.rstrip("\n").split("\t")
    runs.append(summarise(mo, d, int(b), int(m), int(ep), int(seed), run, rc))

def avg(v):
    v = [x for x in v if x is not None]
    return statistics.fmean(v) if v else None

groups = {}  # (model, dataset, batch, epochs) -> m -> runs
for r in runs:
    groups.setdefault((r["model"], r["dataset"], r["batch_size"], r["epochs"]), {}) \
          .setdefault(r["micro_batches"], []).append(r)
APS = ("test_ap_batch_mean", "test_new_nodes_ap_batch_mean")

def cell(rs):
    c = {k: avg(r.get(k) for r in rs) for k in ("best_val_ap_batch_mean", *APS, "events_per_s", "refined_share")}
    c["refine_seconds_per_epoch"] = avg(avg(r.get("refine_seconds") or []) for r in rs)
    c["seeds"] = sum(r.get("test_ap_batch_mean") is not None for r in rs)
    return c

def paired(a, b, key):  # chosen m minus m = 1, per seed
    bs = {r["seed"]: r.get(key) for r in b}
    d = [r.get(key) - bs[r["seed"]] for r in a if r.get(key) is not None and bs.get(r["seed"]) is not None]
    sd = statistics.stdev(d) if len(d) > 1 else None
    return {"mean": avg(d), "sd": sd, "se": sd / len(d) ** 0.5 if sd is not None else None,
            "n": len(d), "gains": sum(x > 0 for x in d)}

summary = {}
for (mo, d, b, ep), by_m in sorted(groups.items()):
    s = summary.setdefault(f"{mo}/{d}", {}).setdefault(f"batch{b}_epochs{ep}", {})
    s["by_m"] = {str(m): cell(rs) for m, rs in sorted(by_m.items())}
    vals = {m: c["best_val_ap_batch_mean"] for m, c in ((int(k), c) for k, c in s["by_m"].items())
            if c.get("best_val_ap_batch_mean") is not None}
    if not vals or 1 not in by_m or len(by_m) == 1:  # batch 600 runs m = 1 only
        continue
    m = s["chosen_m"] = max(vals, key=vals.get)  # on validation AP only
    base = groups.get((mo, d, 600, epochs), {}).get(1, [])  # batch 600 at the base epochs
    for k in APS:
        one, ch, b600 = avg(r.get(k) for r in by_m[1]), avg(r.get(k) for r in by_m[m]), avg(r.get(k) for r in base)
        gap = None if None in (b600, one) else b600 - one
        s[k] = {"m1": one, "chosen": ch, "batch600": b600, "paired_diff": paired(by_m[m], by_m[1], k),
                "loss_recovered_share": (ch - one) / gap if gap and gap > 0 and ch is not None else None}
for (mo, d, b, ep), by_m in groups.items():  # fewer steps against stale memory, where both ran
    a1 = lambda e: avg(r.get(APS[0]) for r in groups.get((mo, d, b, e), {}).get(1, []))
    b600, eq, st = avg(r.get(APS[0]) for r in groups.get((mo, d, 600, epochs), {}).get(1, [])), a1(epochs), a1(8 * epochs)
    if b == 4800 and ep == 8 * epochs and None not in (b600, eq, st):
        s = summary[f"{mo}/{d}"]
        s["loss_decomposition"] = {"total": b600 - eq, "fewer_steps": st - eq, "stale_memory": b600 - st,
            "stale_memory_recovered_share": s[f"batch4800_epochs{ep}"].get(APS[0], {}).get("loss_recovered_share")}

write_json(out, {
    "benchmark": "refine", "commit": commit(),
    "machine": {"nproc": cores, "cpu_model": cpu_model()},
    "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "epochs": epochs, "max_events": max_events, "aggregate": aggregate, "eval_batch": eval_batch,
    "coherence_weight": coherence, "coherence_sample": coherence_sample, "start": start,
    "runs": runs, "summary": summary}, "refine")

f = lambda x, n=4: "-" if x is None else f"{x:.{n}f}"
print("| model | dataset | batch | epochs | m | seeds | val AP bm | test AP bm | new-node AP bm "
      "| events/s | refined share | refine s/ep |")
print("|" + "---|" * 12)
for key, sg in summary.items():
    for g, s in sg.items():
        if not g.startswith("batch"):
            continue
        b, ep = g[5:].split("_epochs")
        for m, c in s["by_m"].items():
            lead = f"| {key.replace('/', ' | ')} | {b} | {ep} | {m}{' *' if s.get('chosen_m') == int(m) else ''} "
            print(lead + f"| {c['seeds']} | {f(c['best_val_ap_batch_mean'])} | {f(c['test_ap_batch_mean'])} "
                  f"| {f(c['test_new_nodes_ap_batch_mean'])} | {f(c['events_per_s'], 0)} "
                  f"| {f(c['refined_share'], 3)} | {f(c['refine_seconds_per_epoch'], 2)} |")
print("\n(* m chosen on validation AP)\n")
print("| model | dataset | batch | epochs | chosen m | test AP m=1 | test AP chosen | diff (sd) "
      "| seeds gaining | diff / se | new-node diff (sd) | share of batch-600 loss recovered |")
print("|" + "---|" * 12)
for key, sg in summary.items():
    for g, s in sg.items():
        if "chosen_m" not in s:
            continue
        t, n = s["test_ap_batch_mean"], s["test_new_nodes_ap_batch_mean"]
        pd = lambda p: f"{f(p['mean'])} ({f(p['sd'])})"
        b, ep = g[5:].split("_epochs")
        p = t["paired_diff"]
        ratio = p["mean"] / p["se"] if p["mean"] is not None and p["se"] else None
        print(f"| {key.replace('/', ' | ')} | {b} | {ep} | {s['chosen_m']} | {f(t['m1'])} | {f(t['chosen'])} "
              f"| {pd(p)} | {p['gains']} of {p['n']} | {f(ratio, 1)} | {pd(n['paired_diff'])} "
              f"| {f(t['loss_recovered_share'], 2)} |")
for key, sg in summary.items():
    if "loss_decomposition" in sg:
        x = sg["loss_decomposition"]
        print(f"\n{key}: batch 600 -> 4800 test AP loss {f(x['total'])}: fewer steps {f(x['fewer_steps'])}, "
              f"stale memory {f(x['stale_memory'])}; refinement recovers {f(x['stale_memory_recovered_share'], 2)} of the latter")
EOF
exit $status

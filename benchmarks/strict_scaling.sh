#!/usr/bin/env bash
# Strong scaling of the `strict` data-parallel strategy on CPU ranks: trains TGN on the
# shipped WIKI stream and on the synthetic REDDIT-shaped stream with 1, 2 and 4 ranks
# (depbloom-train --ranks P, the same global batch) and collects per (dataset, P) the epoch
# time, events/s and what the ranks exchanged into one JSON file.
#
#   benchmarks/strict_scaling.sh
#   MAX_BATCHES=20 DATASETS=tgn-wiki BUILD=build-cpu OUT=/tmp/s.json benchmarks/strict_scaling.sh
#
# Environment (all optional):
#   BUILD        build folder holding depbloom-train (built with MPI) and depbloom-data
#                (default: build)
#   EPOCHS       epochs per run (default: 1)
#   MAX_BATCHES  training batches per epoch, --set run.max_batches=N (default: 0, all)
#   RANKS        rank counts to run (default: "1 2 4")
#   DATASETS     config names to run (default: tgn-wiki tgn-synth-reddit)
#   OUT          the JSON file to write (default: benchmarks/results/strict_scaling.json)
#   RUNS         folder for the run folders (default: runs/strict_scaling-<time>)
#   EXTRA_SETS   more depbloom-train options, word-split, e.g. "--set data.max_events=20000"
#   OMP_NUM_THREADS  threads per rank; unset, depbloom-train gives each rank cores / P
# Relative BUILD, OUT and RUNS are taken from the working directory the script starts in;
# the runs start in the repository root, where the configs' data paths point. The
# synthetic data (data/synth/reddit) is generated with depbloom-data when it is missing.
# Per (dataset, P), from rank 0's metrics.jsonl, averaged over the epochs: training seconds
# per epoch (and with validation), global events/s, the events rank 0 trained on, sync
# points (blocking collectives) and calls and bytes per collective kind per epoch, the
# memory rows and mails exchanged per epoch, the loss and validation AP (they should agree
# across P up to f32 rounding and dropout masks, docs/dist.md), and the speed-up over P = 1.
# A run that fails is recorded with its exit code; the script then exits 1 after writing the
# file.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=strict_scaling
source "$root/benchmarks/bench_common.sh"

BUILD=$(absolute "${BUILD:-build}")
EPOCHS=${EPOCHS:-1}
MAX_BATCHES=${MAX_BATCHES:-0}
RANKS=${RANKS:-1 2 4}
DATASETS=${DATASETS:-tgn-wiki tgn-synth-reddit}
OUT=$(absolute "${OUT:-$root/benchmarks/results/strict_scaling.json}")
RUNS=$(absolute "${RUNS:-$root/runs/strict_scaling-$(date +%Y%m%d-%H%M%S)}")
EXTRA_SETS=${EXTRA_SETS:-}

require_tools
command -v mpirun >/dev/null || { echo "mpirun is needed for --ranks" >&2; exit 2; }
cd "$root"
mkdir -p "$RUNS" "$(dirname "$OUT")"


status=0
runs=()
for dataset in $DATASETS; do
  config=configs/$dataset.yaml
  for p in $RANKS; do
    run=$RUNS/$dataset-p$p
    mkdir -p "$run"
    rc=0
    if [[ ! -f $config ]]; then
      log "no $config"
      rc=2
    elif [[ $dataset == *-synth-* ]] && ! need_synth "${dataset##*-synth-}"; then
      rc=3
    else
      log "$dataset on $p rank(s): $EPOCHS epoch(s), max_batches $MAX_BATCHES, into $run"
      # CPU ranks: strict runs over MPI on the CPU. No checkpoints: they are not measured.
      # shellcheck disable=SC2086  # EXTRA_SETS is a list of options
      "$train" --config "$config" --ranks "$p" --device cpu --set strategy.name=strict \
        --set "train.epoch=$EPOCHS" --set train.patience=0 --set "run.max_batches=$MAX_BATCHES" \
        --set run.checkpoint=false --set run.progress=false $EXTRA_SETS --out "$run" 2>&1 |
        tee "$run/train.log" >&2 || rc=${PIPESTATUS[0]}
    fi
    [[ $rc -eq 0 ]] || { log "$dataset on $p rank(s) failed with exit code $rc"; status=1; }
    runs+=("$dataset=$p=$run=$rc")
  done
done

PYTHONPATH="$root/benchmarks" python3 - "$OUT" "$EPOCHS" "$MAX_BATCHES" "$EXTRA_SETS" "${runs[@]}" <<'EOF'
import datetime, os, sys
from bench_metrics import commit, run_device, run_metrics, write_json

out, epochs, max_batches, extra = sys.argv[1:5]
KINDS = ("all_reduce", "all_gather", "all_gather_v", "broadcast", "barrier")

def summarise(dataset, ranks, run, rc):
    entry = {"ranks": ranks, "run_dir": run, "exit_code": rc}
    device = run_device(run)
    if device:
        entry["device"], entry["cpu_threads_per_rank"] = device
    ep, _ = run_metrics(run)
    if not ep:
        return entry
    n = len(ep)
    per_epoch = lambda f: sum(f(l) for l in ep) / n
    train_s = sum(l["train_seconds"] for l in ep)
    comm = lambda l: l.get("comm") or {}
    entry.update({
        "strategy": comm(ep[-1]).get("strategy"),
        "epochs": n,
        "train_seconds_per_epoch": train_s / n,
        "seconds_per_epoch": per_epoch(lambda l: l["train_seconds"] + l.get("eval_seconds", 0.0)),
        "events_per_s": sum(l["train_events"] for l in ep) / train_s if train_s > 0 else None,
        "train_events_per_epoch": per_epoch(lambda l: l["train_events"]),
        # One rank has no communicator: it trains on every event and exchanges nothing.
        "rank0_events_per_epoch": per_epoch(
            lambda l: comm(l).get("local_events") or l["train_events"]),
        "sync_points_per_epoch": per_epoch(lambda l: comm(l).get("sync_points", 0)),
        "exchanged_rows_per_epoch": per_epoch(lambda l: comm(l).get("exchanged_rows", 0)),
        "exchanged_mails_per_epoch": per_epoch(lambda l: comm(l).get("exchanged_mails", 0)),
        "collectives_per_epoch": {
            k: {"calls": per_epoch(lambda l: (comm(l).get(k) or {}).get("calls", 0)),
                "bytes": per_epoch(lambda l: (comm(l).get(k) or {}).get("bytes", 0))}
            for k in KINDS},
        "bytes_per_epoch": per_epoch(
            lambda l: sum((comm(l).get(k) or {}).get("bytes", 0) for k in KINDS)),
        "final_loss": ep[-1]["loss"],
        "val_ap": (ep[-1].get("val") or {}).get("ap"),
    })
    return entry

results = {}
for arg in sys.argv[5:]:
    dataset, ranks, rest = arg.split("=", 2)
    run, rc = rest.rsplit("=", 1)
    results.setdefault(dataset, {"config": f"configs/{dataset}.yaml", "by_ranks": {}})
    results[dataset]["by_ranks"][ranks] = summarise(dataset, int(ranks), run, int(rc))

for d in results.values():
    base = d["by_ranks"].get("1", {}).get("train_seconds_per_epoch")
    for e in d["by_ranks"].values():
        s = e.get("train_seconds_per_epoch")
        if base and s:
            e["speedup_vs_1_rank"] = base / s

result = {
    "benchmark": "strict_scaling",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "commit": commit(),
    "epochs": int(epochs),
    "max_batches": int(max_batches),
    "extra_sets": extra,
    "cpu_count": os.cpu_count(),
    "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    "datasets": results,
}
write_json(out, result, "strict_scaling")
EOF
exit $status

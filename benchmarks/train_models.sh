#!/usr/bin/env bash
# Trains each shipped model for a fixed number of epochs and collects speed and test
# quality into one JSON file.
#
#   benchmarks/train_models.sh                      # from anywhere; paths below are
#   EPOCHS=1 DEVICE=cpu BUILD=build-cpu OUT=/tmp/t.json benchmarks/train_models.sh
#
# Environment (all optional):
#   BUILD       build folder holding depbloom-train and depbloom-data (default: build)
#   EPOCHS      epochs per model (default: 3)
#   DEVICE      auto, cpu or cuda:N, passed as --device (default: auto)
#   OUT         the JSON file to write (default: benchmarks/results/train_models.json)
#   RUNS        folder for the run folders, one per model (default: runs/train_models-<time>)
#   MODELS      config names to run (default: tgn-wiki jodie-wiki apan-wiki tgn-synth-reddit)
#   EXTRA_SETS  more depbloom-train options, word-split, e.g.
#               EXTRA_SETS="--set data.max_events=20000" for a quick end-to-end check
# Relative BUILD, OUT and RUNS are taken from the working directory the script starts in;
# the runs themselves start in the repository root, where the configs' data paths point.
# The *-synth-reddit config's data (data/synth/reddit) is generated with depbloom-data when
# it is missing. Per model the JSON holds seconds per epoch (training, and with
# validation), events/s, the test AP and AUC over the whole split and as the per-batch mean,
# transductive and new-node, read from the run's metrics.jsonl. A model whose run fails is
# recorded with its exit code; the script then exits 1 after writing the file.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=train_models
source "$root/benchmarks/bench_common.sh"

BUILD=$(absolute "${BUILD:-build}")
EPOCHS=${EPOCHS:-3}
DEVICE=${DEVICE:-auto}
OUT=$(absolute "${OUT:-$root/benchmarks/results/train_models.json}")
RUNS=$(absolute "${RUNS:-$root/runs/train_models-$(date +%Y%m%d-%H%M%S)}")
MODELS=${MODELS:-tgn-wiki jodie-wiki apan-wiki tgn-synth-reddit}
EXTRA_SETS=${EXTRA_SETS:-}

require_tools
cd "$root"
mkdir -p "$RUNS" "$(dirname "$OUT")"


status=0
runs=()
for model in $MODELS; do
  config=configs/$model.yaml
  run=$RUNS/$model
  mkdir -p "$run"
  rc=0
  if [[ ! -f $config ]]; then
    log "no $config"
    rc=2
  elif [[ $model == *-synth-* ]] && ! need_synth "${model##*-synth-}"; then
    rc=3
  else
    log "$model: $EPOCHS epoch(s) on --device $DEVICE into $run"
    # shellcheck disable=SC2086  # EXTRA_SETS is a list of options
    "$train" --config "$config" --device "$DEVICE" --set "train.epoch=$EPOCHS" \
      --set train.patience=0 $EXTRA_SETS --out "$run" 2>&1 | tee "$run/train.log" >&2 ||
      rc=${PIPESTATUS[0]}
  fi
  [[ $rc -eq 0 ]] || { log "$model failed with exit code $rc"; status=1; }
  runs+=("$model=$run=$rc")
done

PYTHONPATH="$root/benchmarks" python3 - "$OUT" "$EPOCHS" "$DEVICE" "$EXTRA_SETS" "${runs[@]}" <<'EOF'
import datetime, os, sys
from bench_metrics import commit, run_device, run_metrics, write_json

out, epochs, device, extra = sys.argv[1:5]

def split_metrics(r):
    if not r:
        return None
    return {k: r.get(k) for k in ("ap", "auc", "ap_batch_mean", "auc_batch_mean", "events")}

def summarise(model, run, rc):
    entry = {"config": f"configs/{model}.yaml", "run_dir": run, "exit_code": rc}
    device = run_device(run)
    if device:
        entry["device"], entry["cpu_threads"] = device
    ep, tests = run_metrics(run)
    if ep:
        train_s = sum(l["train_seconds"] for l in ep)
        eval_s = sum(l.get("eval_seconds", 0.0) for l in ep)
        events = sum(l["train_events"] for l in ep)
        entry.update({
            "epochs": len(ep),
            "train_seconds_per_epoch": train_s / len(ep),
            "seconds_per_epoch": (train_s + eval_s) / len(ep),  # training + validation
            "events_per_s": events / train_s if train_s > 0 else None,
            "train_events_per_epoch": events // len(ep),
            "final_loss": ep[-1]["loss"],
            "val_ap_batch_mean": [(l.get("val") or {}).get("ap_batch_mean") for l in ep],
        })
    if tests:
        t = tests[-1]
        entry.update({"best_epoch": t.get("best_epoch"),
                      "test": split_metrics(t.get("test")),
                      "test_new_nodes": split_metrics(t.get("test_new_nodes"))})
    return entry

models = {}
for arg in sys.argv[5:]:
    model, rest = arg.split("=", 1)
    run, rc = rest.rsplit("=", 1)
    models[model] = summarise(model, run, int(rc))

result = {
    "benchmark": "train_models",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "commit": commit(),
    "epochs": int(epochs),
    "device": device,
    "extra_sets": extra,
    "cpu_count": os.cpu_count(),
    "models": models,
}
write_json(out, result, "train_models")
EOF
exit $status

#!/usr/bin/env bash
# The `depbloom` strategy (window plans, docs/strategies.md) against `strict` on CPU ranks:
# TGN on the shipped WIKI stream and the synthetic REDDIT shape (scale 0.1), 3 epochs,
# train.batch_size = P x 600, P = 1, 2, 4, 8; depbloom with each partition.method (metis,
# fennel, hash). Per run: test AP (whole and per-batch mean, transductive and new node),
# collectives and bytes per epoch, the plan's cut fraction, imbalance and migrated nodes,
# and the epoch time; all into one JSON file, and a Markdown table on stdout.
#
#   benchmarks/partition.sh [--smoke | --quick] [--seeds N] [--out FILE]
#                           [--datasets wiki,reddit] [--ranks 1,2,4,8] [--work DIR]
#
#   --smoke     WIKI, first 20,000 events, 1 epoch, P = 1, 2 (about a minute on 2 cores)
#   --quick     WIKI, 1 epoch, P = 1, 2, 4
#   --seeds N   run.seed 0 .. N-1 for every run (default 1)
#   --out FILE  default benchmarks/results/partition.json
#   --work DIR  run folders (DIR/<time>/), default runs/partition; the synthetic REDDIT
#               shape is made once into data/synth/reddit
# Environment: DEPBLOOM_TRAIN, DEPBLOOM_DATA (default build-dev/depbloom-{train,data}).
# P = 1 runs once per dataset and seed: with one rank every strategy is single-device
# training, so it is the baseline of both. A run with more ranks than cores is marked
# "oversubscribed": its AP and counts are exact, its times are no measure of speed (null).
# A failed run is recorded with its exit code; the script then exits 1 after writing.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=partition
source "$root/benchmarks/bench_common.sh"

datasets=wiki,reddit ranks=1,2,4,8 epochs=3 seeds=1 max_events=0
out=$root/benchmarks/results/partition.json work=$root/runs/partition
methods="metis fennel hash"
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) datasets=wiki ranks=1,2 epochs=1 max_events=20000 ;;
    --quick) datasets=wiki ranks=1,2,4 epochs=1 ;;
    --seeds) seeds=$2; shift ;;
    --out) out=$(absolute "$2"); shift ;;
    --datasets) datasets=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    --work) work=$(absolute "$2"); shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

start_runs mpi

status=0
# run DATASET P STRATEGY METHOD SEED DATA: one training run, appended to the manifest.
run() {
  local dataset=$1 p=$2 strategy=$3 method=$4 seed=$5 data=$6 rc=0
  local dir=$runs/$dataset-p$p-$strategy${method:+-$method}-s$seed
  # ranks x threads <= cores where possible; one thread a rank beyond that.
  local threads=$((cores / p > 0 ? cores / p : 1))
  local launch=()
  [[ $p -gt 1 ]] && launch=(--ranks "$p")
  mkdir -p "$dir"
  log "$dataset P=$p $strategy ${method:-} seed $seed ($threads threads/rank) into $dir"
  "$train" --config configs/tgn-wiki.yaml --data "$data" "${launch[@]}" --device cpu \
    --threads "$threads" --seed "$seed" --set "strategy.name=$strategy" \
    ${method:+--set "partition.method=$method"} --set partition.window_steps=8 \
    --set "train.batch_size=$((p * 600))" --set "train.epoch=$epochs" --set train.patience=0 \
    --set "data.max_events=$max_events" --set run.checkpoint=false --set run.progress=false \
    --out "$dir" >"$dir/train.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { log "failed with exit code $rc (see $dir/train.log)"; status=1; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$dataset" "$p" "$strategy" "${method:--}" "$seed" \
    "$threads" "$dir" "$rc" >>"$manifest"
}

for dataset in ${datasets//,/ }; do
  case $dataset in
    wiki) data=data/wikipedia/wikipedia_edges.csv ;;
    reddit) data=$(reddit_data) || { log "no REDDIT data"; status=1; continue; } ;;
    *) log "unknown dataset $dataset (wiki, reddit)"; status=1; continue ;;
  esac
  for ((seed = 0; seed < seeds; ++seed)); do
    for p in ${ranks//,/ }; do
      if [[ $p -eq 1 ]]; then run "$dataset" 1 strict "" "$seed" "$data"; continue; fi
      run "$dataset" "$p" strict "" "$seed" "$data"
      for m in $methods; do run "$dataset" "$p" depbloom "$m" "$seed" "$data"; done
    done
  done
done

PYTHONPATH="$root/benchmarks" python3 - "$out" "$manifest" "$epochs" "$max_events" "$cores" <<'EOF'
import datetime, os, statistics, sys
from bench_metrics import commit, run_metrics, write_json

out, manifest = sys.argv[1:3]
epochs, max_events, cores = map(int, sys.argv[3:6])  # cores: nproc, as the runs saw them
KINDS = ("all_reduce", "all_gather", "all_gather_v", "broadcast", "barrier")

def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()

def summarise(dataset, p, strategy, method, seed, threads, run, rc):
    e = {"dataset": dataset, "ranks": p, "strategy": "single" if p == 1 else strategy,
         "method": None if method == "-" else method, "seed": seed, "threads_per_rank": threads,
         "batch_size": p * 600, "oversubscribed": p > cores, "run_dir": run, "exit_code": rc}
    ep, tests = run_metrics(run)
    if not ep:
        return e
    mean = lambda f: sum(f(l) for l in ep) / len(ep)
    comm = lambda l: l.get("comm") or {}
    kind = lambda l, k: comm(l).get(k) or {}
    t = tests[-1] if tests else {}
    pick = lambda s, k: (t.get(s) or {}).get(k)
    e.update({
        "epochs": len(ep),
        "test_ap": pick("test", "ap"), "test_ap_batch_mean": pick("test", "ap_batch_mean"),
        "test_new_nodes_ap": pick("test_new_nodes", "ap"),
        "test_new_nodes_ap_batch_mean": pick("test_new_nodes", "ap_batch_mean"),
        "final_loss": ep[-1]["loss"],
        # Per epoch, averaged over the epochs; one rank has no communicator (all zero).
        "collectives_per_epoch": mean(lambda l: sum(kind(l, k).get("calls", 0) for k in KINDS)),
        "sync_points_per_epoch": mean(lambda l: comm(l).get("sync_points", 0)),
        "by_kind_per_epoch": {k: {"calls": mean(lambda l: kind(l, k).get("calls", 0)),
                                  "bytes": mean(lambda l: kind(l, k).get("bytes", 0))}
                              for k in KINDS},
        "bytes_per_epoch": mean(lambda l: sum(kind(l, k).get("bytes", 0) for k in KINDS)),
    })
    e["all_gather_v_bytes_per_epoch"] = e["by_kind_per_epoch"]["all_gather_v"]["bytes"]
    for k in ("exchange_bytes", "exchanges", "exchanged_rows", "exchanged_mails"):
        e[k + "_per_epoch"] = mean(lambda l: comm(l).get(k, 0))
    plans = [comm(l)["plan"] for l in ep if "plan" in comm(l)]
    if plans:  # the plan is the same every epoch (a pure function of stream and keys)
        e["plan"] = plans[-1]
    secs = mean(lambda l: l["train_seconds"])
    # Ranks beyond the cores time-share them: the time is recorded but is no speed.
    e["train_seconds_per_epoch"] = None if e["oversubscribed"] else secs
    if e["oversubscribed"]:
        e["oversubscribed_train_seconds_per_epoch"] = secs
    return e

runs = []
for line in open(manifest):
    d, p, s, m, seed, th, run, rc = line.rstrip("\n").split("\t")
    runs.append(summarise(d, int(p), s, m, int(seed), int(th), run, int(rc)))

# Means over seeds per (dataset, P, strategy, method), then depbloom over strict per P.
def avg(rs, get):
    v = [x for x in map(get, rs) if x is not None]
    return statistics.fmean(v) if v else None

cut = lambda r: r.get("plan", {}).get("cut_fraction")
groups = {}
for r in runs:
    groups.setdefault((r["dataset"], r["ranks"], r["strategy"], r["method"]), []).append(r)
ratio = lambda a, b: a / b if a is not None and b else None
summary = {}
for (d, p, s, m), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
    if s != "depbloom":
        continue
    base = groups.get((d, p, "strict", None), [])
    row = summary.setdefault(d, {}).setdefault(str(p), {})
    g = lambda key: lambda r: r.get(key)
    a, b = (lambda get: avg(rs, get)), (lambda get: avg(base, get))
    row[m] = {k: ratio(a(g(key)), b(g(key))) for k, key in (
        ("collectives_vs_strict", "collectives_per_epoch"),
        ("all_gather_v_bytes_vs_strict", "all_gather_v_bytes_per_epoch"),
        ("exchange_bytes_vs_strict", "exchange_bytes_per_epoch"))}
    ap, ap0 = a(g("test_ap_batch_mean")), b(g("test_ap_batch_mean"))
    row[m]["test_ap_batch_mean_minus_strict"] = None if None in (ap, ap0) else ap - ap0
    row[m]["cut_fraction"] = a(cut)
for d in summary.values():
    for row in d.values():
        if "metis" in row and "hash" in row:
            row["cut_fraction_metis_vs_hash"] = ratio(row["metis"]["cut_fraction"],
                                                      row["hash"]["cut_fraction"])

write_json(out, {
    "benchmark": "partition", "commit": commit(),
    "machine": {"nproc": cores, "cpu_model": cpu_model()},
    "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "epochs": epochs, "max_events": max_events, "window_steps": 8,
    "runs": runs, "summary": summary}, "partition")

f = lambda x, n=3: "-" if x is None else f"{x:.{n}f}"
print("| dataset | P | strategy | method | seed | test AP bm | new-node AP bm | collectives/ep "
      "| all_gather_v MB/ep | exchange MB/ep | cut | imbalance | migrated | epoch s |")
print("|" + "---|" * 14)
for r in runs:
    pl = r.get("plan", {})
    secs = ("oversub." if r["oversubscribed"] else f(r.get("train_seconds_per_epoch"), 2))
    mb = lambda x: None if x is None else x / 1e6
    print(f"| {r['dataset']} | {r['ranks']} | {r['strategy']} | {r['method'] or '-'} "
          f"| {r['seed']} | {f(r.get('test_ap_batch_mean'), 4)} "
          f"| {f(r.get('test_new_nodes_ap_batch_mean'), 4)} | {f(r.get('collectives_per_epoch'), 0)} "
          f"| {f(mb(r.get('all_gather_v_bytes_per_epoch')), 2)} | {f(mb(r.get('exchange_bytes_per_epoch')), 2)} "
          f"| {f(pl.get('cut_fraction'))} | {f(pl.get('max_imbalance'))} "
          f"| {pl.get('migrated_nodes', '-')} | {secs}"
          + (f" (exit {r['exit_code']})" if r["exit_code"] else "") + " |")
EOF
exit $status

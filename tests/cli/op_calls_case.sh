#!/usr/bin/env bash
# run.profile_ops end to end: a short run's metrics.jsonl holds the calls of a training step
# (op calls, uploads, the side lane's, evaluation's per batch, and the per-kind list), and
# --plan prints the same step's calls from its dry run, equal to the run's.
#   op_calls_case.sh DEPBLOOM_TRAIN WORK_DIR
set -euo pipefail
train=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
args=(--device cpu --threads 2 --set train.epoch=1 --set run.max_batches=3
      --set data.max_events=4000 --set run.profile_ops=true)
"$train" "${args[@]}" --set run.checkpoint=false --out "$dir/run" >"$dir/run.log" 2>&1
"$train" "${args[@]}" --plan 2>"$dir/plan.log" | grep '^{' | tail -1 >"$dir/plan.json"
grep -q 'op calls/step' "$dir/run.log"
python3 - "$dir/run/metrics.jsonl" "$dir/plan.json" <<'PY'
import json
import sys

epoch = json.loads(open(sys.argv[1]).readline())["calls"]
plan = json.load(open(sys.argv[2]))["plan"]["calls"]
for key in ("op_calls_per_step", "uploads_per_step", "side_op_calls_per_step",
            "side_uploads_per_step", "eval_op_calls_per_batch", "by_kind_per_step"):
    assert key in epoch, f"metrics.jsonl lacks calls.{key}"
assert epoch["op_calls_per_step"] > 0 and epoch["by_kind_per_step"]["gemm"] > 0, epoch
for key in ("op_calls_per_step", "uploads_per_step", "side_op_calls_per_step",
            "by_kind_per_step"):
    assert plan[key] == epoch[key], f"--plan's {key} {plan[key]} != the run's {epoch[key]}"
print(f"op calls per step {epoch['op_calls_per_step']:.1f}, equal in --plan")
PY

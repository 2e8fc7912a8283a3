#!/usr/bin/env bash
# depbloom-train --classify end to end (docs/node_classification.md):
#   classify_case.sh DEPBLOOM_TRAIN WORK_DIR DATA_FILE
# trains a tiny TGN link-prediction checkpoint (1 epoch of 10 batches on the first 8,000
# WIKI events, whose val and test splits hold state-label positives), runs --classify on it
# and checks that metrics.jsonl holds validation and test ROC-AUC lines within [0, 1]; then
# classify.dropout = 1 must exit 2 and the same stream read without its label column exit 3,
# each with one message.
set -uo pipefail

bin=$1 work=$2 data=$3
case=classify
# shellcheck source=tests/cli/case_helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/case_helpers.sh"

rm -rf "$work"
mkdir -p "$work" || fail "cannot make $work"
quick=(--device cpu --set data.max_events=8000 --set data.cache=false --set run.progress=false)
run_checked 0 "$bin" "${quick[@]}" --data "$data" --set train.epoch=1 --set run.max_batches=10 \
  --out "$work/lp"
[[ -s $work/lp/best.ckpt ]] || fail "the link-prediction run wrote no best.ckpt"

run_checked 0 "$bin" --classify "$work/lp/best.ckpt" --set classify.epochs=3 --out "$work/nc"
python3 - "$work/nc/metrics.jsonl" <<'PY' || fail "bad metrics.jsonl"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r.get("task") == "node_classification"]
val = [r for r in rows if r["split"] == "val"]
test = [r for r in rows if r["split"] == "test"]
assert len(val) >= 1 and len(test) == 1, rows
for r in val + test:
    assert 0.0 <= r["auc"] <= 1.0, r
print("val rows", len(val), "test auc", test[0]["auc"])
PY

# A dropout that is not a probability: one clear config error naming the key.
run_checked 2 "$bin" --classify "$work/lp/best.ckpt" --set classify.dropout=1 --out "$work/bad"
grep -qF "classify.dropout" <<<"$out" || fail "the error does not name classify.dropout"

# The same stream read as a generic CSV without a label column: one clear data error.
run_checked 3 "$bin" --classify "$work/lp/best.ckpt" --set data.format=csv \
  --set data.columns.header=true --out "$work/nolabel"
grep -qF "has no label column" <<<"$out" || fail "the error does not say the labels are missing"
echo "PASS"

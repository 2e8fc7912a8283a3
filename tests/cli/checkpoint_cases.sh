#!/usr/bin/env bash
# depbloom-train end to end: checkpoints, --eval-only, --resume and config errors.
#   checkpoint_cases.sh DEPBLOOM_TRAIN WORK_DIR DATA_FILE CASE
# CASE is one of
#   ckpt_base          a short run (1 epoch of 5 batches on the first 20,000 events)
#                      into WORK_DIR/base; it must write last.ckpt and best.ckpt (the
#                      CTest fixture of the next four cases)
#   eval_only          --eval-only on a copy of base/best.ckpt exits 0 and prints a test AP
#   ckpt_flipped_byte  a copy of best.ckpt with its middle byte changed: exit 3 naming it
#   ckpt_truncated     a copy of best.ckpt cut to half its size: exit 3 naming it
#   resume             --resume of a copy of the base run with train.epoch=2 exits 0
#                      and adds the epoch-2 line (no second epoch-1 line) to metrics.jsonl
#   config_unknown_key a YAML file with an unknown key: exit 2 naming the key
#   config_wrong_type  a YAML file with a string where an integer goes: exit 2 naming the key
#   missing_data_named --data naming a file that does not exist: exit 3 naming the file
#   old_checkpoint     --eval-only of tests/fixtures/ckpt/best.ckpt, written by the code
#                      before the stages refactor, gives the test metrics it gave then
#   refine_resume      with refine.micro_batches=4 (rows refined every step): 1 epoch then
#                      --resume to 2 gives the straight 2-epoch run's losses and APs, and
#                      --eval-only of its best.ckpt prints its test AP (the refiner's
#                      parameters travel in the checkpoint)
#   stop_at_target     train.target_val_ap that any AP reaches with train.stop_at_target, 3
#                      epochs asked: it stops after epoch 1 and records reached_target and
#                      the run's totals (tests/cli/check_target.py)
# Each case prints the program's output, then what it checked.
set -uo pipefail

bin=$1 work=$2 data=$3 case=$4
quick=(--device cpu --data "$data" --set train.epoch=1 --set run.max_batches=5
       --set data.max_events=20000 --set data.cache=false --set run.progress=false)

# shellcheck source=tests/cli/case_helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/case_helpers.sh"

# run EXPECTED_RC ARGS...: runs depbloom-train, keeps its output in $out, checks the code.
run() {
  run_checked "$1" "$bin" "${@:2}"
}

# expect_in_output TEXT: the last run's output contains TEXT (fixed string).
expect_in_output() {
  grep -qF -- "$1" <<<"$out" || fail "the output does not mention '$1'"
}

# A fresh copy of the base run's best.ckpt in its own folder (--eval-only writes its
# metrics line beside the checkpoint).
copy_best() {
  local dir=$work/$case
  rm -rf "$dir"
  mkdir -p "$dir" || fail "cannot make $dir"
  [[ -s $work/base/best.ckpt ]] || fail "no $work/base/best.ckpt (did the ckpt_base case run?)"
  cp "$work/base/best.ckpt" "$dir/best.ckpt" || fail "cannot copy best.ckpt"
  ckpt=$dir/best.ckpt
}

case $case in
  ckpt_base)
    rm -rf "$work/base"
    mkdir -p "$work" || fail "cannot make $work"
    run 0 "${quick[@]}" --out "$work/base"
    for f in config.yaml metrics.jsonl last.ckpt best.ckpt; do
      [[ -s $work/base/$f ]] || fail "the run wrote no $f"
    done
    ;;
  eval_only)
    copy_best
    run 0 --eval-only "$ckpt"
    grep -qE 'test AP [0-9]+\.[0-9]+' <<<"$out" || fail "no test AP in the output"
    grep -q '"split":"test"' "$work/$case/metrics.jsonl" || fail "no test line in metrics.jsonl"
    ;;
  ckpt_flipped_byte)
    copy_best
    size=$(stat -c %s "$ckpt")
    at=$((size / 2))
    byte=$(od -An -tu1 -j "$at" -N 1 "$ckpt" | tr -d ' ')
    printf '%b' "\\0$(printf '%03o' $((byte ^ 0x5a)))" |
      dd of="$ckpt" bs=1 seek="$at" conv=notrunc status=none || fail "cannot flip byte $at"
    cmp -s "$ckpt" "$work/base/best.ckpt" && fail "the copy did not change"
    run 3 --eval-only "$ckpt"
    expect_in_output "$ckpt"
    ;;
  ckpt_truncated)
    copy_best
    size=$(stat -c %s "$ckpt")
    truncate -s $((size / 2)) "$ckpt" || fail "cannot truncate $ckpt"
    run 3 --eval-only "$ckpt"
    expect_in_output "$ckpt"
    ;;
  resume)
    rm -rf "$work/resume"
    [[ -s $work/base/last.ckpt ]] || fail "no $work/base/last.ckpt (did the ckpt_base case run?)"
    cp -r "$work/base" "$work/resume" || fail "cannot copy the base run"
    run 0 --resume "$work/resume" --set train.epoch=2
    python3 - "$work/resume/metrics.jsonl" <<'EOF' || fail "metrics.jsonl is not what a resumed run writes"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
epochs = [l["epoch"] for l in lines if "epoch" in l and l.get("split") != "test"]
print("epoch lines:", epochs)
sys.exit(0 if epochs == [1, 2] else 1)
EOF
    ;;
  config_unknown_key)
    mkdir -p "$work/config" && yaml=$work/config/unknown-key.yaml
    printf 'train:\n  epoch: 1\n  bogus_key: 3\n' >"$yaml"
    run 2 --config "$yaml" --out "$work/config/never"
    expect_in_output train.bogus_key
    expect_in_output unknown-key.yaml:3
    ;;
  config_wrong_type)
    mkdir -p "$work/config" && yaml=$work/config/wrong-type.yaml
    printf 'train:\n  batch_size: many\n' >"$yaml"
    run 2 --config "$yaml" --out "$work/config/never"
    expect_in_output train.batch_size
    expect_in_output wrong-type.yaml:2
    ;;
  missing_data_named)
    run 3 --device cpu --data "$work/no-such-dir/no-such.csv" --out "$work/missing"
    expect_in_output no-such.csv
    ;;
  refine_resume)
    rm -rf "${work:?}/$case"
    refine=(--set refine.micro_batches=4 --set train.batch_size=400)
    run 0 "${quick[@]}" "${refine[@]}" --set train.epoch=2 --out "$work/$case/straight"
    run 0 "${quick[@]}" "${refine[@]}" --out "$work/$case/resumed"
    run 0 --resume "$work/$case/resumed" --set train.epoch=2
    # Every "KEY":value of a metrics file, outside the per-stage times.
    values() { sed 's/"stage_s":{[^}]*}//' "$1" | grep -o "\"$2\":[^,}]*" | tail -n 4; }
    for f in loss ap ap_batch_mean refined_rows_per_batch; do
      a=$(values "$work/$case/straight/metrics.jsonl" "$f")
      b=$(values "$work/$case/resumed/metrics.jsonl" "$f")
      [[ -n $a && $a == "$b" ]] || fail "\"$f\" differs after --resume: $a against $b"
    done
    grep -q '"refined_rows_per_batch":[1-9]' "$work/$case/straight/metrics.jsonl" ||
      fail "no rows were refined"
    run 0 --eval-only "$work/$case/straight/best.ckpt"
    test_ap=$(grep '"split":"test"' "$work/$case/straight/metrics.jsonl" |
      grep -o '"test":{"ap":[0-9.]*' | grep -o '[0-9.]*$')
    expect_in_output "test AP $(printf '%.4f' "$test_ap")"
    ;;
  stop_at_target)
    rm -rf "${work:?}/$case"
    run 0 "${quick[@]}" --set train.epoch=3 --set train.target_val_ap=0.01 \
      --set train.stop_at_target=true --out "$work/$case"
    expect_in_output "train.target_val_ap reached at epoch 1"
    python3 "$(dirname "${BASH_SOURCE[0]}")/check_target.py" "$work/$case/metrics.jsonl" 1 ||
      fail "metrics.jsonl does not record the target as it should"
    ;;
  old_checkpoint)
    fixtures=$(dirname "${BASH_SOURCE[0]}")/../fixtures/ckpt
    rm -rf "$work/old" && mkdir -p "$work/old" || fail "cannot make $work/old"
    cp "$fixtures/best.ckpt" "$work/old/best.ckpt" || fail "cannot copy the fixture"
    run 0 --config "$fixtures/small_tgn.yaml" --data "$fixtures/small_jodie.csv" --device cpu \
      --eval-only "$work/old/best.ckpt"
    # What the pre-refactor binary printed for this checkpoint.
    expect_in_output "test AP 0.4982 AUC 0.4814 (per-batch mean AP 0.5054 AUC 0.4866)"
    expect_in_output "test (new nodes) AP 0.5512 AUC 0.5306 (per-batch mean AP 0.5512 AUC 0.5306)"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "PASS ($case)"

#!/usr/bin/env bash
# depbloom-train end to end with the data.* keys of docs/data.md, on files made here from
# the first 3,000 events of the shipped WIKI stream.
#   data_cases.sh DEPBLOOM_TRAIN WORK_DIR WIKI_CSV CASE
# CASE is one of
#   csv_columns        the events as a headerless ';'-separated CSV in another column order,
#                      read through data.columns.*, train to the same first-step loss as the
#                      JODIE CSV they came from; data.cache_dir holds the cache
#   edge_features      data.edge_features: a 3-wide .npy beside a featureless CSV trains,
#                      logs 3 edge features and makes a model with more parameters; with
#                      data.node_features a 2-wide one per node loads too
#   features_wrong_rows  edge features with one row too few, node features with too few
#                      rows: exit 3 naming the file and both counts
#   column_past_row    data.columns.time beyond the row's fields: exit 3 naming the file,
#                      the line and the key
#   konect_weight      a KONECT file's weights become a 1-wide edge feature, none with
#                      data.weight_as_feature: false
#   dtype_f64          run.dtype: f64 trains on the CPU
# Each case prints the program's output, then what it checked.
set -uo pipefail
# shellcheck disable=SC2154  # $out is set by run_checked (case_helpers.sh)

bin=$1 work=$2 wiki=$3 case=$4
events=3000
quick=(--device cpu --threads 2 --set train.epoch=1 --set run.max_batches=1
       --set train.batch_size=200 --set run.checkpoint=false --set run.progress=false
       --set run.step_log=true --set data.cache=false)

# shellcheck source=tests/cli/case_helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/case_helpers.sh"

run() {
  run_checked "$1" "$bin" "${@:2}"
}

expect_in_output() {
  grep -qF -- "$1" <<<"$out" || fail "the output does not mention '$1'"
}

# first_loss RUN_DIR: the loss of the run's first training step.
first_loss() {
  head -n 1 "$1/steps.jsonl" | python3 -c 'import json, sys; print(repr(json.load(sys.stdin)["loss"]))'
}

# parameters: the model size the last run logged.
parameters() {
  sed -n 's/.*model: \([0-9]*\) parameters.*/\1/p' <<<"$out"
}

# write_npy FILE ROWS COLS: a float32 .npy whose value (r, c) is ((r * 7 + c) % 11) / 10.
write_npy() {
  python3 - "$@" <<'EOF' || fail "cannot write $1"
import struct, sys
path, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    for r in range(rows):
        f.write(struct.pack("<%df" % cols, *[((r * 7 + c) % 11) / 10 for c in range(cols)]))
EOF
}

dir=$work/$case
rm -rf "$dir"
mkdir -p "$dir" || fail "cannot make $dir"
jodie=$dir/wiki_prefix.csv
head -n $((events + 1)) "$wiki" >"$jodie" || fail "cannot cut $wiki"
# u,i,ts,label (CRLF) -> ts;label;i;u (LF) without a header
headerless=$dir/wiki_prefix.txt
tail -n +2 "$jodie" | tr -d '\r' | awk -F, '{print $3 ";" $4 ";" $2 ";" $1}' >"$headerless"
columns=(--set data.format=csv --set data.columns.header=false --set "data.columns.delimiter=;"
         --set data.columns.time=0 --set data.columns.label=1 --set data.columns.dst=2
         --set data.columns.src=3 --set data.columns.bipartite=true)

case $case in
  csv_columns)
    run 0 "${quick[@]}" --data "$jodie" --out "$dir/jodie"
    expect_in_output "is jodie"
    run 0 "${quick[@]}" --data "$headerless" "${columns[@]}" --set data.cache=true \
      --set "data.cache_dir=$dir/cache" --out "$dir/csv"
    expect_in_output "is csv"
    [[ -n $(ls -A "$dir/cache" 2>/dev/null) ]] || fail "data.cache_dir holds no cache"
    want=$(first_loss "$dir/jodie") got=$(first_loss "$dir/csv")
    echo "first-step loss: JODIE CSV $want, headerless CSV $got"
    [[ -n $want && $want == "$got" ]] || fail "the first-step losses differ"
    ;;
  edge_features)
    run 0 "${quick[@]}" --data "$headerless" "${columns[@]}" --out "$dir/plain"
    plain=$(parameters)
    write_npy "$dir/x.npy" "$events" 3
    write_npy "$dir/nodes.npy" 919 2  # the prefix's 589 users and 330 items
    run 0 "${quick[@]}" --data "$headerless" "${columns[@]}" \
      --set "data.edge_features=$dir/x.npy" --set "data.node_features=$dir/nodes.npy" \
      --out "$dir/features"
    expect_in_output "3 edge features, 2 node features"
    wide=$(parameters)
    echo "parameters: $plain without features, $wide with 3 edge features"
    [[ -n $plain && -n $wide && $wide -gt $plain ]] || fail "the features did not widen the model"
    [[ $(grep -c '"loss"' "$dir/features/steps.jsonl") -eq 1 ]] || fail "no training step logged"
    ;;
  features_wrong_rows)
    write_npy "$dir/short.npy" $((events - 1)) 3
    run 3 "${quick[@]}" --data "$headerless" "${columns[@]}" \
      --set "data.edge_features=$dir/short.npy" --out "$dir/never"
    expect_in_output "short.npy: $((events - 1)) rows of edge features for $events events"
    write_npy "$dir/nodes.npy" 10 2
    run 3 "${quick[@]}" --data "$headerless" "${columns[@]}" \
      --set "data.node_features=$dir/nodes.npy" --out "$dir/never"
    expect_in_output "nodes.npy: has no row for node"
    expect_in_output ": 10 rows of node features, 919 needed"
    ;;
  column_past_row)
    run 3 "${quick[@]}" --data "$headerless" "${columns[@]}" --set data.columns.time=7 \
      --out "$dir/never"
    expect_in_output "wiki_prefix.txt:1: data.columns.time is column 7 (0-based), but the line has 4 fields"
    ;;
  konect_weight)
    konect=$dir/out.wiki
    { echo "% asym weighted"; tail -n +2 "$jodie" | awk -F, '{print $1 "\t" $2 "\t" NR % 5 + 1 "\t" $3}'; } >"$konect"
    run 0 "${quick[@]}" --data "$konect" --out "$dir/weights"
    expect_in_output "is konect"
    expect_in_output "1 edge features"
    run 0 "${quick[@]}" --data "$konect" --set data.weight_as_feature=false --out "$dir/none"
    expect_in_output "0 edge features"
    ;;
  dtype_f64)
    run 0 "${quick[@]}" --data "$jodie" --set run.dtype=f64 --out "$dir/f64"
    expect_in_output "(f64)"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "PASS ($case)"

#!/usr/bin/env bash
# depbloom-train under mpirun: dist.communicator, and the threads of hand-started ranks
# (tests/CMakeLists.txt, label mpi).
#   mpi_cli_cases.sh DEPBLOOM_TRAIN MPIRUN WORK_DIR CASE
# CASE is one of
#   one_rank_mpi     one rank with dist.communicator=mpi runs the strict strategy with its
#                    collectives (sync points in metrics.jsonl) and gives the very numbers of
#                    the plain single-device run: the same epoch loss, validation and test AP
#   nccl_on_cpu      dist.communicator=nccl with --device cpu: exit 2 naming the key
#   local_two_ranks  dist.communicator=local under mpirun -np 2: exit 2 naming the key
#   rank_threads     mpirun -np 2 without OMP_NUM_THREADS or run.threads: each rank uses
#                    the machine's cores over 2 (at least 1), as --ranks 2 does
#   depbloom_resume  the depbloom strategy on 2 ranks: 1 epoch then --resume to 2 gives the
#                    straight 2-epoch run's epoch-2 loss and APs and its test AP, and
#                    --eval-only of its best.ckpt on 2 ranks prints that test AP
set -uo pipefail

bin=$1 mpirun=$2 work=$3 case=$4
quick=(--device cpu --set train.epoch=1 --set run.max_batches=4 --set data.max_events=20000
       --set run.progress=false --set run.checkpoint=false)
launch=("$mpirun" --oversubscribe --allow-run-as-root --bind-to none)

# shellcheck source=tests/cli/case_helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cli/case_helpers.sh"
CASE_TIMEOUT=120 CASE_TAIL=4  # read by run_checked
export CASE_TIMEOUT CASE_TAIL

# run EXPECTED_RC COMMAND...: keeps the output in $out and checks the exit code.
run() {
  run_checked "$@"
}

# field FILE KEY: every "KEY":value of FILE, outside the per-stage times (a stage may share
# a metric's name: "loss").
field() {
  sed 's/"stage_s":{[^}]*}//' "$1" | grep -o "\"$2\":[^,}]*"
}

rm -rf "${work:?}/$case"
mkdir -p "$work/$case"
case $case in
  one_rank_mpi)
    run 0 "$bin" "${quick[@]}" --out "$work/$case/local"
    run 0 "${launch[@]}" -np 1 "$bin" "${quick[@]}" --set dist.communicator=mpi \
      --out "$work/$case/mpi"
    for f in loss ap ap_batch_mean auc; do
      a=$(field "$work/$case/local/metrics.jsonl" "$f")
      b=$(field "$work/$case/mpi/metrics.jsonl" "$f")
      [[ -n $a ]] || fail "no \"$f\" in the single-device metrics.jsonl"
      [[ $a == "$b" ]] || fail "\"$f\" differs: single-device $a, one mpi rank $b"
    done
    [[ $(field "$work/$case/local/metrics.jsonl" sync_points | head -n 1) == '"sync_points":0' ]] ||
      fail "the single-device run made collectives"
    sync=$(field "$work/$case/mpi/metrics.jsonl" sync_points | head -n 1)
    [[ $sync =~ ^\"sync_points\":[1-9][0-9]*$ ]] || fail "one mpi rank made no collective ($sync)"
    echo "ok: identical loss and APs; one mpi rank: $sync"
    ;;
  nccl_on_cpu)
    run 2 "$bin" "${quick[@]}" --set dist.communicator=nccl --out "$work/$case/run"
    grep -q 'dist.communicator' <<<"$out" || fail "the message does not name dist.communicator"
    ;;
  local_two_ranks)
    run 2 "${launch[@]}" -np 2 "$bin" "${quick[@]}" --set dist.communicator=local \
      --out "$work/$case/run"
    grep -q 'dist.communicator: local serves one rank' <<<"$out" ||
      fail "the message does not name dist.communicator"
    ;;
  rank_threads)
    cores=$(getconf _SC_NPROCESSORS_ONLN)
    want=$((cores / 2 > 0 ? cores / 2 : 1))
    run 0 env -u OMP_NUM_THREADS "${launch[@]}" -np 2 "$bin" "${quick[@]}" --set run.max_batches=1 \
      --out "$work/$case/run"
    grep -q "device cpu, $want CPU threads" <<<"$out" ||
      fail "expected $want CPU threads per rank on $cores cores: $(grep -o 'device cpu, [0-9]* CPU threads' <<<"$out")"
    ;;
  depbloom_resume)
    db=(--set strategy.name=depbloom --set partition.method=fennel --set train.batch_size=400
        --set partition.window_steps=2 --set run.checkpoint=true)
    run 0 "${launch[@]}" -np 2 "$bin" "${quick[@]}" "${db[@]}" --set train.epoch=2 \
      --out "$work/$case/straight"
    run 0 "${launch[@]}" -np 2 "$bin" "${quick[@]}" "${db[@]}" --out "$work/$case/resumed"
    run 0 "${launch[@]}" -np 2 "$bin" --resume "$work/$case/resumed" --set train.epoch=2
    for f in loss ap ap_batch_mean exchange_bytes; do
      a=$(field "$work/$case/straight/metrics.jsonl" "$f" | tail -n 4)
      b=$(field "$work/$case/resumed/metrics.jsonl" "$f" | tail -n 4)
      [[ -n $a && $a == "$b" ]] || fail "\"$f\" differs after --resume: $a against $b"
    done
    run 0 "${launch[@]}" -np 2 "$bin" --eval-only "$work/$case/straight/best.ckpt"
    test_ap=$(grep '"split":"test"' "$work/$case/straight/metrics.jsonl" |
      grep -o '"test":{"ap":[0-9.]*' | grep -o '[0-9.]*$')
    grep -q "test AP $(printf '%.4f' "$test_ap")" <<<"$out" ||
      fail "--eval-only does not print the run's test AP $test_ap"
    echo "ok: resumed run equals the straight one; --eval-only test AP $test_ap"
    ;;
  *)
    fail "unknown case"
    ;;
esac

#!/usr/bin/env bash
# A hung rank (tests/CMakeLists.txt, label mpi; the GPU variants from tools/gpu-check.sh and
# label gpu): rank 1 stops making progress in epoch 1 (DEPBLOOM_TEST_HANG_RANK=1: it sleeps
# before its 10th collective) while rank 0 waits for it in a collective. With
# dist.timeout_s = 10, rank 0's watchdog must end every rank within 10 + 10 s of rank 1's
# hang (60 s in all at most): exit code 4, rank 0 naming itself and the collective it waited
# in, and no process of the run left behind.
# Usage: rank_hang.sh DEPBLOOM_TRAIN RUN_FOLDER [DEVICE [COMMUNICATOR]]
#   DEVICE cpu (default) or cuda; COMMUNICATOR auto (default), mpi or nccl. With cuda and
#   mpi the two ranks share GPU 0 (what one GPU allows); nccl needs a GPU per rank.
set -u
train=$1
out=$2
device=${3:-cpu}
comm=${4:-auto}
timeout_s=10
if [[ $device == cuda* ]] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIP: no GPU"
  exit 77
fi
rm -rf "$out"
mkdir -p "$(dirname "$out")"
log="$out.log"
: >"$log"
start=$SECONDS
DEPBLOOM_TEST_HANG_RANK=1 timeout -k 5 60 "$train" --ranks 2 --device "$device" \
  --set train.epoch=1 --set run.max_batches=5 --set data.max_events=20000 \
  --set dist.timeout_s=$timeout_s --set dist.communicator="$comm" --out "$out" >"$log" 2>&1 &
pid=$!
# When rank 1 says it hangs: the clock the limit runs on.
hang_at=
while kill -0 "$pid" 2>/dev/null; do
  [[ -z $hang_at ]] && grep -q 'hanging on purpose' "$log" && hang_at=$SECONDS
  sleep 0.2
done
wait "$pid"
rc=$?
[[ -z $hang_at ]] && grep -q 'hanging on purpose' "$log" && hang_at=$SECONDS
elapsed=$((SECONDS - start))
tail -6 "$log"
echo "exit=$rc after ${elapsed} s ($device, $comm; $((SECONDS - ${hang_at:-$SECONDS})) s after the hang)"
fail() {
  echo "FAIL: $*"
  exit 1
}
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "still running after 60 s: the hang was not detected"
[ "$rc" -eq 4 ] || fail "expected exit code 4 (a rank timed out), got $rc"
grep -q 'rank 1/2.*hanging on purpose' "$log" || fail "rank 1 did not hang as asked"
grep -q 'rank 0/2.*timed out: waited .* s in .* (collective #[0-9]* on this rank)' "$log" ||
  fail "no message from rank 0 naming the timed-out collective"
# Polled every 0.2 s, so one more second of slack on top of dist.timeout_s + 10 s.
((SECONDS - hang_at <= timeout_s + 11)) ||
  fail "the ranks ended $((SECONDS - hang_at)) s after the hang (limit dist.timeout_s + 10 s)"
# mpirun reaps its ranks before it exits; allow the kernel a moment anyway.
for _ in $(seq 50); do
  pgrep -f -- "--out $out" >/dev/null || exit 0
  sleep 0.1
done
pgrep -af -- "--out $out"
fail "processes of the run are left"

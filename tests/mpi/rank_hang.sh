#!/usr/bin/env bash
# A hung rank (tests/CMakeLists.txt, label mpi): rank 1 stops making progress in epoch 1
# (DEPBLOOM_TEST_HANG_RANK=1: it sleeps before its 10th collective) while rank 0 waits for it
# in a collective. With dist.timeout_s = 10, rank 0's watchdog must end every rank within
# 60 s: exit code 4, rank 0 naming itself and the collective it waited in, and no process of
# the run left behind.
# Usage: rank_hang.sh DEPBLOOM_TRAIN RUN_FOLDER
set -u
train=$1
out=$2
rm -rf "$out"
mkdir -p "$(dirname "$out")"
log="$out.log"
start=$SECONDS
DEPBLOOM_TEST_HANG_RANK=1 timeout -k 5 60 "$train" --ranks 2 --device cpu --set train.epoch=1 \
  --set run.max_batches=5 --set data.max_events=20000 --set dist.timeout_s=10 --out "$out" \
  >"$log" 2>&1
rc=$?
elapsed=$((SECONDS - start))
tail -6 "$log"
echo "exit=$rc after ${elapsed} s"
fail() {
  echo "FAIL: $*"
  exit 1
}
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "still running after 60 s: the hang was not detected"
[ "$rc" -eq 4 ] || fail "expected exit code 4 (a rank timed out), got $rc"
grep -q 'rank 1/2.*hanging on purpose' "$log" || fail "rank 1 did not hang as asked"
grep -q 'rank 0/2.*timed out: waited .* s in .* (collective #[0-9]* on this rank)' "$log" ||
  fail "no message from rank 0 naming the timed-out collective"
# mpirun reaps its ranks before it exits; allow the kernel a moment anyway.
for _ in $(seq 50); do
  pgrep -f -- "--out $out" >/dev/null || exit 0
  sleep 0.1
done
pgrep -af -- "--out $out"
fail "processes of the run are left"

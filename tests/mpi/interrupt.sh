#!/usr/bin/env bash
# Ctrl-C and SIGTERM (tests/CMakeLists.txt): a signal sent once training has started must
# end the run within 30 s with exit status 128 + signal (130 for SIGINT, 143 for SIGTERM), one
# line naming the signal, and no process of the run left behind.
# Usage: interrupt.sh DEPBLOOM_TRAIN RUN_FOLDER SIGNAL MODE [MPIRUN]
#   MODE single: plain depbloom-train; ranks: depbloom-train --ranks 2 (the launcher gets the
#   signal); mpirun: mpirun -np 2 depbloom-train (mpirun gets it and exits with its own
#   status, non-zero; rank 0 prints the line).
set -u
train=$1
out=$2
sig=$3
mode=$4
mpirun=${5:-mpirun}
rm -rf "$out"
mkdir -p "$(dirname "$out")"
log="$out.log"
rm -f "$log"  # an earlier run's log would show its "epoch 1 [" line before ours truncates it
pid=
fail() {
  echo "FAIL: $*"
  tail -20 "$log"
  if [ -n "$pid" ]; then  # the run's process group: the launcher and mpirun, which ends its ranks
    kill -TERM -- "-$pid" 2>/dev/null
    sleep 3
    kill -KILL -- "-$pid" 2>/dev/null
  fi
  exit 1
}
args=(--device cpu --set train.epoch=100 --set data.max_events=20000 --set run.log_every=1
  --set run.checkpoint=false --out "$out")
# Job control: the background job gets its own process group and, unlike a job started
# without it, does not ignore SIGINT.
set -m
case "$mode" in
  single) "$train" "${args[@]}" >"$log" 2>&1 & ;;
  ranks) "$train" --ranks 2 "${args[@]}" >"$log" 2>&1 & ;;
  mpirun) "$mpirun" --oversubscribe --allow-run-as-root --bind-to none -np 2 "$train" "${args[@]}" \
    >"$log" 2>&1 & ;;
  *) fail "unknown mode $mode" ;;
esac
pid=$!
# Training has started once rank 0 logs its first progress line.
for _ in $(seq 1200); do
  grep -q 'epoch 1 \[' "$log" && break
  kill -0 "$pid" 2>/dev/null || fail "the run ended before training started"
  sleep 0.1
done
grep -q 'epoch 1 \[' "$log" || fail "training did not start within 120 s"
start=$SECONDS
# SIGINT as a terminal's Ctrl-C sends it, to the whole foreground process group (the launcher
# and mpirun alike); SIGTERM as `kill PID` sends it, to the one process.
if [ "$sig" = INT ]; then kill -s INT -- "-$pid"; else kill -s "$sig" "$pid"; fi
for _ in $(seq 300); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$pid" 2>/dev/null && fail "still running 30 s after SIG$sig"
wait "$pid"
rc=$?
echo "exit=$rc $((SECONDS - start)) s after SIG$sig"
tail -4 "$log"
case "$sig" in
  INT) want=130 ;;
  TERM) want=143 ;;
  *) fail "unknown signal $sig" ;;
esac
if [ "$mode" = mpirun ]; then
  [ "$rc" -ne 0 ] || fail "exit status 0 after SIG$sig"
  grep -q '^\[rank 0/2\] stopped by SIGTERM' "$log" || fail "no line from rank 0"
else
  [ "$rc" -eq "$want" ] || fail "expected exit status $want, got $rc"
  [ "$(grep -c 'stopped by' "$log")" -eq 1 ] || fail "expected one 'stopped by' line"
  grep -q "^depbloom-train: stopped by SIG$sig" "$log" || fail "no line naming SIG$sig"
fi
for _ in $(seq 50); do
  pgrep -f -- "--out $out" >/dev/null || exit 0
  sleep 0.1
done
pgrep -af -- "--out $out"
fail "processes of the run are left"

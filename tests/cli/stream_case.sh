#!/usr/bin/env bash
# depbloom-stream end to end (docs/streaming.md):
#   stream_case.sh DEPBLOOM_TRAIN DEPBLOOM_STREAM WORK_DIR DATA_FILE
# trains a tiny TGN checkpoint on the first 2,000 WIKI events, then streams the last events
# of that cut (its test split) with queries, mixed with a malformed line, an out-of-order
# event and a query on two unseen ids beyond stream.new_node_capacity: each bad line is
# reported with its number on stderr and skipped, every good query is answered on stdout
# ("line,logit,probability"), exit 0. Then SIGTERM on a followed file: what was read is
# applied, the updated state written (no temp file left), exit 143; it loads again.
set -uo pipefail

train=$1 stream=$2 work=$3 data=$4
case=stream
# shellcheck source=tests/cli/case_helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/case_helpers.sh"

rm -rf "$work"
mkdir -p "$work" || fail "cannot make $work"
run_checked 0 "$train" --device cpu --set data.max_events=2000 --set data.cache=false \
  --set run.progress=false --data "$data" --set train.epoch=1 --set run.max_batches=3 \
  --out "$work/lp" >/dev/null
ckpt=$work/lp/best.ckpt
[[ -s $ckpt ]] || fail "the training run wrote no best.ckpt"

# Rows 1991..2000 of the file: test-split events, in time order (CRLF as shipped).
mapfile -t ev < <(sed -n '1992,2001p' "$data" | tr -d '\r')
field() { cut -d, -f"$2" <<<"$1"; }
q() { echo "?,$(field "$1" 1),$(field "$1" 2),$(field "$1" 3)"; }
t_last=$(field "${ev[9]}" 3)
{
  q "${ev[0]}"                    # 1 answered
  echo "${ev[0]}"                 # 2
  echo "1,2"                      # 3 malformed
  echo "5,8300,0,0"               # 4 older than the latest time
  echo "?,99999901,99999902,$t_last"  # 5 two new ids, room for one: rejected
  for i in 1 2 3 4 5 6 7 8; do   # 6..21
    q "${ev[$i]}"
    echo "${ev[$i]}"
  done
  echo "?,99999901,$(field "${ev[9]}" 2),$t_last"  # 22 one new id: answered
  echo "${ev[9]}"                 # 23
} >"$work/in.csv"

out=$(timeout 120 "$stream" "$ckpt" --input "$work/in.csv" --set stream.batch_size=4 \
  --set stream.new_node_capacity=1 2>"$work/err.txt")
rc=$?
cat "$work/err.txt"
echo "$out"
[[ $rc -eq 0 ]] || fail "exit $rc, expected 0"
for n in 3 4 5; do
  grep -q "line $n: " "$work/err.txt" || fail "no error for line $n"
done
grep -q "line 3: an event is" "$work/err.txt" || fail "line 3 not reported as malformed"
grep -q "line 4: time 0 is older" "$work/err.txt" || fail "line 4 not reported as out of order"
grep -q "line 5: a node id new to the stream" "$work/err.txt" || fail "line 5 not over capacity"
lines=$(cut -d, -f1 <<<"$out" | tr '\n' ' ')
[[ $lines == "1 6 8 10 12 14 16 18 20 22 " ]] || fail "answered lines: $lines"
python3 - "$out" <<'PY' || fail "an answer is not line,logit,probability"
import math, sys
for row in sys.argv[1].split("\n"):
    line, logit, prob = row.split(",")
    assert abs(1 / (1 + math.exp(-float(logit))) - float(prob)) < 1e-6, row
PY
grep -q "10 events applied" "$work/err.txt" || fail "the summary does not count 10 events"
grep -q "3 lines rejected; 1 new nodes" "$work/err.txt" || fail "the summary's counts"
grep -q "p50 .* ms, p99 .* ms" "$work/err.txt" || fail "no latency in the summary"

# SIGTERM while following a file that grows: what was read is applied, the state written.
head -n 2 "$work/in.csv" >"$work/live.csv"
"$stream" "$ckpt" --input "$work/live.csv" --follow --set stream.max_delay_ms=20 \
  --checkpoint-out "$work/after.ckpt" >"$work/live.out" 2>"$work/live.err" &
pid=$!
for _ in $(seq 1 200); do
  [[ -s $work/live.out ]] && break
  sleep 0.05
done
[[ -s $work/live.out ]] || { kill -KILL "$pid"; fail "no answer from the followed file"; }
sed -n '6,7p' "$work/in.csv" >>"$work/live.csv"
for _ in $(seq 1 200); do
  [[ $(wc -l <"$work/live.out") -ge 2 ]] && break
  sleep 0.05
done
kill -TERM "$pid"
wait "$pid"
rc=$?
cat "$work/live.err"
[[ $rc -eq 143 ]] || fail "exit $rc after SIGTERM, expected 143"
[[ $(wc -l <"$work/live.out") -eq 2 ]] || fail "answers: $(cat "$work/live.out")"
grep -q "2 events applied" "$work/live.err" || fail "the read events were not applied"
[[ -s $work/after.ckpt ]] || fail "no checkpoint written on SIGTERM"
compgen -G "$work/after.ckpt.tmp*" >/dev/null && fail "a temporary checkpoint was left"
run_checked 0 "$stream" "$work/after.ckpt" --input /dev/null
echo "PASS"

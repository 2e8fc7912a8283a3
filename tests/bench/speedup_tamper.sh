#!/usr/bin/env bash
# speedup.sh's check must catch a wrong row (APs, bytes, P = 1 equality and the time-to-target
# cells): on copies of the smoke run's speedup.csv/.json and one run folder, each tampered once, `speedup_report.py check` must exit 1 naming the
# mismatch; the untouched copy must pass.
#   speedup_tamper.sh REPORT_PY SMOKE_OUT_DIR WORK_DIR
set -euo pipefail
report=$1 smoke=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
check() { python3 "$report" check --csv "$work/speedup.csv" --json "$work/speedup.json" 2>&1; }
fresh() { cp "$smoke/speedup.csv" "$smoke/speedup.json" "$work/"; }

# expect_fail WHAT PATTERN: the check exits 1 and prints PATTERN.
expect_fail() {
  local out rc=0
  out=$(check) || rc=$?
  if [[ $rc -ne 1 ]] || ! grep -q "$2" <<<"$out"; then
    echo "FAIL: $1 not caught (exit $rc):"; echo "$out"; exit 1
  fi
  echo "caught: $1"
}

fresh
check >/dev/null || { echo "FAIL: the untouched smoke output does not pass"; check; exit 1; }

# 1. A test AP in the CSV one part in a million off.
fresh
python3 - "$work/speedup.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
r = next(r for r in rows if r["status"] == "exit 0")
r["test_ap_batch_mean"] = repr(float(r["test_ap_batch_mean"]) * (1 + 1e-6))
w = csv.DictWriter(open(sys.argv[1], "w", newline=""), fieldnames=rows[0].keys())
w.writeheader(); w.writerows(rows)
PY
expect_fail "a CSV AP off" "test_ap_batch_mean .* in metrics.jsonl"

# 2. P = 1 depbloom's AP not strict's.
fresh
python3 - "$work/speedup.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = next(r for r in d["runs"] if r["ranks"] == 1 and r["config"] == "depbloom")
r["test_ap_batch_mean"] += 1e-9
json.dump(d, open(sys.argv[1], "w"))
PY
expect_fail "P = 1 strict and depbloom apart" "must be equal"

# 3. A P = 2 run whose all_reduce bytes differ from its plan's forecast.
fresh
python3 - "$work/speedup.csv" "$work/run" <<'PY'
import csv, json, shutil, sys
path, copy = sys.argv[1:3]
rows = list(csv.DictReader(open(path)))
r = next(r for r in rows if r["status"] == "exit 0" and r["ranks"] == "2")
shutil.copytree(r["run_dir"], copy)
lines = [json.loads(l) for l in open(f"{copy}/metrics.jsonl")]
next(l for l in lines if "comm" in l)["comm"]["all_reduce"]["bytes"] += 4
open(f"{copy}/metrics.jsonl", "w").write("".join(json.dumps(l) + "\n" for l in lines))
r["run_dir"] = copy
w = csv.DictWriter(open(path, "w", newline=""), fieldnames=rows[0].keys())
w.writeheader(); w.writerows(rows)
PY
expect_fail "bytes off the plan" "all_reduce bytes .* the plan forecast"

# 4. A run's epochs to target one off in the CSV.
fresh
python3 - "$work/speedup.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
r = next(r for r in rows if r["epochs_to_target"])
r["epochs_to_target"] = str(int(r["epochs_to_target"]) + 1)
w = csv.DictWriter(open(sys.argv[1], "w", newline=""), fieldnames=rows[0].keys())
w.writeheader(); w.writerows(rows)
PY
expect_fail "epochs to target off" "epochs_to_target .* from metrics.jsonl"

# 5. The reference's validation AP raised in its metrics.jsonl: the target moves, and the CSV's
# target no longer follows from the runs.
fresh
python3 - "$work/speedup.csv" "$work/ref" <<'PY'
import csv, json, shutil, sys
path, copy = sys.argv[1:3]
rows = list(csv.DictReader(open(path)))
r = next(r for r in rows if r["ranks"] == "1" and r["config"] == "strict")
shutil.copytree(r["run_dir"], copy)
lines = [json.loads(l) for l in open(f"{copy}/metrics.jsonl")]
next(l for l in lines if "val" in l)["val"]["ap_batch_mean"] += 0.01
open(f"{copy}/metrics.jsonl", "w").write("".join(json.dumps(l) + "\n" for l in lines))
r["run_dir"] = copy
w = csv.DictWriter(open(path, "w", newline=""), fieldnames=rows[0].keys())
w.writeheader(); w.writerows(rows)
PY
expect_fail "a target not the reference's" "target .* from metrics.jsonl"

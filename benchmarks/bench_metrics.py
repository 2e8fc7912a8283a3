"""What the training benchmarks (train_models.sh, strict_scaling.sh) share when they turn
run folders into one JSON file: the commit, a run's device line and metrics.jsonl, and
an atomic write."""
import json
import os
import re
import subprocess
import sys


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:
        return None


def run_device(run):
    """(device, CPU threads) from the run's train.log, or None when it has no such line."""
    log = os.path.join(run, "train.log")
    if not os.path.exists(log):
        return None
    m = re.search(r"depbloom-train: device (\S+), (\d+) CPU threads",
                  open(log, errors="replace").read())
    return (m.group(1).rstrip(","), int(m.group(2))) if m else None


def run_metrics(run):
    """(epoch lines, test lines) of the run's metrics.jsonl; both empty when it is missing."""
    path = os.path.join(run, "metrics.jsonl")
    if not os.path.exists(path):
        return [], []
    lines = [json.loads(l) for l in open(path) if l.strip()]
    epochs = [l for l in lines if "epoch" in l and l.get("split") != "test"]
    tests = [l for l in lines if l.get("split") == "test"]
    return epochs, tests


def write_json(out, result, tag):
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    os.replace(tmp, out)
    print(f"[{tag}] wrote {out}", file=sys.stderr)

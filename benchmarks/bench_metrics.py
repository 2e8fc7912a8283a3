"""What the training benchmarks' reports (benchmarks/*_report.py) share when they turn run
folders into one JSON file: the commit, the machine, a run's device line and metrics.jsonl,
a manifest's lines, the means and number formats of the tables, and an atomic write."""
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

# The collective kinds a metrics.jsonl epoch line counts under "comm".
COLLECTIVE_KINDS = ("all_reduce", "all_gather", "all_gather_v", "broadcast", "barrier")


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:
        return None


def cpu_model(cpuinfo="/proc/cpuinfo"):
    """The CPU's model name, or None when cpuinfo names none."""
    with open(cpuinfo) as f:
        for line in f:
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


def utc_now():
    """Now, in UTC, to the second (ISO 8601): when a report was generated."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_device(run):
    """(device, CPU threads) from the run's train.log, or None when it has no such line."""
    log = os.path.join(run, "train.log")
    if not os.path.exists(log):
        return None
    with open(log, errors="replace") as f:
        m = re.search(r"depbloom-train: device (\S+), (\d+) CPU threads", f.read())
    return (m.group(1).rstrip(","), int(m.group(2))) if m else None


def run_metrics(run):
    """(epoch lines, test lines) of the run's metrics.jsonl; both empty when it is missing."""
    path = os.path.join(run, "metrics.jsonl")
    if not os.path.exists(path):
        return [], []
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    epochs = [l for l in lines if "epoch" in l and l.get("split") != "test"]
    tests = [l for l in lines if l.get("split") == "test"]
    return epochs, tests


def manifest_lines(path):
    """The tab-separated fields of each line of a benchmark's manifest.tsv."""
    with open(path) as f:
        return [l.rstrip("\n").split("\t") for l in f if l.strip()]


def known_mean(values):
    """The mean of the values that are not None; None when there are none."""
    v = [x for x in values if x is not None]
    return statistics.fmean(v) if v else None


def fixed(x, digits):
    """x with `digits` decimals, or "-" for None (a table cell)."""
    return "-" if x is None else f"{x:.{digits}f}"


def write_json(out, result, tag):
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    os.replace(tmp, out)
    print(f"[{tag}] wrote {out}", file=sys.stderr)

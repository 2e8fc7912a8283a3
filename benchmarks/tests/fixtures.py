"""Synthetic run folders, as depbloom-train writes them, for the report tests: a
metrics.jsonl (epoch lines, then the test line), a train.log with the device line, and the
manifests the benchmark scripts append to."""
import json
import os


def comm(calls, nbytes, **extra):
    """An epoch line's "comm": `calls` and `nbytes` for each collective kind, with extra keys."""
    kinds = ("all_reduce", "all_gather", "all_gather_v", "broadcast", "barrier")
    c = {k: {"calls": calls, "bytes": nbytes} for k in kinds}
    c.update(extra)
    return c


def test_line(best_epoch, ap, new_ap, **extra):
    """The final test line: AP (whole and per-batch mean) transductive and new node."""
    t = {"split": "test", "best_epoch": best_epoch,
         "test": {"ap": ap, "ap_batch_mean": ap - 0.01, "auc": ap + 0.01,
                  "auc_batch_mean": ap, "events": 100},
         "test_new_nodes": {"ap": new_ap, "ap_batch_mean": new_ap - 0.01, "auc": new_ap,
                            "auc_batch_mean": new_ap, "events": 20}}
    t.update(extra)
    return t


def write_run(run, epochs, test=None, device=None):
    """A run folder `run` with metrics.jsonl (the epoch lines, then `test`) and, given
    device = (name, threads), a train.log with depbloom-train's device line."""
    os.makedirs(run, exist_ok=True)
    with open(os.path.join(run, "metrics.jsonl"), "w") as f:
        for i, e in enumerate(epochs, 1):
            f.write(json.dumps(dict({"epoch": i}, **e)) + "\n")
        if test is not None:
            f.write(json.dumps(test) + "\n")
    if device is not None:
        with open(os.path.join(run, "train.log"), "w") as f:
            f.write(f"[x] depbloom-train: device {device[0]}, {device[1]} CPU threads\n")
    return run


def write_manifest(path, rows):
    """manifest.tsv with one tab-separated line per row."""
    with open(path, "w") as f:
        for row in rows:
            f.write("\t".join(str(x) for x in row) + "\n")
    return path

"""train_models.sh's report: its runs (one argument MODEL=RUN_FOLDER=EXIT_CODE each) into
one JSON file: per model the seconds per epoch, events/s, validation AP per epoch and the
test AP and AUC (whole split and per-batch mean, transductive and new node).

    train_models_report.py OUT EPOCHS DEVICE EXTRA_SETS RUN...
"""
import os
import sys

from bench_metrics import commit, run_device, run_metrics, utc_now, write_json


def split_metrics(r):
    if not r:
        return None
    return {k: r.get(k) for k in ("ap", "auc", "ap_batch_mean", "auc_batch_mean", "events")}


def epoch_figures(ep):
    """Times, speed, loss and validation AP from the epoch lines `ep`."""
    train_s = sum(l["train_seconds"] for l in ep)
    eval_s = sum(l.get("eval_seconds", 0.0) for l in ep)
    events = sum(l["train_events"] for l in ep)
    return {
        "epochs": len(ep),
        "train_seconds_per_epoch": train_s / len(ep),
        "seconds_per_epoch": (train_s + eval_s) / len(ep),  # training + validation
        "events_per_s": events / train_s if train_s > 0 else None,
        "train_events_per_epoch": events // len(ep),
        "final_loss": ep[-1]["loss"],
        "val_ap_batch_mean": [(l.get("val") or {}).get("ap_batch_mean") for l in ep],
    }


def summarise(model, run, rc):
    entry = {"config": f"configs/{model}.yaml", "run_dir": run, "exit_code": rc}
    device = run_device(run)
    if device:
        entry["device"], entry["cpu_threads"] = device
    ep, tests = run_metrics(run)
    if ep:
        entry.update(epoch_figures(ep))
    if tests:
        t = tests[-1]
        entry.update({"best_epoch": t.get("best_epoch"),
                      "test": split_metrics(t.get("test")),
                      "test_new_nodes": split_metrics(t.get("test_new_nodes"))})
    return entry


def models(args):
    """{model: entry} from the MODEL=RUN=EXIT_CODE arguments."""
    out = {}
    for arg in args:
        model, rest = arg.split("=", 1)
        run, rc = rest.rsplit("=", 1)
        out[model] = summarise(model, run, int(rc))
    return out


def main(argv):
    out, epochs, device, extra = argv[0:4]
    write_json(out, {
        "benchmark": "train_models",
        "date": utc_now(),
        "commit": commit(),
        "epochs": int(epochs),
        "device": device,
        "extra_sets": extra,
        "cpu_count": os.cpu_count(),
        "models": models(argv[4:]),
    }, "train_models")


if __name__ == "__main__":
    main(sys.argv[1:])

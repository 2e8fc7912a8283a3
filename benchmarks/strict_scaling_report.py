"""strict_scaling.sh's report: its runs (one argument DATASET=RANKS=RUN_FOLDER=EXIT_CODE
each) into one JSON file: per dataset and rank count, from rank 0's metrics.jsonl averaged
over the epochs, the times, events/s, collectives, exchanges and the speed-up over one rank.

    strict_scaling_report.py OUT EPOCHS MAX_BATCHES EXTRA_SETS RUN...
"""
import os
import sys

from bench_metrics import (COLLECTIVE_KINDS as KINDS, commit, run_device, run_metrics,
                           utc_now, write_json)


def epoch_means(ep):
    """Per epoch, averaged over the epoch lines `ep`."""
    n = len(ep)
    per_epoch = lambda f: sum(f(l) for l in ep) / n
    train_s = sum(l["train_seconds"] for l in ep)
    comm = lambda l: l.get("comm") or {}
    kind = lambda l, k: comm(l).get(k) or {}
    return {
        "strategy": comm(ep[-1]).get("strategy"),
        "epochs": n,
        "train_seconds_per_epoch": train_s / n,
        "seconds_per_epoch": per_epoch(lambda l: l["train_seconds"] + l.get("eval_seconds", 0.0)),
        "events_per_s": sum(l["train_events"] for l in ep) / train_s if train_s > 0 else None,
        "train_events_per_epoch": per_epoch(lambda l: l["train_events"]),
        # One rank has no communicator: it trains on every event and exchanges nothing.
        "rank0_events_per_epoch": per_epoch(
            lambda l: comm(l).get("local_events") or l["train_events"]),
        "sync_points_per_epoch": per_epoch(lambda l: comm(l).get("sync_points", 0)),
        "exchanged_rows_per_epoch": per_epoch(lambda l: comm(l).get("exchanged_rows", 0)),
        "exchanged_mails_per_epoch": per_epoch(lambda l: comm(l).get("exchanged_mails", 0)),
        "collectives_per_epoch": {
            k: {"calls": per_epoch(lambda l: kind(l, k).get("calls", 0)),
                "bytes": per_epoch(lambda l: kind(l, k).get("bytes", 0))}
            for k in KINDS},
        "bytes_per_epoch": per_epoch(lambda l: sum(kind(l, k).get("bytes", 0) for k in KINDS)),
        "final_loss": ep[-1]["loss"],
        "val_ap": (ep[-1].get("val") or {}).get("ap"),
    }


def summarise(ranks, run, rc):
    entry = {"ranks": ranks, "run_dir": run, "exit_code": rc}
    device = run_device(run)
    if device:
        entry["device"], entry["cpu_threads_per_rank"] = device
    ep, _ = run_metrics(run)
    if ep:
        entry.update(epoch_means(ep))
    return entry


def datasets(args):
    """{dataset: {config, by_ranks: {P: entry}}} from the DATASET=RANKS=RUN=EXIT_CODE
    arguments, each entry with its speed-up over one rank where both ran."""
    results = {}
    for arg in args:
        dataset, ranks, rest = arg.split("=", 2)
        run, rc = rest.rsplit("=", 1)
        results.setdefault(dataset, {"config": f"configs/{dataset}.yaml", "by_ranks": {}})
        results[dataset]["by_ranks"][ranks] = summarise(int(ranks), run, int(rc))
    for d in results.values():
        base = d["by_ranks"].get("1", {}).get("train_seconds_per_epoch")
        for e in d["by_ranks"].values():
            s = e.get("train_seconds_per_epoch")
            if base and s:
                e["speedup_vs_1_rank"] = base / s
    return results


def main(argv):
    out, epochs, max_batches, extra = argv[0:4]
    write_json(out, {
        "benchmark": "strict_scaling",
        "date": utc_now(),
        "commit": commit(),
        "epochs": int(epochs),
        "max_batches": int(max_batches),
        "extra_sets": extra,
        "cpu_count": os.cpu_count(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "datasets": datasets(argv[4:]),
    }, "strict_scaling")


if __name__ == "__main__":
    main(sys.argv[1:])

"""partition.sh's report: the runs its manifest lists (one line per run: dataset, ranks,
strategy, partition method, seed, threads per rank, run folder, exit code) into one JSON
file (each run; per dataset and P, each depbloom method against strict), and a Markdown
table of the runs on stdout.

    partition_report.py OUT MANIFEST EPOCHS MAX_EVENTS CORES
"""
import sys

from bench_metrics import (COLLECTIVE_KINDS as KINDS, commit, cpu_model, fixed, known_mean,
                           manifest_lines, run_metrics, utc_now, write_json)

WINDOW_STEPS = 8  # partition.sh's partition.window_steps


def comm_means(ep):
    """Per epoch, averaged over the epochs: collectives, sync points, calls and bytes per
    kind, exchanged bytes, rows and mails; one rank has no communicator (all zero)."""
    mean = lambda f: sum(f(l) for l in ep) / len(ep)
    comm = lambda l: l.get("comm") or {}
    kind = lambda l, k: comm(l).get(k) or {}
    e = {
        "collectives_per_epoch": mean(lambda l: sum(kind(l, k).get("calls", 0) for k in KINDS)),
        "sync_points_per_epoch": mean(lambda l: comm(l).get("sync_points", 0)),
        "by_kind_per_epoch": {k: {"calls": mean(lambda l: kind(l, k).get("calls", 0)),
                                  "bytes": mean(lambda l: kind(l, k).get("bytes", 0))}
                              for k in KINDS},
        "bytes_per_epoch": mean(lambda l: sum(kind(l, k).get("bytes", 0) for k in KINDS)),
    }
    e["all_gather_v_bytes_per_epoch"] = e["by_kind_per_epoch"]["all_gather_v"]["bytes"]
    for k in ("exchange_bytes", "exchanges", "exchanged_rows", "exchanged_mails"):
        e[k + "_per_epoch"] = mean(lambda l: comm(l).get(k, 0))
    plans = [comm(l)["plan"] for l in ep if "plan" in comm(l)]
    if plans:  # the plan is the same every epoch (a pure function of stream and keys)
        e["plan"] = plans[-1]
    return e


def summarise(fields, cores):
    """One manifest line (its fields as strings) -> one run's entry; cores: nproc, as the
    runs saw them."""
    dataset, p, strategy, method, seed, threads, run, rc = fields
    p = int(p)
    e = {"dataset": dataset, "ranks": p, "strategy": "single" if p == 1 else strategy,
         "method": None if method == "-" else method, "seed": int(seed),
         "threads_per_rank": int(threads), "batch_size": p * 600, "oversubscribed": p > cores,
         "run_dir": run, "exit_code": int(rc)}
    ep, tests = run_metrics(run)
    if not ep:
        return e
    t = tests[-1] if tests else {}
    pick = lambda s, k: (t.get(s) or {}).get(k)
    e.update({
        "epochs": len(ep),
        "test_ap": pick("test", "ap"), "test_ap_batch_mean": pick("test", "ap_batch_mean"),
        "test_new_nodes_ap": pick("test_new_nodes", "ap"),
        "test_new_nodes_ap_batch_mean": pick("test_new_nodes", "ap_batch_mean"),
        "final_loss": ep[-1]["loss"]})
    e.update(comm_means(ep))
    secs = sum(l["train_seconds"] for l in ep) / len(ep)
    # Ranks beyond the cores time-share them: the time is recorded but is no speed.
    e["train_seconds_per_epoch"] = None if e["oversubscribed"] else secs
    if e["oversubscribed"]:
        e["oversubscribed_train_seconds_per_epoch"] = secs
    return e


def ratio(a, b):
    return a / b if a is not None and b else None


def method_vs_strict(rs, base):
    """Means over seeds of one depbloom method's runs `rs` against strict's `base`."""
    a = lambda key: known_mean(r.get(key) for r in rs)
    b = lambda key: known_mean(r.get(key) for r in base)
    row = {k: ratio(a(key), b(key)) for k, key in (
        ("collectives_vs_strict", "collectives_per_epoch"),
        ("all_gather_v_bytes_vs_strict", "all_gather_v_bytes_per_epoch"),
        ("exchange_bytes_vs_strict", "exchange_bytes_per_epoch"))}
    ap, ap0 = a("test_ap_batch_mean"), b("test_ap_batch_mean")
    row["test_ap_batch_mean_minus_strict"] = None if None in (ap, ap0) else ap - ap0
    row["cut_fraction"] = known_mean(r.get("plan", {}).get("cut_fraction") for r in rs)
    return row


def summary(runs):
    """Means over seeds per (dataset, P, strategy, method), then depbloom over strict per P:
    {dataset: {P: {method: ...}}}."""
    groups = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["ranks"], r["strategy"], r["method"]), []).append(r)
    out = {}
    for (d, p, s, m), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if s == "depbloom":
            base = groups.get((d, p, "strict", None), [])
            out.setdefault(d, {}).setdefault(str(p), {})[m] = method_vs_strict(rs, base)
    for d in out.values():
        for row in d.values():
            if "metis" in row and "hash" in row:
                row["cut_fraction_metis_vs_hash"] = ratio(row["metis"]["cut_fraction"],
                                                          row["hash"]["cut_fraction"])
    return out


def table(runs):
    """The Markdown table of the runs, as lines."""
    mb = lambda x: None if x is None else x / 1e6
    lines = ["| dataset | P | strategy | method | seed | test AP bm | new-node AP bm "
             "| collectives/ep | all_gather_v MB/ep | exchange MB/ep | cut | imbalance "
             "| migrated | epoch s |", "|" + "---|" * 14]
    for r in runs:
        pl = r.get("plan", {})
        secs = "oversub." if r["oversubscribed"] else fixed(r.get("train_seconds_per_epoch"), 2)
        lines.append(
            f"| {r['dataset']} | {r['ranks']} | {r['strategy']} | {r['method'] or '-'} "
            f"| {r['seed']} | {fixed(r.get('test_ap_batch_mean'), 4)} "
            f"| {fixed(r.get('test_new_nodes_ap_batch_mean'), 4)} "
            f"| {fixed(r.get('collectives_per_epoch'), 0)} "
            f"| {fixed(mb(r.get('all_gather_v_bytes_per_epoch')), 2)} "
            f"| {fixed(mb(r.get('exchange_bytes_per_epoch')), 2)} "
            f"| {fixed(pl.get('cut_fraction'), 3)} | {fixed(pl.get('max_imbalance'), 3)} "
            f"| {pl.get('migrated_nodes', '-')} | {secs}"
            + (f" (exit {r['exit_code']})" if r["exit_code"] else "") + " |")
    return lines


def main(argv):
    out, manifest = argv[0:2]
    epochs, max_events, cores = map(int, argv[2:5])
    runs = [summarise(fields, cores) for fields in manifest_lines(manifest)]
    write_json(out, {
        "benchmark": "partition", "commit": commit(),
        "machine": {"nproc": cores, "cpu_model": cpu_model()}, "generated": utc_now(),
        "epochs": epochs, "max_events": max_events, "window_steps": WINDOW_STEPS,
        "runs": runs, "summary": summary(runs)}, "partition")
    print("\n".join(table(runs)))


if __name__ == "__main__":
    main(sys.argv[1:])

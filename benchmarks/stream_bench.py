"""depbloom-stream's throughput and query latency on a checkpoint's test split
(docs/streaming.md): every test event of the data file streamed with its positive and K
random-destination queries before it, at stream.batch_size B; prints the session's summary
(events/s, query latency p50/p99) as one JSON line.

    python3 benchmarks/stream_bench.py --stream build/depbloom-stream --ckpt CKPT \
        --data data/wikipedia/wikipedia_edges.csv --batch 200 --negatives 1
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

SUMMARY = re.compile(
    r"(\d+) events applied in (\d+) batches \((\d+) one-pass\) in ([\d.]+) s: (\d+) events/s; "
    r"(\d+) queries answered, latency p50 ([\d.]+) ms, p99 ([\d.]+) ms")


def loaded_events(stream, ckpt):
    """The events the session loads (those before the test split), from an empty run."""
    run = subprocess.run([stream, ckpt, "--input", os.devnull], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"depbloom-stream failed ({run.returncode}):\n{run.stderr}")
    found = re.search(r"(\d+) loaded events", run.stderr)
    if not found:
        sys.exit(f"no loaded-events line in:\n{run.stderr}")
    return int(found.group(1))


def test_events(data, skip):
    """The data rows after the first `skip` (a JODIE CSV, time-sorted): the test split."""
    with open(data) as f:
        next(f)
        rows = [line.strip() for line in f if line.strip()]
    return rows[skip:]


def write_input(path, events, negatives, seed):
    """Per event: '?,src,dst,t', K queries to random destinations seen so far, the event."""
    rng = random.Random(seed)
    items = sorted({row.split(",")[1] for row in events})
    with open(path, "w") as out:
        for row in events:
            src, dst, t = row.split(",")[:3]
            out.write(f"?,{src},{dst},{t}\n")
            for _ in range(negatives):
                out.write(f"?,{src},{rng.choice(items)},{t}\n")
            out.write(row + "\n")


def summary(stderr):
    found = SUMMARY.search(stderr)
    if not found:
        sys.exit(f"no summary line in:\n{stderr}")
    keys = ("events", "batches", "one_pass_batches", "seconds", "events_per_s", "queries",
            "latency_p50_ms", "latency_p99_ms")
    return {k: float(v) if "." in v else int(v) for k, v in zip(keys, found.groups())}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stream", default="build/depbloom-stream")
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--data", required=True, help="the checkpoint's data file (JODIE CSV)")
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--negatives", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    events = test_events(args.data, loaded_events(args.stream, args.ckpt))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input.csv")
        write_input(path, events, args.negatives, args.seed)
        cmd = [args.stream, args.ckpt, "--input", path, "--threads", str(args.threads),
               "--set", f"stream.batch_size={args.batch}"]
        start = time.time()
        run = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.time() - start
    if run.returncode != 0:
        sys.exit(f"depbloom-stream failed ({run.returncode}):\n{run.stderr}")
    result = summary(run.stderr)
    result.update(batch=args.batch, negatives=args.negatives, wall_s_with_load=round(wall, 3),
                  answers=len(run.stdout.splitlines()))
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()

"""Checks a run's metrics.jsonl for train.target_val_ap with train.stop_at_target.

    python3 check_target.py METRICS_JSONL EPOCHS

The run must have stopped after EPOCHS epochs, the last one reaching the target; every epoch
row carries the run's totals (steps and events growing, training seconds positive); the
reaching row and the test row record the same reached_target with the totals at it.
"""
import json
import sys


def check(path, epochs):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    epoch_rows = [r for r in rows if r.get("split") != "test"]
    tests = [r for r in rows if r.get("split") == "test"]
    problems = []
    if [r["epoch"] for r in epoch_rows] != list(range(1, epochs + 1)):
        problems.append("epoch rows %s, expected 1..%d" % ([r["epoch"] for r in epoch_rows], epochs))
    steps = [r["totals"]["steps"] for r in epoch_rows]
    if steps != sorted(steps) or len(set(steps)) != len(steps) or steps[0] <= 0:
        problems.append("totals.steps do not grow: %s" % steps)
    if any(r["totals"]["train_seconds"] <= 0 for r in epoch_rows):
        problems.append("a row without training seconds")
    reached = [r["reached_target"] for r in epoch_rows if "reached_target" in r]
    if len(reached) != 1 or reached[0]["epoch"] != epochs:
        problems.append("reached_target in the epoch rows: %s" % reached)
    elif reached[0]["steps"] != epoch_rows[-1]["totals"]["steps"]:
        problems.append("reached_target's steps are not the totals at its epoch")
    if len(tests) != 1 or tests[0].get("reached_target") != (reached[0] if reached else None):
        problems.append("the test row's reached_target differs: %s" % tests)
    return problems


def main():
    problems = check(sys.argv[1], int(sys.argv[2]))
    for p in problems:
        print("FAIL:", p)
    print("ok" if not problems else "%d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

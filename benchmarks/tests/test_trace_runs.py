"""trace_runs: timings dropped at any depth, steps compared string for string."""
import json
import os
import tempfile
import unittest

import trace_runs as tr


def write(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(lines)


class TraceRunsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.a, self.b = f"{self.tmp.name}/a", f"{self.tmp.name}/b"

    def tearDown(self):
        self.tmp.cleanup()

    def test_timings_dropped_at_any_depth(self):
        value = {"loss": 1.5, "train_seconds": 3, "stage_s": {"x": 1},
                 "comm": {"calls": 4, "wait_seconds": 2, "events_per_s": 9}}
        self.assertEqual(tr.without_timings(value), {"loss": 1.5, "comm": {"calls": 4}})

    def test_metrics_differing_only_in_timings_match(self):
        write(f"{self.a}/run/metrics.jsonl", [json.dumps({"ap": 0.9, "train_seconds": 1}) + "\n"])
        write(f"{self.b}/run/metrics.jsonl", [json.dumps({"ap": 0.9, "train_seconds": 2}) + "\n"])
        self.assertEqual(tr.differences(self.a, self.b), [])

    def test_a_changed_value_or_step_is_found(self):
        write(f"{self.a}/run/metrics.jsonl", ['{"ap": 0.9}\n'])
        write(f"{self.b}/run/metrics.jsonl", ['{"ap": 0.91}\n'])
        write(f"{self.a}/run/steps.jsonl", ['{"loss": 1.0}\n'])
        write(f"{self.b}/run/steps.jsonl", ['{"loss": 1.00}\n'])
        self.assertEqual(tr.differences(self.a, self.b),
                         ["run/metrics.jsonl (ap)", "run/steps.jsonl"])

    def test_the_changed_keys_are_named(self):
        write(f"{self.a}/run/metrics.jsonl", ['{"ap": 0.9, "calls": {"ops": 9, "gemm": 2}}\n'])
        write(f"{self.b}/run/metrics.jsonl", ['{"ap": 0.9, "calls": {"ops": 7, "gemm": 2}}\n'])
        self.assertEqual(tr.differences(self.a, self.b), ["run/metrics.jsonl (calls.ops)"])

    def test_a_missing_file_is_a_difference(self):
        write(f"{self.a}/plan_strict_2.json", ['{"plan": {}}\n'])
        os.makedirs(self.b)
        self.assertEqual(tr.differences(self.a, self.b), ["plan_strict_2.json"])

    def test_added_keys_are_listed_not_differences(self):
        write(f"{self.a}/run/metrics.jsonl", ['{"ap": 0.9, "comm": {"calls": 4}}\n'])
        write(f"{self.b}/run/metrics.jsonl",
              ['{"ap": 0.9, "comm": {"calls": 4, "bytes": 8}, "calls": {"ops": 3}}\n'])
        added = set()
        self.assertEqual(tr.differences(self.a, self.b, added), [])
        self.assertEqual(added, {"comm.bytes", "calls"})

    def test_a_removed_key_is_a_difference(self):
        write(f"{self.a}/run/metrics.jsonl", ['{"ap": 0.9, "auc": 0.8}\n'])
        write(f"{self.b}/run/metrics.jsonl", ['{"ap": 0.9}\n'])
        self.assertEqual(tr.differences(self.a, self.b), ["run/metrics.jsonl"])

    def test_plan_json_is_the_last_object_line_without_its_seconds(self):
        out = '[info] plan: ...\n{"plan": {"steps": 3, "seconds": 0.1}}\n'
        self.assertEqual(tr.plan_json(out), {"plan": {"steps": 3}})


if __name__ == "__main__":
    unittest.main()

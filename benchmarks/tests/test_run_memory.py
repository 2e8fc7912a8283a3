"""run_memory: a run's memory from the plan of one rank's share."""
import json
import os
import tempfile
import unittest

import run_memory


class RunMemoryTest(unittest.TestCase):
    def test_ranks_times_the_plan_peak_and_the_base(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "memory-plan.json")
            with open(path, "w") as f:
                f.write("a log line\n" + json.dumps(
                    {"plan": {"peak_bytes": {"host": 3 << 30, "device": 0}}}) + "\n")
            self.assertEqual(run_memory.plan_peak_bytes(path), 3 << 30)
            self.assertAlmostEqual(run_memory.estimate_gib(path, 8), 8 * (3 + 0.25))

    def test_no_plan_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "memory-plan.json")
            with open(path, "w") as f:
                f.write("[error] no data\n")
            with self.assertRaises(ValueError):
                run_memory.plan_peak_bytes(path)


if __name__ == "__main__":
    unittest.main()

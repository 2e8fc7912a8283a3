"""fixed_cost_report: medians per build, the ratios, the share of the SGEMM peak, the files."""
import json
import os
import tempfile
import unittest

import fixed_cost_report as fc
from tests.fixtures import write_run


def epoch(seconds, calls):
    return {"loss": 0.5, "train_seconds": seconds, "calls": {"op_calls_per_step": calls}}


class FixedCostReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = self.tmp.name
        with open(os.path.join(self.work, "tgn-plan.json"), "w") as f:
            f.write('{"plan":{"flops":{"total":1000000000000}}}\n')
        for i, (b, a) in enumerate([(10.0, 8.0), (12.0, 9.0), (11.0, 7.0)]):
            write_run(os.path.join(self.work, f"tgn-before-{i}"), [epoch(b, 135.0)])
            write_run(os.path.join(self.work, f"tgn-after-{i}"), [epoch(a, 127.0)])

    def tearDown(self):
        self.tmp.cleanup()

    def test_medians_ratios_and_peak_share(self):
        row = fc.model_row(self.work, "tgn", 3, 200e9)
        self.assertEqual(row["before"]["median_train_seconds"], 11.0)
        self.assertEqual(row["after"]["median_train_seconds"], 8.0)
        self.assertAlmostEqual(row["epoch_time_ratio"], 8.0 / 11.0)
        self.assertAlmostEqual(row["op_calls_ratio"], 135.0 / 127.0)
        # 1e12 FLOP in 8 s is 125 GFLOP/s, 62.5% of a 200 GFLOP/s peak.
        self.assertAlmostEqual(row["after"]["share_of_sgemm_peak"], 0.625)

    def test_missing_runs_and_plan_give_empty_cells(self):
        row = fc.model_row(self.work, "jodie", 3, 200e9)
        self.assertIsNone(row["gemm_flops_per_epoch"])
        self.assertEqual(row["before"]["runs"], 0)
        self.assertIsNone(row["epoch_time_ratio"])
        self.assertIn("| jodie | - | - | -x |", fc.markdown([row], 200e9, "test"))

    def test_main_writes_json_and_markdown(self):
        out = os.path.join(self.work, "out")
        fc.main(["--work", self.work, "--models", "tgn", "--pairs", "3", "--before", "b",
                 "--after", "a", "--out-dir", out, "--wait-policy", "active"])
        with open(os.path.join(out, "fixed_cost.json")) as f:
            result = json.load(f)
        self.assertEqual(result["models"][0]["model"], "tgn")
        self.assertEqual(result["omp_wait_policy"], "active")
        with open(os.path.join(out, "fixed_cost.md")) as f:
            md = f.read()
        self.assertIn("| tgn | 135.0 | 127.0 | 1.06x | 11.00 | 8.00 | 0.727 |", md)
        self.assertIn("OMP_WAIT_POLICY: active.", md)


if __name__ == "__main__":
    unittest.main()

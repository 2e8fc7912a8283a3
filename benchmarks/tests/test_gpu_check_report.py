"""gpu_check_report: the three summary lines."""
import json
import tempfile
import unittest

import gpu_check_report as gr
from tests.fixtures import comm, write_run


class GpuCheckReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.dir = self.tmp.name
        self.one = write_run(f"{d}/one", [{"loss": 0.5, "val": {"ap": 0.8}, "train_seconds": 2.0,
                                           "stage_s": {"sample": 0.5, "forward": 1.0},
                                           "host_waits_per_step": 1.0}]) + "/metrics.jsonl"
        self.two = write_run(f"{d}/two", [{"loss": 0.51, "val": {"ap": 0.8}, "comm": comm(1, 1, sync_points=9)},
                                          {"loss": 0.4, "val": {"ap": 0.9}, "host_waits_per_step": 2.5}]) \
            + "/metrics.jsonl"

    def tearDown(self):
        self.tmp.cleanup()

    def test_ranks(self):
        self.assertEqual(gr.ranks(self.one, self.two),
                         "cli 2 CUDA ranks over mpi vs 1: epoch loss 0.510000 vs 0.500000 (rel 2.0e-02); "
                         "val AP 0.800000 vs 0.800000 (rel 0.0e+00); sync points 9")

    def test_host_waits(self):
        self.assertEqual(gr.host_waits(self.two), "host waits per training step, by epoch: "
                                                  "missing, 2.50 (goal: 1, the loss read)")

    def test_cost_model(self):
        plan = f"{self.dir}/plan.json"
        with open(plan, "w") as f:
            json.dump({"plan": {"model": {"profile": "h200", "epoch_seconds": {"serial": 3.0},
                                          "stages": {"sample": 0.25, "other": 1.0}}}}, f)
        self.assertEqual(gr.cost_model(self.one, plan),
                         "cost model (h200, modelled) TGN WIKI one-GPU epoch 3.000 s vs measured "
                         "2.000 s: +50%; stages modelled/measured s: sample 0.250/0.500")


if __name__ == "__main__":
    unittest.main()

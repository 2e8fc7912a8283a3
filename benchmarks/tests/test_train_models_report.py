"""train_models_report: per-model times, speed and test metrics."""
import tempfile
import unittest

import train_models_report as tr
from tests.fixtures import test_line, write_run


class TrainModelsReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_models(self):
        d = self.tmp.name
        eps = [{"loss": 0.6 - 0.1 * i, "train_seconds": 2.0 + i, "eval_seconds": 0.5,
                "train_events": 1001, "val": {"ap_batch_mean": 0.8 + 0.05 * i}} for i in range(2)]
        run = write_run(f"{d}/tgn", eps, test_line(2, 0.95, 0.9), device=("cuda:0", 4))
        m = tr.models([f"tgn-wiki={run}=0", f"apan-wiki={d}/apan=2"])
        tgn = m["tgn-wiki"]
        self.assertEqual(tgn["train_seconds_per_epoch"], 2.5)
        self.assertEqual(tgn["seconds_per_epoch"], 3.0)
        self.assertEqual(tgn["events_per_s"], 2002 / 5.0)
        self.assertEqual(tgn["train_events_per_epoch"], 1001)
        self.assertEqual(tgn["val_ap_batch_mean"], [0.8, 0.8 + 0.05])
        self.assertEqual(tgn["best_epoch"], 2)
        self.assertEqual(tgn["test"]["ap"], 0.95)
        self.assertEqual(tgn["test_new_nodes"]["events"], 20)
        self.assertEqual((tgn["device"], tgn["cpu_threads"]), ("cuda:0", 4))
        self.assertEqual(m["apan-wiki"], {"config": "configs/apan-wiki.yaml",
                                          "run_dir": f"{d}/apan", "exit_code": 2})


if __name__ == "__main__":
    unittest.main()

"""strict_scaling_report: per-epoch means and the speed-up over one rank."""
import tempfile
import unittest

import strict_scaling_report as sr
from tests.fixtures import comm, write_run


def epochs(train_s, ranks):
    c = comm(4, 100, strategy="strict", sync_points=6, local_events=500,
             exchanged_rows=8, exchanged_mails=2) if ranks > 1 else {}
    return [{"loss": 0.3, "train_seconds": s, "eval_seconds": 1.0, "train_events": 1000,
             "comm": c, "val": {"ap": 0.9}} for s in train_s]


class StrictScalingReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.args = [f"tgn-wiki=1={write_run(f'{d}/p1', epochs([4.0, 6.0], 1), device=('cpu', 2))}=0",
                     f"tgn-wiki=2={write_run(f'{d}/p2', epochs([2.0, 3.0], 2))}=0",
                     f"tgn-wiki=4={d}/p4=1"]

    def tearDown(self):
        self.tmp.cleanup()

    def test_means_and_speedup(self):
        r = sr.datasets(self.args)["tgn-wiki"]
        self.assertEqual(r["config"], "configs/tgn-wiki.yaml")
        one, two, four = r["by_ranks"]["1"], r["by_ranks"]["2"], r["by_ranks"]["4"]
        self.assertEqual(one["train_seconds_per_epoch"], 5.0)
        self.assertEqual(one["seconds_per_epoch"], 6.0)
        self.assertEqual(one["events_per_s"], 200.0)
        self.assertEqual(one["rank0_events_per_epoch"], 1000)  # no communicator: every event
        self.assertEqual(one["bytes_per_epoch"], 0)
        self.assertEqual((one["device"], one["cpu_threads_per_rank"]), ("cpu", 2))
        self.assertEqual(two["rank0_events_per_epoch"], 500)
        self.assertEqual(two["collectives_per_epoch"]["all_gather_v"], {"calls": 4, "bytes": 100})
        self.assertEqual(two["bytes_per_epoch"], 500)
        self.assertEqual(two["strategy"], "strict")
        self.assertEqual(two["speedup_vs_1_rank"], 2.0)
        self.assertEqual(four, {"ranks": 4, "run_dir": f"{self.tmp.name}/p4", "exit_code": 1})


if __name__ == "__main__":
    unittest.main()

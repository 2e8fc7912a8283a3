"""refine_report: a run's figures, the means per m, the chosen m, the loss decomposition."""
import statistics
import tempfile
import unittest

import refine_report as rr
from tests.fixtures import test_line, write_run

SETTINGS = rr.settings(["3", "0", "2", "last", "0.5", "0.1", "config", "updater"])


def epochs(vals, refined=(10, 30)):
    return [{"loss": 0.4, "val": {"ap_batch_mean": v}, "refined_rows_per_batch": refined[i % 2],
             "memory_rows_per_batch": 100, "events_per_s": 1000.0 * (i + 1),
             "train_seconds": 2.0, "stage_s": {"refine": 0.5 * (i + 1)}}
            for i, v in enumerate(vals)]


class RefineReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def run_entry(self, name, fields, vals, best, ap):
        run = write_run(f"{self.tmp.name}/{name}", epochs(vals), test_line(best, ap + 0.01, ap),
                        device=("cpu", 2))
        return rr.summarise(fields + [run, "0"], SETTINGS)

    def test_summarise_a_run(self):
        e = self.run_entry("r", ["tgn", "wiki", "4800", "4", "3", "1"], [0.8, 0.9, 0.85], 2, 0.7)
        self.assertEqual((e["aggregate"], e["coherence_weight"], e["start"]), ("last", 0.5, "updater"))
        self.assertEqual(e["best_val_ap_batch_mean"], 0.9)
        self.assertEqual(e["test_ap_batch_mean"], 0.7)
        self.assertEqual(e["events_per_s"], 2000.0)
        self.assertAlmostEqual(e["refined_share"], (0.1 + 0.3 + 0.1) / 3)
        self.assertEqual(e["refine_seconds"], [0.5, 1.0, 1.5])
        self.assertEqual((e["device"], e["cpu_threads"]), ("cpu", 2))
        one = self.run_entry("one", ["tgn", "wiki", "4800", "1", "3", "1"], [0.8], 1, 0.7)
        self.assertEqual((one["aggregate"], one["coherence_weight"], one["start"]), (None, 0.0, None))

    def test_paired_differences(self):
        a = [{"seed": s, "k": v} for s, v in ((0, 0.7), (1, 0.8), (2, 0.6))]
        b = [{"seed": s, "k": v} for s, v in ((0, 0.6), (1, 0.6), (2, None))]
        p = rr.paired(a, b, "k")
        sd = statistics.stdev([0.7 - 0.6, 0.8 - 0.6])
        self.assertEqual((p["n"], p["gains"]), (2, 2))
        self.assertAlmostEqual(p["mean"], 0.15)
        self.assertAlmostEqual(p["sd"], sd)
        self.assertAlmostEqual(p["se"], sd / 2 ** 0.5)

    def test_chosen_m_on_validation_and_the_decomposition(self):
        runs = []
        # (batch, m, epochs, best validation AP, test AP), one seed
        for i, (b, m, ep, val, ap) in enumerate(((600, 1, 3, 0.9, 0.80), (4800, 1, 3, 0.85, 0.70),
                                                (4800, 4, 3, 0.88, 0.74), (4800, 8, 3, 0.87, 0.79),
                                                (4800, 1, 24, 0.9, 0.76))):
            runs.append(self.run_entry(f"r{i}", ["tgn", "wiki", str(b), str(m), str(ep), "0"],
                                       [val], 1, ap))
        s = rr.summarise_groups(runs, 3)["tgn/wiki"]
        g = s["batch4800_epochs3"]
        self.assertEqual(g["chosen_m"], 4)  # best validation AP, although m = 8 tests higher
        t = g["test_ap_batch_mean"]
        self.assertEqual((t["m1"], t["chosen"], t["batch600"]), (0.70, 0.74, 0.80))
        self.assertAlmostEqual(t["loss_recovered_share"], 0.4)
        self.assertNotIn("chosen_m", s["batch600_epochs3"])
        d = s["loss_decomposition"]
        self.assertAlmostEqual(d["total"], 0.10)
        self.assertAlmostEqual(d["fewer_steps"], 0.06)
        self.assertAlmostEqual(d["stale_memory"], 0.04)
        lines = rr.decomposition_lines({"tgn/wiki": s})
        self.assertEqual(lines[1], "tgn/wiki: batch 600 -> 4800 test AP loss 0.1000: fewer steps "
                                   "0.0600, stale memory 0.0400; refinement recovers - of the latter")
        self.assertIn("| tgn | wiki | 4800 | 3 | 4 * | 1 |", "\n".join(rr.by_m_table({"tgn/wiki": s})))


if __name__ == "__main__":
    unittest.main()

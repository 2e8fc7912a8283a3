"""lr_study_report: a run's figures, the cells per rule, the rule chosen on validation AP
(never test AP) and its paired gain over `none`."""
import tempfile
import unittest

import lr_study_report as lr
from tests.fixtures import test_line, write_run


class LrStudyReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def entry(self, batch, rule, warmup, seed, vals, best, test_ap):
        name = f"{self.tmp.name}/b{batch}-{rule}-w{warmup}-s{seed}"
        run = write_run(name, [{"loss": 0.5, "val": {"ap_batch_mean": v}} for v in vals],
                        test_line(best, test_ap + 0.01, test_ap))
        return lr.run_entry(["tgn", "wiki", str(batch), rule, str(warmup), "3", str(seed), run, "0"])

    def test_the_rule_is_chosen_on_validation_and_gains_are_paired(self):
        runs = [self.entry(2400, "none", 0, s, [0.80, 0.82 + s / 100], 2, 0.90) for s in (0, 1)]
        # linear: better validation, worse test: still chosen (test AP never chooses).
        runs += [self.entry(2400, "linear", 0, s, [0.85, 0.88 + s / 100], 2, 0.89) for s in (0, 1)]
        runs += [self.entry(2400, "sqrt", 20, s, [0.86, 0.84], 1, 0.95) for s in (0, 1)]
        runs.append(self.entry(600, "none", 0, 0, [0.9], 1, 0.93))
        self.assertEqual(runs[0]["best_val_ap"], 0.82)
        groups = {g["batch_size"]: g for g in lr.summarise(runs)}
        self.assertNotIn("chosen", groups[600])
        g = groups[2400]
        self.assertEqual(set(g["cells"]), {"none", "linear", "sqrt+w20"})
        self.assertEqual(g["chosen"], "linear")
        gain = g["chosen_gain"]
        self.assertAlmostEqual(gain["best_val_ap"]["mean"], 0.06)
        self.assertAlmostEqual(gain["test_ap"]["mean"], -0.01)
        self.assertEqual((gain["test_ap"]["gains"], gain["test_ap"]["n"]), (0, 2))
        self.assertIn("linear **chosen**", lr.table(list(groups.values())))


if __name__ == "__main__":
    unittest.main()

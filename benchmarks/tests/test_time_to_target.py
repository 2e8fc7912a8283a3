"""time_to_target: the target from the P = 1 reference, the first epoch reaching it, the
seconds measured or modelled, the speed-ups, and a configuration that never reaches it."""
import unittest

import time_to_target as ttt


def row(config, p, vals, seed=0, model="tgn", over=False, gpu=None, cpu=None, secs=10.0, test=0.9):
    curve = [{"val_ap": v, "train_seconds": secs * (i + 1), "steps": 100 * (i + 1)}
             for i, v in enumerate(vals)]
    return {"dataset": "wiki", "model": model, "ranks": p, "config": config, "seed": seed,
            "batch_size": p * 600, "oversubscribed": over, "curve": curve,
            "test_ap_batch_mean": test, "events_per_s": 1000.0,
            "modelled": {"epoch_seconds": gpu} if gpu else None,
            "modelled_cpu": {"epoch_seconds": cpu} if cpu else None}


class TimeToTargetTest(unittest.TestCase):
    def test_target_is_the_references_mean_best_within_e_ref_minus_the_margin(self):
        rows = [row("strict", 1, [0.80, 0.90, 0.91, 0.92, 0.93, 0.99], seed=0),
                row("strict", 1, [0.82, 0.88, 0.94, 0.90, 0.90, 0.99], seed=1),
                row("strict", 2, [0.99] * 6)]  # not the reference
        goal = ttt.targets(rows)[("wiki", "tgn")]
        # TGN's E_ref is 5: epoch 6's 0.99 is outside it.
        self.assertAlmostEqual(goal["reference_best_val"], (0.93 + 0.94) / 2)
        self.assertAlmostEqual(goal["target"], (0.93 + 0.94) / 2 - 0.005)
        self.assertEqual((goal["seeds"], goal["e_ref"]), (2, 5))
        # Fewer epochs run than E_ref: all of them count.
        self.assertEqual(ttt.targets([row("strict", 1, [0.5, 0.6])])[("wiki", "tgn")]["e_ref"], 2)

    def test_reach_takes_the_first_epoch_and_its_totals(self):
        r = row("depbloom-op", 8, [0.5, 0.91, 0.95], over=True, gpu=0.25, cpu=4.0)
        got = ttt.reach(r, 0.9)
        self.assertEqual((got["epochs"], got["steps"]), (2, 200))
        self.assertIsNone(got["measured_seconds"])  # oversubscribed: no measured time
        self.assertEqual((got["modelled_gpu_seconds"], got["modelled_cpu_seconds"]), (0.5, 8.0))
        self.assertEqual(ttt.reach(row("strict", 2, [0.5, 0.91]), 0.9)["measured_seconds"], 20.0)
        self.assertIsNone(ttt.reach(r, 0.96))

    def test_headline_speedups_and_a_configuration_that_never_reaches(self):
        ref = [0.80, 0.85, 0.90, 0.90, 0.90]  # target 0.895: epoch 3, 30 s
        rows = [row("strict", 1, ref, gpu=1.0), row("strict", 2, [0.8, 0.85, 0.88, 0.89, 0.9], gpu=0.5),
                row("depbloom-op", 2, [0.88, 0.9, 0.9, 0.9, 0.9], secs=5.0, gpu=0.2),
                row("strict-600", 2, [0.5] * 5, gpu=0.6)]
        entries, goals = ttt.headline(rows)
        self.assertAlmostEqual(goals[("wiki", "tgn")]["target"], 0.895)
        by = {(e["ranks"], e["config"]): e for e in entries}
        one, strict, op = by[(1, "strict")], by[(2, "strict")], by[(2, "depbloom-op")]
        self.assertEqual((one["epochs_to_target"], one["cpu_seconds"]), (3, 30.0))
        self.assertEqual((strict["epochs_to_target"], strict["cpu_seconds"]), (5, 50.0))
        self.assertEqual((op["epochs_to_target"], op["cpu_seconds"]), (2, 10.0))
        self.assertAlmostEqual(op["cpu_seconds_speedup_vs_strict"], 5.0)
        self.assertAlmostEqual(op["cpu_seconds_speedup_vs_one_device"], 3.0)
        self.assertAlmostEqual(op["modelled_gpu_seconds"], 0.4)
        self.assertAlmostEqual(op["modelled_gpu_seconds_speedup_vs_strict"], 2.5 / 0.4)
        never = by[(2, "strict-600")]
        self.assertEqual((never["reached"], never["epochs_to_target"]), (0, None))
        self.assertEqual(never["best_val_ap"], 0.5)
        table = ttt.markdown(entries, goals, {"epochs": 5, "cores": 2, "profile": "h200-nvlink"})
        self.assertIn("| wiki | tgn | 2 | strict-600 | 1200 | 0 of 1 | never |", table)
        self.assertIn("target 0.8950", table)

    def test_no_reference_run_says_so(self):
        entries, goals = ttt.headline([row("strict", 2, [0.9])])
        self.assertEqual(goals, {})
        self.assertIn("no reference run", ttt.markdown(entries, goals, {"epochs": 1, "cores": 2,
                                                                       "profile": "x"}))

    def test_the_grid_chooses_the_fastest_cell_reaching_the_target(self):
        ref = [0.80, 0.85, 0.90, 0.90, 0.90]  # target 0.895
        rows = [row("strict", 1, ref, gpu=1.0),
                row("op-k2-m1", 8, [0.85, 0.90, 0.91], gpu=0.3),    # 2 epochs: 0.6 s
                row("op-k2-m2", 8, [0.89, 0.90, 0.91], gpu=0.3),    # 2 epochs: 0.6 s, tie
                row("op-k4-m4", 8, [0.90, 0.91, 0.92], gpu=0.7),    # 1 epoch: 0.7 s
                row("op-k8-m8", 8, [0.70, 0.80, 0.85], gpu=0.05)]   # never reaches it
        entries, _ = ttt.headline(rows)
        chosen = ttt.choose(entries)[("wiki", "tgn")]
        self.assertEqual(chosen["chosen"], (2, 1))  # the tie goes to the smaller m
        self.assertEqual(len(chosen["cells"]), 4)
        self.assertIn("chosen k = 2, m = 1", ttt.grid_markdown({("wiki", "tgn"): chosen}))
        rows[1:3] = [row("op-k2-m1", 8, [0.5] * 3, gpu=0.1)]
        self.assertEqual(ttt.choose(ttt.headline(rows)[0])[("wiki", "tgn")]["chosen"], (4, 4))


if __name__ == "__main__":
    unittest.main()

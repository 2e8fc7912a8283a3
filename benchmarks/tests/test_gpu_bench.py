"""gpu_bench and gpu_bench_profile: the configuration plan, a warm epoch's summary, and the
profile written from canned bench.json records (GPU and CPU)."""
import contextlib
import json
import os
import tempfile
import unittest

import gpu_bench as gb
import gpu_bench_profile as gp
from tests.fixtures import write_run


def gemm(name, gflops):
    return {"name": name, "run_type": "iteration", "flops": gflops * 1e9}


def cuda_micro():
    """bench_memory, bench_gemm and bench_sampler records as a GPU run writes them."""
    memory = [{"name": "BM_CopyCuda/16777216/real_time", "bytes": 3.0e12},
              {"name": "BM_SmallOpCuda/real_time", "items_per_second": 4e5},
              {"name": "BM_UploadCuda/bytes:4096/real_time", "items_per_second": 2e5,
               "bytes_per_second": 8e8},
              {"name": "BM_UploadCuda/bytes:16777216/real_time", "items_per_second": 3e3,
               "bytes_per_second": 5e10}]
    gemms = [gemm("BM_GemmCuda/m:1800/n:100/k:372/tf32:0/real_time", 10000),
             gemm("BM_GemmWeightGradCuda/m:18000/n:200/k:200/tf32:0/real_time", 40000),
             gemm("BM_GemmCuda/m:1800/n:100/k:372/tf32:1/real_time", 50000),
             {"name": "BM_GemmCuda_mean", "run_type": "aggregate", "flops": 1.0}]
    plan = [{"name": "BM_PlanPass/threads:1/real_time", "planned/s": 5e7},
            {"name": "BM_PlanPass/threads:0/real_time", "planned/s": 1.6e8, "threads": 16}]
    return [{"name": p, "program": p, "rc": 0, "benchmarks": b}
            for p, b in (("bench_memory", memory), ("bench_gemm", gemms),
                         ("bench_sampler", plan))]


def trained(model, data, batch, median, **cfg):
    r = gb.train_config(model, data, batch, **cfg)
    r.update(rc=0, step_s={"steps": 40, "median": median, "p10": median * 0.9,
                           "p90": median * 1.2, "max": median * 3},
             calls={"op_calls_per_step": 150, "uploads_per_step": 16},
             host_waits_per_step=1.0, peak_bytes={"device": 3 << 30, "host": 1 << 30},
             stage_s_per_step={"sample": 1e-3, "backward": 2e-3})
    return r


def bench(device, records):
    return {"device": device, "gpu": "h100" if device == "cuda" else "cpu",
            "device_name": "NVIDIA H100 80GB HBM3", "commit": "abc1234",
            "date": "2026-12-06 21:00 UTC", "profile_name": "h100-measured",
            "records": records}


class PlanTest(unittest.TestCase):
    def test_gpu_plan_is_issue_32s(self):
        items = gb.plan("cuda")
        names = [i["name"] for i in items]
        self.assertEqual(names[:3], ["bench_memory", "bench_gemm", "bench_sampler"])
        runs = [i["config"] for i in items if "config" in i]
        curves = [c for c in runs if c["pipeline"] and not c["tf32"] and c["refine"] == 1]
        self.assertEqual(len(curves), 4 * 5)  # 3 WIKI models and TGN REDDIT at 5 batches
        self.assertEqual(sorted({c["batch"] for c in curves}), [600, 1200, 2400, 4800, 9600])
        self.assertEqual(sorted(c["refine"] for c in runs if c["refine"] > 1), [8] * 4)
        self.assertEqual(len([c for c in runs if not c["pipeline"]]), 8)
        self.assertEqual(len([c for c in runs if c["tf32"]]), 8)
        self.assertLess(names.index("reddit-synth"), names.index("tgn-reddit-b600"))
        self.assertEqual(len(names), len(set(names)))

    def test_train_argv(self):
        class A:
            device, bin, data, threads = "cpu", "/b", "/d", 1
        argv = gb.train_argv(A, gb.train_config("tgn", "reddit", 200, refine=2)["config"], "/r")
        self.assertEqual(argv[:3], ["/b/depbloom-train", "--config", "configs/tgn-synth-reddit.yaml"])
        for s in ("train.batch_size=200", "refine.micro_batches=2", "pipeline.enabled=true",
                  "run.tf32=false", "data.path=/d/reddit-s0.01-f172", "train.epoch=2"):
            self.assertIn(s, argv)
        self.assertEqual(argv[argv.index("--threads") + 1], "1")


class WarmEpochTest(unittest.TestCase):
    def test_reads_the_last_epoch(self):
        with tempfile.TemporaryDirectory() as d:
            epoch = {"train_seconds": 1.0, "calls": {}, "host_waits_per_step": 0,
                     "peak_bytes": {"host": 5, "device": 0},
                     "stage_s": {"sample": 0.4, "backward": 0.2, "evaluation": 9.0}}
            write_run(d, [dict(epoch, step_s={"steps": 2, "median": 9}),
                          dict(epoch, step_s={"steps": 4, "median": 0.5})])
            s = gb.summarise_run(gb.warm_epoch(d))
        self.assertEqual(s["epoch"], 2)
        self.assertEqual(s["step_s"]["median"], 0.5)
        self.assertEqual(s["stage_s_per_step"], {"sample": 0.1, "backward": 0.05})
        self.assertIsNone(gb.warm_epoch(d))

    def test_an_unreadable_result_is_a_failed_record(self):
        with tempfile.TemporaryDirectory() as d:
            write_run(d, [{"train_seconds": 1.0, "stage_s": {}}])  # no step_s: an older binary
            with self.assertRaises(KeyError):
                gb.read_result({"config": {}}, d)
            with self.assertRaises(ValueError):
                gb.read_result({"config": {}}, os.path.join(d, "none"))


class ProfileTest(unittest.TestCase):
    def write(self, b):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "configs", "devices", "h100-measured.yaml")
            missing = gp.write_profile(b, path)
            text = None
            if os.path.exists(path):
                with open(path) as f:
                    text = f.read()
        return missing, text

    def test_gpu_profile(self):
        records = cuda_micro() + [
            trained("tgn", "wiki", 1200, 0.004), trained("tgn", "wiki", 600, 0.003),
            trained("tgn", "wiki", 600, 0.002, tf32=True),
            trained("tgn", "wiki", 4800, 0.009, refine=8),
            trained("tgn", "reddit", 600, 0.005), trained("jodie", "wiki", 600, 0.001),
            dict(gb.train_config("apan", "wiki", 600), rc=124, why="time limit 45 s")]
        missing, text = self.write(bench("cuda", records))
        self.assertIsNone(missing)
        self.assertIn("\nname: h100-measured\n", text)
        self.assertIn("\ngemm_gflop_s: 16000.0\n", text)  # harmonic mean of 10 and 40 TFLOP/s
        self.assertIn("with TF32 on (run.tf32): 50000 GFLOP/s", text)
        self.assertIn("\nmemory_gb_s: 3000.00\n", text)
        self.assertIn("\nop_launch_us: 2.5000\n", text)
        self.assertIn("\nupload_latency_us: 5.0000\n", text)
        self.assertIn("\nhost_to_device_gb_s: 50.000\n", text)
        self.assertIn("\nhost_plan_per_s: 50000000\n", text)
        self.assertIn("\nhost_threads: 3\n", text)  # 3.2 x one core
        self.assertIn("step_curves:\n  jodie:\n    - {batch: 600, device_seconds: 0.001}\n"
                      "  tgn:\n    - {batch: 600, device_seconds: 0.003}\n"
                      "    - {batch: 1200, device_seconds: 0.004}\n", text)
        self.assertIn("apan-wiki-b600: not measured (time limit 45 s)", text)
        self.assertIn("tgn-wiki-b4800-refine8: step 9.000 ms", text)
        self.assertIn("all_gather:\n  bandwidth_gb_s: 450\n", text)
        self.assertIn("01afd20", text)
        self.assertTrue(all(len(line) <= 100 for line in text.splitlines()))
        # every measured key is commented with the GPU, the date and the commit
        self.assertEqual(text.count("[h100, 2026-12-06 21:00 UTC, commit abc1234]"), 7 + 2)

    def test_cpu_profile(self):
        memory = [{"name": "BM_Copy/16777216/real_time", "bytes": 2e10},
                  {"name": "BM_SmallOp/real_time", "real_time": 5.0}]
        records = [{"name": "bench_memory", "program": "bench_memory", "rc": 0,
                    "benchmarks": memory},
                   {"name": "bench_gemm", "program": "bench_gemm", "rc": 0,
                    "benchmarks": [gemm("BM_Gemm<float>/m:1/n:1/k:1/real_time", 80)]},
                   dict(cuda_micro()[2])]
        missing, text = self.write(bench("cpu", records))
        self.assertIsNone(missing)
        self.assertIn("\nop_launch_us: 0.0050\n", text)
        self.assertIn("\nhost_to_device_gb_s: 0.000\n", text)
        self.assertIn("\nhost_threads: 1\n", text)
        self.assertNotIn("upload_latency_us", text)
        self.assertNotIn("step_curves", text)

    def test_nothing_written_without_a_key(self):
        records = [r for r in cuda_micro() if r["program"] != "bench_sampler"]
        missing, text = self.write(bench("cuda", records))
        self.assertEqual(missing, "plan rate, 1 thread")
        self.assertIsNone(text)
        failed = cuda_micro()
        failed[1]["rc"] = 1
        self.assertEqual(self.write(bench("cuda", failed))[0], "GEMM rate (f32)")


class WithoutCurvesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_without_curves_keeps_keys_after_them(self):
        src, out = os.path.join(self.dir, "a.yaml"), os.path.join(self.dir, "b.yaml")
        with open(src, "w") as f:
            f.write("name: x\n# the curves\nstep_curves:\n  tgn:\n    - {batch: 1}\n"
                    "\n# the link\nall_reduce:\n  latency_us: 1\n")
        gp.without_curves(src, out)
        with open(out) as f:
            self.assertEqual(f.read(), "name: x\n# the link\nall_reduce:\n  latency_us: 1\n")


class LoopTest(unittest.TestCase):
    def test_a_spent_budget_still_writes_bench_json(self):
        with tempfile.TemporaryDirectory() as d:
            argv = ["--device", "cpu", "--bin", d, "--out", d, "--data", d, "--profile",
                    os.path.join(d, "p.yaml"), "--budget-s", "0"]
            with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
                self.assertEqual(gb.main(argv), 1)
            with open(os.path.join(d, "bench.json")) as f:
                b = json.load(f)
            self.assertEqual(len(b["records"]), len(gb.plan("cpu")))
            self.assertEqual({r["why"] for r in b["records"]}, {"budget spent"})
            self.assertEqual(b["profile_missing"], "GEMM rate (f32)")
            self.assertFalse(os.path.exists(os.path.join(d, "p.yaml")))


class WriteJsonTest(unittest.TestCase):
    def test_replaces_whole(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bench.json")
            gb.write_json(path, {"a": 1})
            gb.write_json(path, {"b": 2})
            with open(path) as f:
                self.assertEqual(json.load(f), {"b": 2})
            self.assertEqual(os.listdir(d), ["bench.json"])


if __name__ == "__main__":
    unittest.main()

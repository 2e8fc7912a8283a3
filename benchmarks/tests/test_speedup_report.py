"""speedup_report.read_manifest: run folders named relative to the manifest (or absolute, as
older manifests hold them), and a folder listed again by a resumed suite."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import speedup_report as sr  # noqa: E402


class ReadManifestTest(unittest.TestCase):
    def test_relative_folders_resolve_next_to_the_manifest_and_the_last_line_holds(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "manifest.tsv")
            with open(path, "w") as f:
                f.write("wiki\ttgn\t1\tstrict\t0\t2\t600\t/old/place/wiki-tgn-p1-strict-s0\texit 1\n")
                f.write("wiki\ttgn\t2\tstrict\t0\t1\t1200\twiki-tgn-p2-strict-s0\texit 0\n")
                f.write("\n")
                f.write("wiki\ttgn\t1\tstrict\t0\t2\t600\twiki-tgn-p1-strict-s0\texit 0\n")
            runs = sr.read_manifest(path)
        self.assertEqual([r["dir"] for r in runs],
                         [os.path.join(d, "wiki-tgn-p2-strict-s0"),
                          os.path.join(d, "wiki-tgn-p1-strict-s0")])
        self.assertEqual([r["status"] for r in runs], ["exit 0", "exit 0"])
        self.assertEqual(runs[0]["batch"], 1200)

    def test_an_absolute_folder_stays_as_it_is(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "manifest.tsv")
            with open(path, "w") as f:
                f.write("wiki\ttgn\t1\tstrict\t0\t2\t600\t/runs/x/wiki-tgn-p1-strict-s0\texit 0\n")
            self.assertEqual(sr.read_manifest(path)[0]["dir"], "/runs/x/wiki-tgn-p1-strict-s0")


if __name__ == "__main__":
    unittest.main()

"""depbloom-data get and list against a RangeServer on 127.0.0.1 (never beyond it).

DEPBLOOM_DATA_TOOL names the binary; DEPBLOOM_DATASETS points the tool at a table of
datasets served by the test, made of small SNAP and JODIE files written here.
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import unittest
import zipfile

from range_server import RangeServer

TOOL = os.environ.get("DEPBLOOM_DATA_TOOL", "build/depbloom-data")


def snap_text(events):
    return "".join("%d %d %d\n" % (i % 17, 100 + i % 23, 1000 + 7 * i) for i in range(events))


def archive(kind, name, body):
    """A zip or tar.bz2 holding `body` as `name`, made in memory."""
    buf = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr(name, body)
    else:
        with tarfile.open(fileobj=buf, mode="w:bz2") as t:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            t.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def jodie_text(events, features):
    rows = ["user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n"]
    for i in range(events):
        feats = ",".join("%.3f" % ((i * 31 + k) % 97 / 97.0) for k in range(features))
        rows.append("%d,%d,%d,0,%s\n" % (i % 13, i % 7, 10 * i, feats))
    return "".join(rows)


class GetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = RangeServer()
        cls.snap = snap_text(300).encode()
        cls.jodie = jodie_text(200, 4).encode()
        cls.server.files.update({
            "/snap.txt": cls.snap,
            "/snap.txt.gz": gzip.compress(cls.snap),
            "/jodie.csv": cls.jodie,
            "/snap.zip": archive("zip", "inner/snap.txt", cls.snap),
            "/snap.tar.bz2": archive("tar.bz2", "inner/snap.txt", cls.snap),
        })

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="depbloom-get-")
        self.dir = os.path.join(self.tmp, "data")
        self.table = os.path.join(self.tmp, "datasets.json")
        self.entries = {
            "snap": {"url": self.server.url("/snap.txt"), "file": "snap.txt", "format": "snap",
                     "events": 300, "sha256": hashlib.sha256(self.snap).hexdigest()},
            "snapgz": {"url": self.server.url("/snap.txt.gz"), "unpack": "gz",
                       "file": "snap.txt", "format": "snap", "events": 300},
            "jodie": {"url": self.server.url("/jodie.csv"), "file": "jodie.csv",
                      "format": "jodie", "events": 200, "header": "user_id,item_id",
                      "config": "configs/tgn-reddit.yaml"},
            "snapzip": {"url": self.server.url("/snap.zip"), "unpack": "zip",
                        "file": "inner/snap.txt", "format": "snap", "events": 300},
            "snaptar": {"url": self.server.url("/snap.tar.bz2"), "unpack": "tar.bz2",
                        "file": "inner/snap.txt", "format": "snap", "events": 300},
            "badzip": {"url": self.server.url("/snap.txt"), "unpack": "zip",
                       "file": "inner/snap.txt", "format": "snap"},
            "badsum": {"url": self.server.url("/snap.txt"), "file": "snap.txt",
                       "format": "snap", "sha256": "0" * 64},
            "badrows": {"url": self.server.url("/snap.txt"), "file": "snap.txt",
                        "format": "snap", "events": 301},
            "badheader": {"url": self.server.url("/snap.txt"), "file": "snap.txt",
                          "format": "snap", "header": "user_id"},
            # No loader reads it (as TGB's edge lists): its rows after the header are counted.
            "rowsonly": {"url": self.server.url("/jodie.csv"), "file": "edges.csv",
                         "events": 200},
            "badrowsonly": {"url": self.server.url("/jodie.csv"), "file": "edges.csv",
                            "events": 201},
            "missing": {"url": self.server.url("/no-such.txt"), "file": "x.txt",
                        "format": "snap"},
            "refused": {"url": "http://127.0.0.1:%d/x.txt" % closed_port(), "file": "x.txt",
                        "format": "snap"},
        }
        self.write_table()
        self.server.requests.clear()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write_table(self):
        with open(self.table, "w") as f:
            json.dump([dict(name=k, **v) for k, v in self.entries.items()], f)

    def run_tool(self, *args):
        env = dict(os.environ, DEPBLOOM_DATASETS=self.table)
        return subprocess.run([TOOL, *args], env=env, capture_output=True, text=True,
                              timeout=60)

    def get(self, name, *extra):
        return self.run_tool("get", name, "--dir", self.dir, *extra)

    def leftovers(self):
        """What a failed get must not leave: staging folders and .part files."""
        if not os.path.isdir(self.dir):
            return []
        return [n for n in os.listdir(self.dir) if ".tmp." in n or n.endswith(".part")]

    def assert_ready(self, name, file, body):
        folder = os.path.join(self.dir, name)
        with open(os.path.join(folder, file), "rb") as f:
            self.assertEqual(f.read(), body)
        with open(os.path.join(folder, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["file_sha256"], hashlib.sha256(body).hexdigest())
        cache = os.path.join(os.path.dirname(os.path.join(folder, file)), ".depbloom-cache")
        self.assertTrue(os.path.isdir(cache))
        self.assertEqual(self.leftovers(), [])

    def test_clean_download(self):
        r = self.get("snap")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_ready("snap", "snap.txt", self.snap)
        self.assertIn("--data %s" % os.path.join(self.dir, "snap", "snap.txt"), r.stdout)
        self.assertEqual(self.server.requests, [("/snap.txt", None)])

    def test_gzip_and_jodie_with_config_line(self):
        self.assertEqual(self.get("snapgz").returncode, 0)
        self.assert_ready("snapgz", "snap.txt", self.snap)
        r = self.get("jodie")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--config configs/tgn-reddit.yaml --data", r.stdout)
        self.assertIn("4 edge features", r.stderr)

    def test_archives(self):
        for name in ("snapzip", "snaptar"):
            r = self.get(name)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assert_ready(name, "inner/snap.txt", self.snap)
        r = self.get("badzip")  # a text file where a zip belongs
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "badzip")))
        self.assertEqual(self.leftovers(), [])

    def test_cut_download_resumes(self):
        half = len(self.snap) // 2
        self.server.cuts["/snap.txt"] = half
        r = self.get("snap")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn(self.entries["snap"]["url"], r.stderr)
        part = os.path.join(self.dir, "snap.part")
        self.assertEqual(os.path.getsize(part), half)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "snap")))
        r = self.get("snap")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.server.requests[-1], ("/snap.txt", "bytes=%d-" % half))
        self.assert_ready("snap", "snap.txt", self.snap)

    def test_checksum_mismatch_leaves_nothing(self):
        r = self.get("badsum")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("differs from the published", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 2)  # the log line, the error
        self.assertFalse(os.path.exists(os.path.join(self.dir, "badsum")))
        self.assertEqual(self.leftovers(), [])

    def test_bad_rows_and_header_leave_nothing(self):
        for name, words in (("badrows", "expected 301"), ("badheader", "starting `user_id`")):
            r = self.get(name)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn(words, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.dir, name)))
            self.assertEqual(self.leftovers(), [])

    def test_rows_of_a_file_no_loader_reads(self):
        r = self.get("rowsonly")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.isfile(os.path.join(self.dir, "rowsonly", "manifest.json")))
        r = self.get("badrowsonly")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("holds 200 rows after its header, expected 201", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "badrowsonly")))
        self.assertEqual(self.leftovers(), [])

    def test_404_and_refused_connection(self):
        for name in ("missing", "refused"):
            r = self.get(name)
            self.assertEqual(r.returncode, 4, r.stderr)
            error = r.stderr.strip().splitlines()[-1]
            self.assertIn(self.entries[name]["url"], error)
            self.assertIn("get %s --from FILE" % name, error)
            self.assertEqual(self.leftovers(), [])
        self.assertIn("HTTP 404", self.get("missing").stderr)

    def test_second_get_does_nothing(self):
        self.assertEqual(self.get("snap").returncode, 0)
        events = os.path.join(self.dir, "snap", "snap.txt")
        before = os.stat(events).st_mtime_ns
        r = self.get("snap")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("is here", r.stderr)
        self.assertEqual(len(self.server.requests), 1)
        self.assertEqual(os.stat(events).st_mtime_ns, before)

    def test_changed_file_fails_the_manifest_check(self):
        self.assertEqual(self.get("snap").returncode, 0)
        with open(os.path.join(self.dir, "snap", "snap.txt"), "ab") as f:
            f.write(b"1 2 99999\n")
        r = self.get("snap")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("differs from the first download", r.stderr)

    def test_folder_not_made_by_get_is_left_alone(self):
        os.makedirs(os.path.join(self.dir, "snap"))
        r = self.get("snap")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("not made by get (no manifest.json); use another --dir", r.stderr)
        self.assertEqual(self.server.requests, [])

    def test_from_file_needs_no_network(self):
        placed = os.path.join(self.tmp, "by-hand.txt")
        with open(placed, "wb") as f:
            f.write(self.snap)
        r = self.get("refused", "--from", placed)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.server.requests, [])

    def test_list(self):
        self.assertEqual(self.get("snap").returncode, 0)
        r = self.run_tool("list", "--dir", self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        here = {line.split()[0]: line.split()[2] for line in r.stdout.splitlines()[1:]}
        self.assertEqual(here["snap"], "yes")
        self.assertEqual(here["jodie"], "no")

    def test_unknown_name_is_a_usage_error(self):
        r = self.get("no-such-dataset")
        self.assertEqual(r.returncode, 2)
        self.assertIn("known: snap", r.stderr)


def closed_port():
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    unittest.main()

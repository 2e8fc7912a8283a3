#!/usr/bin/env python3
"""Convert TGB's fixed evaluation negatives (Python pickles) into .npy arrays DepBloom reads.

TGB ships each link-prediction set's validation and test negatives as a pickled dict
{(src, dst, t): negative destinations}. This writes, per split, <split>_src.npy,
<split>_dst.npy (int64), <split>_ts.npy (float64) and <split>_neg.npy (int64, [Q, K]) into
the output folder, for data.tgb_negatives (docs/data.md). Needs Debian's python3 and
python3-numpy only. Every query must have the same number K of negatives.

    python3 tools/tgb_negatives.py --val tgbl-wiki_val_ns_v2.pkl \
        --test tgbl-wiki_test_ns_v2.pkl -o data/tgbl-wiki/negatives
"""
import argparse
import os
import pickle
import sys

import numpy


def read_queries(path):
    """The pickle's queries as four arrays, in the dict's order."""
    with open(path, "rb") as f:
        table = pickle.load(f)
    if not isinstance(table, dict) or not table:
        raise ValueError("%s: expected a non-empty dict {(src, dst, t): negatives}" % path)
    src, dst, ts, neg = [], [], [], []
    width = None
    for row, (key, negatives) in enumerate(table.items()):
        if not isinstance(key, tuple) or len(key) != 3:
            raise ValueError("%s: query %d: key %r is not (src, dst, t)" % (path, row, key))
        negatives = numpy.asarray(negatives).reshape(-1)
        if width is None:
            width = len(negatives)
        if len(negatives) != width or width == 0:
            raise ValueError("%s: query %d has %d negatives, the first had %d (K must be fixed)"
                             % (path, row, len(negatives), width))
        src.append(int(key[0]))
        dst.append(int(key[1]))
        ts.append(float(key[2]))
        neg.append(negatives.astype(numpy.int64))
    return (numpy.array(src, dtype=numpy.int64), numpy.array(dst, dtype=numpy.int64),
            numpy.array(ts, dtype=numpy.float64), numpy.stack(neg))


def save(array, path):
    """Writes through a temporary file and a rename, so no half-written array is left."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        numpy.save(f, array)
    os.replace(tmp, path)


def convert(split, pickle_path, out_dir):
    src, dst, ts, neg = read_queries(pickle_path)
    os.makedirs(out_dir, exist_ok=True)
    for name, array in (("src", src), ("dst", dst), ("ts", ts), ("neg", neg)):
        save(array, os.path.join(out_dir, "%s_%s.npy" % (split, name)))
    return len(src), neg.shape[1]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--val", help="TGB's validation negatives (.pkl)")
    parser.add_argument("--test", help="TGB's test negatives (.pkl)")
    parser.add_argument("-o", "--output", required=True, help="folder to write the .npy into")
    args = parser.parse_args(argv)
    if not args.val and not args.test:
        parser.error("give --val, --test or both")
    for split, path in (("val", args.val), ("test", args.test)):
        if path:
            try:
                queries, width = convert(split, path, args.output)
            except (OSError, ValueError, pickle.UnpicklingError) as e:
                print("tgb_negatives: %s" % e, file=sys.stderr)
                return 3
            print("%s: %d queries, %d negatives each -> %s" % (split, queries, width, args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
"""Write (or check) the `range` lines of a model folder's encoding from the rows it learned from.

The runtime flags a problem field outside its `range` (tunecast predict warns; PredictInfo's
out_of_range_fields). tools/train.py records the range of every problem field over its training
rows; runs exported before that recorded only the fields the encoding reads, which leaves a 1x1
kernel's model silent about y=3 or a WrW3x3 model silent about pad 0. This tool brings such a
folder up to date: it reads solver, archs, training precisions, fit_on and split_seed from the
folder's model.tcir.json metadata, extracts those rows again (tools/tunecast_train/data.py) and
rewrites model.tce's range lines, nothing else. A range already in the file must come out the same
(else the data or metadata is not what the model learned from, and nothing is written).

  /usr/bin/python3 tools/encoding_ranges.py weights/ConvAsm1x1U            # rewrite model.tce
  /usr/bin/python3 tools/encoding_ranges.py --check weights/Conv*/          # exit 1 if any differ
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tunecast_train import data, features, files  # noqa: E402


def fail(message):
    sys.exit(f"encoding_ranges.py: {message}")


def read_ranges(lines):
    """{field: (min, max)} of the `range FIELD MIN MAX` lines."""
    out = {}
    for line in lines:
        parts = line.split("#", 1)[0].split()
        if parts[:1] == ["range"]:
            if len(parts) != 4:
                raise ValueError(f"malformed range line: {line.strip()!r}")
            out[parts[1]] = (int(parts[2]), int(parts[3]))
    return out


def expected_ranges(folder, data_dir):
    """Every problem field's range over the rows the folder's model learned from (its metadata)."""
    meta = json.load(open(os.path.join(folder, "model.tcir.json"))).get("metadata", {})
    missing = [k for k in ("solver", "arch", "fit_on") if k not in meta]
    if missing:
        raise ValueError(f"model.tcir.json metadata lacks {', '.join(missing)} (not a tools/train.py export?)")
    if meta["fit_on"] not in data.FIT_SPLITS:
        raise ValueError(f"metadata fit_on {meta['fit_on']!r} is not one of {', '.join(data.FIT_SPLITS)}")
    precisions = (meta.get("training_precisions") or meta.get("precisions", "")).split(",")
    rows = data.load(data_dir, [meta["solver"]], meta["arch"].split(","), precisions,
                     int(meta.get("split_seed", "0")))
    fit = [r for r in rows if r["split"] in data.FIT_SPLITS[meta["fit_on"]]]
    if not fit:
        raise ValueError(f"no {meta['solver']} rows of {meta['arch']} {','.join(precisions)} in {data_dir}")
    return features.ranges_of(data.fields_matrix(fit)), len(fit)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", help="folders holding model.tcir.json and model.tce (weights/<solver>, a run)")
    ap.add_argument("--data", default=data.DEFAULT_PERFDB_DIR,
                    help="perf DB folder, or folder of <solver>.csv written by tools/dataset.py "
                         "(default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file's ranges differ")
    args = ap.parse_args()
    for folder in args.folders:
        if not os.path.isdir(folder):
            fail(f"{folder}: no such folder")
        for f in ("model.tcir.json", "model.tce"):
            if not os.path.isfile(os.path.join(folder, f)):
                fail(f"{folder}: no {f} (give a folder written by tools/train.py or tools/ship_ensemble.py)")
    if not os.path.isdir(args.data):
        fail(f"{args.data}: no such data folder (perf DBs or tools/dataset.py CSVs; --data)")

    differ = 0
    for folder in args.folders:
        tce = os.path.join(folder, "model.tce")
        lines = open(tce).read().splitlines(keepends=True)
        try:
            have = read_ranges(lines)
            want, n = expected_ranges(folder, args.data)
        except (ValueError, OSError) as e:
            fail(f"{folder}: {e}")
        changed = {f: r for f, r in have.items() if want.get(f) != r}
        if changed:
            fail(f"{folder}: model.tce's range of {', '.join(sorted(changed))} differs from the data's "
                 f"({'; '.join(f'{f} {have[f]} vs {want.get(f)}' for f in sorted(changed))}): not the rows "
                 "this model learned from")
        added = [f for f in want if f not in have]
        if not added:
            print(f"{tce}: every field's range is recorded ({n} rows)")
            continue
        differ += 1
        if args.check:
            print(f"{tce}: no range for {', '.join(added)}")
            continue
        kept = [line for line in lines if line.split("#", 1)[0].split()[:1] != ["range"]]
        if kept and not kept[-1].endswith("\n"):
            kept[-1] += "\n"
        text = "".join(kept) + "".join(f"range {f} {lo} {hi}\n" for f, (lo, hi) in want.items())
        with files.replacing(tce) as partial, open(partial, "w") as out:
            out.write(text)
        print(f"{tce}: ranges of {len(want)} fields from {n} rows (added {', '.join(added)})")
    sys.exit(1 if args.check and differ else 0)


if __name__ == "__main__":
    main()

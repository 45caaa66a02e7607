#!/usr/bin/env python3
"""Markdown table of `tunecast eval --json` results: ours vs baselines vs the paper's Table IV vs
the bar issue 7 sets (the best of most-frequent, nearest-neighbour and random-forest-on-the-joint-
label, measured on the independent holdout: other problems than our test split, so indicative).

usage: eval_table.py EVAL.json [EVAL.json ...]
Each file is one (model, perf DB, solver, precision) evaluation; rows are grouped by solver.
A k the evaluation lacks (e.g. --beam 1,10) shows as "-" and is left out of the comparisons; a row
whose model learned from evaluated problems (the JSON's in_sample_problems, else in_sample_splits) is marked "(in-sample)".
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tunecast_train.eval_results import arch_of, read  # noqa: E402

KEYS = ("solver", "perfdb", "precisions", "n", "perfect", "average", "invalid_rate")

KS = ("1", "10", "30", "50", "100")
# Mahmood, Khan, Afzal, Table IV: perfect@10/30/50/100 (%) on the paper's own data.
PAPER = {
    ("ConvAsm1x1U", "FP32"): (19.9, 30.4, 34.5, 40.9),
    ("ConvAsm1x1U", "FP16"): (68.5, 78.8, 81.5, 87.3),
    ("ConvOclDirectFwd1x1", "FP32"): (72.5, 90.5, 93.9, 95.8),
    ("ConvOclDirectFwd1x1", "FP16"): (79.7, 86.6, 89.2, 91.6),
    ("ConvAsmBwdWrW1x1", "FP32"): (36.5, 52.9, 60.0, 71.4),
    ("ConvAsmBwdWrW1x1", "FP16"): (44.1, 62.1, 65.8, 73.3),
    ("ConvAsmBwdWrW3x3", "FP32"): (58.6, 81.4, 87.1, 91.4),
    ("ConvAsmBwdWrW3x3", "FP16"): (77.8, 88.9, 91.1, 95.6),
}

# Issue 7's bar: perfect@1/10/30/50/100 (%) of the best of most-frequent, nearest-neighbour and
# random forest on the joint label, measured on the independent holdout.
HOLDOUT_BAR = {
    ("ConvAsm1x1U", "gfx900", "FP32"): (19.9, 52.6, 63.9, 68.8, 75.2),
    ("ConvAsm1x1U", "gfx900", "FP16"): (32.5, 75.9, 86.8, 90.0, 92.5),
    ("ConvAsm1x1U", "gfx906", "FP32"): (16.3, 62.2, 77.3, 81.3, 86.6),
    ("ConvAsm1x1U", "gfx906", "FP16"): (28.8, 78.5, 87.7, 90.7, 95.3),
    ("ConvOclDirectFwd1x1", "gfx900", "FP32"): (27.9, 81.2, 94.6, 97.9, 100.0),
    ("ConvOclDirectFwd1x1", "gfx900", "FP16"): (32.6, 85.5, 95.9, 98.5, 100.0),
    ("ConvOclDirectFwd1x1", "gfx906", "FP32"): (21.3, 71.3, 87.2, 95.7, 98.9),
    ("ConvOclDirectFwd1x1", "gfx906", "FP16"): (38.1, 89.4, 96.5, 99.1, 100.0),
    ("ConvAsmBwdWrW1x1", "gfx900", "FP32"): (21.5, 56.6, 69.1, 74.9, 80.3),
    ("ConvAsmBwdWrW1x1", "gfx900", "FP16"): (25.4, 62.0, 72.5, 77.9, 83.6),
    ("ConvAsmBwdWrW1x1", "gfx906", "FP32"): (19.6, 66.4, 80.7, 85.5, 90.2),
    ("ConvAsmBwdWrW1x1", "gfx906", "FP16"): (21.4, 59.0, 70.4, 75.8, 82.4),
    ("ConvAsmBwdWrW3x3", "gfx900", "FP32"): (12.2, 51.1, 66.2, 72.7, 78.4),
    ("ConvAsmBwdWrW3x3", "gfx900", "FP16"): (25.8, 62.9, 81.4, 86.6, 90.7),
    ("ConvAsmBwdWrW3x3", "gfx906", "FP32"): (13.4, 50.0, 66.1, 70.5, 78.6),
    ("ConvAsmBwdWrW3x3", "gfx906", "FP16"): (13.3, 57.8, 71.1, 75.9, 83.1),
}


def lost_at(ours, other):
    """'yes' when ours is above other at every k both have, else where it is not; 'n/a' when they
    share no k. Notes the k compared when some of KS are missing."""
    shared = [(k, o, b) for k, o, b in zip(KS, ours, other) if o is not None and b is not None]
    if not shared:
        return "n/a"
    lost = [k for k, o, b in shared if o <= b]
    verdict = "yes" if not lost else "no (not at k=" + ",".join(lost) + ")"
    if len(shared) < len(KS):
        verdict += " (only k=" + ",".join(k for k, _, _ in shared) + ")"
    return verdict


def fmt(values):
    return "/".join("-" if v is None else f"{v:.1f}" for v in values)


def in_sample_mark(r):
    """' (in-sample)' when the model learned from the evaluated split (its in_sample_splits), a
    partial mark when the split is 'all' and the model learned from only some of it, else ''."""
    splits = r.get("in_sample_splits") or []
    count = r.get("in_sample_problems")  # tunecast eval since 2026-11-23: the exact number
    if not splits or count == 0:
        return ""
    if r.get("in_sample_basis") == "unknown":   # --train-perfdb of another arch: cannot tell
        return " (in-sample: unknown)"
    if count is not None:
        return " (in-sample)" if count == r["n"] else f" (partly in-sample: {count} of {r['n']})"
    if r.get("split", "all") != "all" or set(splits) >= {"train", "val", "test"}:
        return " (in-sample)"
    return " (partly in-sample: " + ",".join(splits) + ")"


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 else 2
    results = [read(path, "eval_table", KEYS) for path in sys.argv[1:]]
    print("| kernel | arch | prec | n | tunecast p@1/10/30/50/100 | avg@1 | most frequent | nearest "
          "| paper p@10/30/50/100 | invalid | beats best baseline at every k "
          "| issue 7 holdout bar | beats it at every k |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    marked = False
    for r in results:
        solver, arch, prec = r["solver"], arch_of(r), ",".join(r["precisions"])
        ours = [r["perfect"].get(k) for k in KS]
        avg1 = f"{r['average']['1']:.1f}" if "1" in r["average"] else "-"
        mark = in_sample_mark(r)
        marked = marked or bool(mark)
        base = r.get("baselines", {})
        freq = [base["most_frequent"]["perfect"].get(k) for k in KS] if base else None
        near = [base["nearest"]["perfect"].get(k) for k in KS] if base else None
        best = [None if a is None or b is None else max(a, b) for a, b in zip(freq, near)] if base else None
        paper = PAPER.get((solver, prec))
        bar = HOLDOUT_BAR.get((solver, arch, prec))
        print(f"| {solver} | {arch} | {prec} | {r['n']} | {fmt(ours)}{mark} | {avg1} "
              f"| {fmt(freq) if freq else '-'} | {fmt(near) if near else '-'} "
              f"| {fmt(paper) if paper else '-'} | {r['invalid_rate']:.4f} | {lost_at(ours, best) if best else '-'} "
              f"| {fmt(bar) if bar else '-'} | {lost_at(ours, bar) if bar else '-'} |")
    if marked:
        print("\nin-sample: the model learned from the evaluated problems (all of them, or those of the named "
              "splits; the eval JSON's in_sample_problems or in_sample_splits), so a marked row is not a held-out result.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

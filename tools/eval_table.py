#!/usr/bin/env python3
"""Markdown table of `tunecast eval --json` results: ours vs baselines vs the paper's Table IV.

usage: eval_table.py EVAL.json [EVAL.json ...]
Each file is one (model, perf DB, solver, precision) evaluation; rows are grouped by solver.
"""
import json
import os
import sys

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


def fmt(values):
    return "/".join(f"{v:.1f}" for v in values)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 else 2
    rows = []
    for path in sys.argv[1:]:
        with open(path) as f:
            r = json.load(f)
        arch = os.path.basename(r["perfdb"]).split("_")[0]
        prec = ",".join(r["precisions"])
        ours = [r["perfect"][k] for k in KS]
        base = r.get("baselines", {})
        freq = [base["most_frequent"]["perfect"][k] for k in KS] if base else None
        near = [base["nearest"]["perfect"][k] for k in KS] if base else None
        best = [max(a, b) for a, b in zip(freq, near)] if base else None
        paper = PAPER.get((r["solver"], prec))
        beats = all(o > b for o, b in zip(ours, best)) if best else None
        rows.append((r["solver"], arch, prec, r["n"], ours, r["average"]["1"], freq, near, paper,
                     r["invalid_rate"], beats, best))
    print("| kernel | arch | prec | n | tunecast p@1/10/30/50/100 | avg@1 | most frequent | nearest "
          "| paper p@10/30/50/100 | invalid | beats best baseline at every k |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for solver, arch, prec, n, ours, avg, freq, near, paper, invalid, beats, best in rows:
        lost = "" if beats else " (not at k=" + ",".join(k for k, o, b in zip(KS, ours, best) if o <= b) + ")"
        print(f"| {solver} | {arch} | {prec} | {n} | {fmt(ours)} | {avg:.1f} | {fmt(freq)} | {fmt(near)} "
              f"| {fmt(paper) if paper else '-'} | {invalid:.4f} | {'yes' if beats else 'no' + lost} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

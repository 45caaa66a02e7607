#!/usr/bin/python3
"""Score a mean-probability ensemble of trained runs in PyTorch, on one split of our data.

For questions the runtime cannot answer yet, or before building an ensemble for it: members of any
kind, study models that do not export (the transformer decoder) included; each member reads its own
encoder input (tools/ensemble.py merges exported mlp and LSTM members for the runtime). The search is training's masked beam search (no validity rules),
so compare its figures with each other, not with `tunecast eval`. Each run folder needs the
model.pt that tools/train.py writes; all runs must share the solver and the vocabulary.

  /usr/bin/python3 research/study_ensemble.py --runs RUN1 RUN2 ... [--split val] [--k 1 10 30]
      [--data .device/data] [--json OUT.json]
prints perfect@k per (arch, precision) and the mean over groups, members alone first (--each).
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
from torch import nn

# tools/ holds the trainer's package tunecast_train.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from tunecast_train import data, features, models, search  # noqa: E402

MODEL_ARGS = ("emb", "units", "hidden", "filters", "dropout", "layers", "heads")


def load_run(run, prog="study_ensemble"):
    path = os.path.join(run, "model.pt")
    if not os.path.exists(path):
        sys.exit(f"{prog}: {path} not found (train.py writes it next to metrics.json)")
    if "numpy._core" not in sys.modules and not hasattr(np, "_core"):
        # runs trained under NumPy 2 (the device) pickle its module paths; NumPy 1 (Debian 12) reads them
        sys.modules["numpy._core"], sys.modules["numpy._core.multiarray"] = np.core, np.core.multiarray
    ck = torch.load(path, map_location="cpu", weights_only=False)
    a = ck["args"]
    enc = features.Encoding.from_json(ck["encoding"])
    vocab = data.Vocabulary.from_json(ck["vocabulary"])
    model = models.build(a["model"], enc.shape, vocab.size, ck["mean"], ck["std"],
                         **{k: a[k] for k in MODEL_ARGS if k in a})
    model.load_state_dict(ck["state_dict"])
    return model.eval(), enc, vocab, a


class Ensemble(nn.Module):
    """Members read their own encoder input: X is every member's input flattened and concatenated.
    Each member's memory rides along as one more state, so the beam search reorders it with the
    hypotheses; step() returns log(mean_i p_i), already normalized."""

    def __init__(self, members, shapes):
        super().__init__()
        self.members = nn.ModuleList(members)
        self.shapes = shapes
        self.counts = []

    def encode(self, X):
        states, offset = [], 0
        self.counts = []
        for m, shape in zip(self.members, self.shapes):
            size = shape[0] * shape[1]
            st, mem = m.encode(X[:, offset:offset + size].reshape(len(X), *shape))
            offset += size
            self.counts.append(len(st))
            states += list(st) + [mem if mem is not None else X.new_zeros(len(X), 0)]
        return states, None

    def step(self, tok, states, mem):
        logps, new, i = [], [], 0
        for m, n in zip(self.members, self.counts):
            st, own_mem = states[i:i + n], states[i + n]
            logits, st = m.step(tok, st, own_mem if own_mem.dim() == 3 else None)
            logps.append(torch.log_softmax(logits.float(), -1))
            new += list(st) + [own_mem]
            i += n + 1
        return torch.logsumexp(torch.stack(logps), 0) - math.log(len(logps)), new


def score(model, encs, vocab, rows, ks, max_problems=0):
    """{"arch/precision": metrics}: every member's encoder input, flattened and concatenated."""
    device = next(model.parameters()).device
    inputs = lambda sel: torch.cat([torch.tensor(e.matrix(data.fields_matrix(sel))).reshape(len(sel), -1)  # noqa: E731
                                    for e in encs], 1).to(device)
    return {f"{a}/{p}": m for (a, p), m in search.evaluate(model, inputs, vocab, rows, ks, max_problems).items()}


def line(name, result, ks):
    mean = {k: np.mean([g[f"perfect@{k}"] for g in result.values()]) for k in ks}
    groups = "  ".join(f"{g} " + "/".join(f"{m[f'perfect@{k}']:.1f}" for k in ks) for g, m in result.items())
    return f"{name:40s} mean p@{'/'.join(map(str, ks))} {'/'.join(f'{mean[k]:.2f}' for k in ks)}   {groups}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", required=True, help="run folders of tools/train.py (with model.pt)")
    ap.add_argument("--data", default=data.DEFAULT_PERFDB_DIR,
                    help="perf DB folder, or folder of <solver>.csv written by tools/dataset.py")
    ap.add_argument("--split", default="val", choices=data.SPLITS,
                    help="split to score (test only once every choice is made)")
    ap.add_argument("--k", type=int, nargs="+", default=[1, 10, 30], help="beam widths: perfect@k for each")
    ap.add_argument("--each", action="store_true", help="also score every member alone")
    ap.add_argument("--max-problems", type=int, default=0,
                    help="score only the first N problems of each (arch, precision) group (0: all)")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--json", help="write {name: {group: metrics}} here")
    args = ap.parse_args()
    if any(k < 1 for k in args.k):
        ap.error("--k: beam widths must be >= 1")
    if args.max_problems < 0:
        ap.error("--max-problems must be >= 0")
    torch.set_num_threads(args.threads)
    names = [os.path.basename(os.path.normpath(r)) for r in args.runs]
    if len(set(names)) != len(names):
        ap.error("--runs: two run folders share a name (results are keyed by it)")
    loaded = [load_run(r) for r in args.runs]
    solver, vocab = loaded[0][3]["solver"], loaded[0][2]

    def data_of(a):  # what decides a run's rows and split
        return a["solver"], a["split_seed"], sorted(a["arch"]), sorted(a["precision"])
    for run, (_, _, v, a) in zip(args.runs, loaded):
        if data_of(a) != data_of(loaded[0][3]) or v.to_json() != vocab.to_json():
            sys.exit(f"study_ensemble: {run} differs from {args.runs[0]} in solver, split seed, archs, "
                     f"precisions or vocabulary: {data_of(a)} vs {data_of(loaded[0][3])}")
        if args.split in data.FIT_SPLITS[a.get("fit_on", "train")]:
            print(f"study_ensemble: note: {run} learned from the {args.split} split", file=sys.stderr)
    a0 = loaded[0][3]
    rows = [r for r in data.load(args.data, [solver], a0["arch"], a0["precision"], a0["split_seed"])
            if r["split"] == args.split]
    for r in rows:  # the search's vectors come in the runs' decode order (train.py --param-order)
        r["params"] = vocab.to_decode_order(r["params"])
    first = f", the first {args.max_problems} of each arch and precision" if args.max_problems else ""
    print(f"[study] {solver}: {len(rows)} {args.split} problems{first}, {len(loaded)} runs", flush=True)
    results = {}
    todo = [(name, [x]) for name, x in zip(names, loaded)] if args.each else []
    todo.append((f"ensemble of {len(loaded)}", loaded))
    for name, members in todo:
        model = Ensemble([m for m, *_ in members], [e.shape for _, e, *_ in members]).to(args.device)
        results[name] = score(model, [e for _, e, *_ in members], vocab, rows, args.k, args.max_problems)
        print(line(name, results[name], args.k), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Self-check of the export, no data needed (CI): for every model kind, a randomly initialised
model is exported to tunecast-ir JSON and the numpy reference interpreter of docs/interchange.md
(tunecast_train/ir.py: sequence/step LSTM incl. reverse, attention, Conv1D, Dense, Embedding,
Concat) must match PyTorch within 1e-5 (relative to max(1, |value|)) on the encoder outputs and
several decoder steps. Also checks the .tce expression evaluator's C semantics, and that study models
(no export) compute the same logits in training's one pass as in the search's steps.

With --tunecast CLI, every model is also compiled by tunecast and run by its runtime, which must
reproduce PyTorch's own outputs within 1e-4 (`tunecast compile --check-vectors`): the PyTorch parity
test of every layer the trainer exports (ctest -R pytorch_parity). --write-fixtures DIR keeps the
exports (DIR/<kind>/model.tcir.json, model.tce, model.vectors.json): tests/data/pytorch holds them,
so that the C++ suite checks the same parity, blob and generated code, without PyTorch.

  /usr/bin/python3 tools/test_export.py [--seed 0] [--tunecast build/codegen/tunecast]
                                        [--write-fixtures tests/data/pytorch]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tunecast_train import data, export, features, models  # noqa: E402
import ensemble  # noqa: E402


def synthetic_fields(n, rng):
    f = np.zeros((n, len(data.FIELDS)), np.int64)
    col = {name: i for i, name in enumerate(data.FIELDS)}
    for name, choices in [("dir", [0, 1]), ("dtype", [0, 1]), ("n", [1, 2, 8, 16, 64, 256]),
                          ("c", [3, 16, 64, 96, 256, 1024]), ("k", [16, 32, 64, 128, 2048]),
                          ("h", [7, 14, 28, 56, 112]), ("stride_h", [1, 2]), ("arch", [0, 1])]:
        f[:, col[name]] = rng.choice(choices, n)
    f[:, col["w"]] = f[:, col["h"]]
    f[:, col["stride_w"]] = f[:, col["stride_h"]]
    for name in ("d", "y", "x", "z", "dil_h", "dil_w", "g", "spatial_dim"):
        f[:, col[name]] = 1 if name != "spatial_dim" else 2
    return f


def check_expressions():
    env = {name: np.array([v]) for name, v in zip(data.FIELDS, range(1, len(data.FIELDS) + 1))}
    env["c"], env["k"], env["dir"] = np.array([-7]), np.array([2]), np.array([1])
    cases = {"c / k": -3, "c % k": -1, "1 + 2 * 3": 7, "(1 + 2) * 3": 9, "dir == B ? 10 : 20": 10,
             "!0 + !5": 1, "1 < 2 && 2 < 1 || 1": 1, "-c": 7, "4 % 2 == 0 + 1": 0, "(4 % 2 == 0) + 1": 2,
             "gfx906 + FP16 + W": 4,
             # the rules language's builtins and shifts (a kernel definition's `feature` statements)
             "ceil_div(7, 2)": 4, "ceil_div(-7, 2)": -3, "ceil_div(c, -2)": 4, "ceil_div(8, 2)": 4,
             "min(3, k, 9)": 2, "max(c, k)": 2, "abs(c)": 7, "is_pow2(k) + is_pow2(6) + is_pow2(0)": 1,
             "ilog2(1000)": 9, "1 << 4 >> 2": 4, "0x10 + 1": 17, "max(1, 2) * 3 < 7": 1}
    for text, want in cases.items():
        got = int(features.Expr(text).eval(env, 1)[0])
        assert got == want, f"{text}: got {got}, want {want}"
    # a kernel definition's own fields and symbols, and any architecture name (tunecast-train)
    own = {"m": np.array([100]), "dtype": np.array([1]), "arch": np.array([data.arch_code("h100")])}
    for text, want in {"ceil_div(m, 16) * (dtype == FP32)": 7, "arch == h100": 1, "arch == a100": 0}.items():
        got = int(features.Expr(text, ["m", "dtype", "arch"], {"FP16": 0, "FP32": 1}, any_arch=True).eval(own, 1)[0])
        assert got == want, f"{text}: got {got}, want {want}"
    print(f"[test_export] {len(cases) + 3} expression cases ok")


def check_digest_with_compiler(tunecast, model_json, work):
    """features.encoding_digest (Python) and `tunecast compile`'s (C++) agree on every transform and
    on free spellings: compile accepts the model with the Python digest of a .tce, refuses another."""
    cols = model_json["graphs"][0]["values"][model_json["graphs"][0]["inputs"][0]]["cols"]
    tce = "\n".join([f"input 1 x {cols}", "encode 0 0 raw n", "encode 0 1 log2  c * k   # spaces, a comment",
                      "encode 0 2 onehot 03 dir", "encode 0 5 standardize - 0.5 2.25 (h+1)", "range n 1 64"]) + "\n"
    ok = True
    for digest, want in ((features.encoding_digest(tce), 0), ("fnv1a64:0000000000000000", 2)):
        j = dict(model_json, metadata=dict(model_json["metadata"], encoding_digest=digest))
        with open(os.path.join(work, "digest.tcir.json"), "w") as f:
            json.dump(j, f)
        with open(os.path.join(work, "digest.tce"), "w") as f:
            f.write(tce)
        r = subprocess.run([tunecast, "compile", os.path.join(work, "digest.tcir.json"), "--encoding",
                            os.path.join(work, "digest.tce"), "-o", os.path.join(work, "digest.tcm"), "--force"],
                           capture_output=True, text=True)
        ok &= r.returncode == want
        print(f"[test_export] encoding digest {digest}: compile exit {r.returncode} (want {want}) "
              f"{'ok' if r.returncode == want else 'FAILED: ' + r.stderr.strip()}", flush=True)
    return ok


def check_study_models(vocab_size):
    """Models that do not export (the transformer study) train in one pass and search step by step:
    both must give the same logits."""
    for kind, cls in models.MODELS.items():
        if cls.exportable:
            continue
        model = models.build(kind, (1, 20), vocab_size, np.zeros(20), np.ones(20), units=16, hidden=24,
                             dropout=0.0, layers=2, heads=4).eval()
        X, tokens = torch.randn(5, 1, 20), torch.randint(0, vocab_size, (5, 7))
        with torch.no_grad():
            diff = (model.teacher(X, tokens) - models.Seq2Seq.teacher(model, X, tokens)).abs().max().item()
        assert diff < 1e-5, f"{kind}: one-pass and step-by-step logits differ by {diff:.2e}"
        print(f"[test_export] {kind:10s} (study model, no export): one pass vs step by step max diff {diff:.2e} ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tunecast", help="the tunecast CLI: also check the runtime against PyTorch")
    ap.add_argument("--write-fixtures", metavar="DIR", help="keep each export in DIR/<kind>/")
    args = ap.parse_args()
    if args.tunecast and not os.access(args.tunecast, os.X_OK):
        ap.error(f"--tunecast {args.tunecast}: not an executable")
    work = tempfile.TemporaryDirectory(prefix="tunecast_test_export_")
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    check_expressions()
    fields = synthetic_fields(64, rng)
    params = [[int(rng.integers(1, 4)), int(rng.choice([4, 8, 16])), int(rng.integers(1, 8))] for _ in fields]
    # Decoded alpha, beta, gamma but listed (beta, gamma, alpha) in the export: every fixture also
    # checks that generated code and the blob runtime place decoded values at their positions
    # (train.py --param-order; tests/data/pytorch/decode_order.tcr adds rules). Names that are no
    # problem field, so that rules can name them.
    vocab = data.Vocabulary(["alpha", "beta", "gamma"], list(zip(*params)), decode_order=[2, 0, 1])
    assert data.Vocabulary.from_json(vocab.to_json()).to_json() == vocab.to_json()
    assert [p["name"] for p in vocab.to_json()["parameters"]] == ["beta", "gamma", "alpha"]
    check_study_models(vocab.size)
    failures = 0
    exports = {}
    for kind, cls in models.MODELS.items():
        if not cls.exportable:
            continue
        enc = features.Encoding.select(fields, cls.layout)
        X = enc.matrix(fields)
        f = enc.values(X)
        model = models.build(kind, enc.shape, vocab.size, f.mean(0), f.std(0) + 1e-3, emb=8, units=12,
                             hidden=16, filters=10, dropout=0.0)
        with torch.no_grad():  # non-trivial biases and scales so folding mistakes show
            for p in model.parameters():
                p.add_(0.3 * torch.randn_like(p))
        j = export.model_json(model, enc, vocab, f"test_{kind}", {"test": "1"})
        exports[kind] = j
        tokens = torch.tensor([[t for t in vocab.encode(p)] for p in params[:5]])
        vectors = export.reference_vectors(model, j, torch.tensor(X[:5]), tokens)
        diff = export.check(j, vectors)
        ok = diff < 1e-5
        failures += not ok
        print(f"[test_export] {kind:10s} encoder input {enc.shape[0]}x{enc.shape[1]}: numpy vs PyTorch max rel diff "
              f"{diff:.2e} {'ok' if ok else 'FAILED'}", flush=True)
        if args.tunecast or args.write_fixtures:
            out = os.path.join(args.write_fixtures or work.name, kind)
            export.write(out, model, enc, vocab, f"test_{kind}", {"test": "1"})
            export.write_vectors(out, vectors)
        if args.tunecast:
            ok, text = export.check_with_runtime(args.tunecast, out)
            failures += not ok
            print(f"[test_export] {kind:10s} tunecast runtime vs PyTorch: {'ok' if ok else 'FAILED'}\n  "
                  + text.replace("\n", "\n  "), flush=True)
    if args.tunecast:
        failures += not check_digest_with_compiler(args.tunecast, exports["mlp"], work.name)
    # Mixed ensembles (tools/ensemble.py): an mlp member rewritten to read the LSTM models' diag input.
    mixed = ensemble.flat_reads_diag(exports["mlp"])
    err = ensemble.flat_reads_diag_error(exports["mlp"], mixed, rng)
    failures += err > 1e-5
    print(f"[test_export] mlp read through the diag input (mixed ensembles): max rel diff {err:.2e} "
          f"{'ok' if err <= 1e-5 else 'FAILED'}", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

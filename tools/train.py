#!/usr/bin/python3
"""Train a seq2seq tuning-parameter predictor, evaluate it with masked beam search, and export it
(into --out: model.tcir.json, model.tce encoder input, model.vectors.json, model.pt, metrics.json,
metrics.txt; tools/ship.py turns a run into weights/<kernel>/ with its card.md).

Examples:
  /usr/bin/python3 tools/train.py --smoke --out /tmp/smoke                       # CI: seconds, CPU
  /usr/bin/python3 tools/train.py --data .device/data --solver ConvAsm1x1U --model mlp \\
      --epochs 60 --device cuda --out .device/runs/asm
Models: paper (LSTM enc-dec), attention (bi-LSTM + Luong dot), hybrid (Conv1D enc + LSTM dec),
mlp (ours: MLP encoder over one feature row, 2-layer LSTM decoder reading the problem at every step),
transformer (a study: mlp's encoder, pre-LN transformer decoder; PyTorch only, writes no tunecast export).
One model covers every arch / precision / direction asked for; they are encoder inputs.
Any other kernel (a definition and its timing DBs, docs/kernels.md): tools/tunecast-train, the same
models, recipe flags and training loop (tools/tunecast_train/training.py).
"""
import argparse
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tunecast_train import data, export, features, training  # noqa: E402
from tunecast_train import baselines as bl  # noqa: E402



def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=data.DEFAULT_PERFDB_DIR,
                    help="perf DB folder, or folder of <solver>.csv written by tools/dataset.py")
    ap.add_argument("--solver", default="ConvAsm1x1U", metavar="{" + ",".join(data.SOLVER_PARAMS) + "}",
                    help="a MIOpen kernel, or TritonGemm1x1 (timings/); any other kernel: tunecast-train "
                         "--kernel KERNEL.tcr --timings DB (docs/training.md, \"Training any kernel\")")
    ap.add_argument("--arch", nargs="+", default=["gfx900", "gfx906"],
                    choices=list(data.ARCHS) + list(data.DEVICE_ARCHS))
    ap.add_argument("--precision", nargs="+", default=["FP32", "FP16"], choices=list(data.DTYPES))
    ap.add_argument("--train-precision", nargs="+", default=None,
                    help="precisions used for training (default: --precision); e.g. add BF16 as extra data")

    def kernel_features(ap):
        ap.add_argument("--kernel-features", action="store_true",
                        help="add the kernel-aware encoder features of tools/tunecast_train/features.py "
                             "KERNEL_CANDIDATES (solvers listed there only)")
    training.add_model_arguments(ap, after_dropout=kernel_features)
    ap.add_argument("--tunecast", metavar="CLI",
                    help="the tunecast CLI (e.g. build/codegen/tunecast): compile the export and require the "
                         "runtime to reproduce PyTorch's outputs (model.vectors.json) within 1e-4")
    ap.add_argument("--out", required=True, help="output folder")
    args = ap.parse_args()
    if args.solver not in data.SOLVER_PARAMS:
        ap.error(f"--solver {args.solver}: train.py knows the kernels of MIOpen's perf DBs and timings/ "
                 f"({', '.join(data.SOLVER_PARAMS)}); any kernel with a definition and timing DBs: "
                 f"tunecast-train --kernel {args.solver}.tcr --timings DB ... (docs/training.md, \"Training any kernel\")")
    training.check_counts(ap, args)
    if args.train_precision and not set(args.train_precision) <= set(data.DTYPES):
        ap.error(f"--train-precision: choose from {', '.join(data.DTYPES)}")
    if not os.path.exists(args.data):
        sys.exit(f"train: --data {args.data} not found (a perf DB folder, or tools/dataset.py's CSV folder or file)")
    if os.path.isdir(args.data) and not any(f.endswith(".db") for f in os.listdir(args.data)) \
            and not os.path.isfile(os.path.join(args.data, f"{args.solver}.csv")):
        sys.exit(f"train: --data {args.data} holds neither perf DBs (*.db) nor {args.solver}.csv")
    training.check_model_arguments(ap, args)
    training.parse_param_order(ap, args, len(data.SOLVER_PARAMS[args.solver]), args.solver)
    if args.kernel_features and args.solver not in features.KERNEL_CANDIDATES:
        ap.error(f"--kernel-features: none defined for {args.solver} (tools/tunecast_train/features.py "
                 f"KERNEL_CANDIDATES has {', '.join(features.KERNEL_CANDIDATES)})")
    return args


def _timing_dbs(args):
    """The MIOpen-keyed timing DBs (a `timings` table beside perf_db, timings/) among the DBs read."""
    if not os.path.isdir(args.data):
        return []
    out = []
    for arch in args.arch:
        try:
            path = data.perfdb_path(args.data, arch)
        except FileNotFoundError:
            continue
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            if data._has_timings(con):
                out.append(os.path.basename(path))
        finally:
            con.close()
    return out


class MiopenSource:
    """MIOpen's perf DBs (and the MIOpen-keyed timing DBs of timings/): the convolution problem's
    fields (data.FIELDS), one group per (arch, precision)."""
    command = "/usr/bin/python3 tools/train.py"
    shipped_command = "python3 tools/train.py"
    failure_only = []

    def __init__(self, args):
        self.solver = args.solver
        self.param_names = data.SOLVER_PARAMS[args.solver]
        self.train_prec = args.train_precision or args.precision
        try:
            self.rows = data.load(args.data, [args.solver], args.arch,
                                  sorted(set(args.precision) | set(self.train_prec)), args.split_seed, args.near_optimal)
        except (OSError, ValueError, sqlite3.Error) as e:
            sys.exit(f"train: {e}")

    def partition(self, args):
        fit = data.FIT_SPLITS[args.fit_on]
        train = [r for r in self.rows if r["split"] in fit and data.PRECISION_OF[r["dtype"]] in self.train_prec]
        val = [r for r in self.rows if r["split"] == "val" and data.PRECISION_OF[r["dtype"]] in args.precision]
        test = [r for r in self.rows if r["split"] == "test" and data.PRECISION_OF[r["dtype"]] in args.precision]
        return train, val, test

    def no_rows(self, args):
        return (f"train: no {args.fit_on} rows of {args.solver} for {', '.join(args.arch)} x {', '.join(self.train_prec)} "
                f"in {args.data}")

    def describe_rows(self, args, train, val, test):
        return (f"{len(train)} {args.fit_on} / {len(val)} val / {len(test)} test rows, "
                f"archs {args.arch}, precisions {args.precision} (train {self.train_prec})")

    fields_matrix = staticmethod(data.fields_matrix)
    groups = staticmethod(data.groups)
    knn_features = staticmethod(bl.knn_features)

    @staticmethod
    def vocabulary(param_names, train, param_order):
        """The values some training target uses (the shipped recipes' vocabularies)."""
        return data.Vocabulary.from_rows(param_names, train, param_order)

    @staticmethod
    def neighbour_group(r):
        return (r["arch"], r["dtype"])

    def encoding(self, train, layout, args):
        extra = features.KERNEL_CANDIDATES[args.solver] if args.kernel_features else ()
        return features.Encoding.select(data.fields_matrix(train), layout, extra)

    def result_extra(self):
        return {}

    def metadata(self, args, shipped_command, test_metrics):
        timing_dbs = _timing_dbs(args)
        source = (f"timing DBs {', '.join(timing_dbs)} (MIOpen-keyed, timings/README.md)" if timing_dbs
                  else "MIOpen perf DBs (commit 2d1fd997)")
        return {"arch": ",".join(args.arch), "solver": args.solver, "precisions": ",".join(args.precision),
                "training_precisions": ",".join(self.train_prec), "fit_on": args.fit_on, "model": args.model,
                "split_seed": str(args.split_seed),
                "split": "sha256('<split_seed>:<descriptor>') mod 1000: <800 train, <900 val, else test",
                "seed": str(args.seed), "training_command": shipped_command, "source": source,
                "test_metrics": test_metrics}

    def runtime_check(self, args):
        return export.check_with_runtime(args.tunecast, args.out) if args.tunecast else None


def main():
    args = parse()
    training.run(args, MiopenSource(args))


if __name__ == "__main__":
    main()

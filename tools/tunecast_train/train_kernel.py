"""tunecast-train: train a tuning-parameter predictor for any kernel from its definition and timing DBs.

  tunecast-train --kernel MyHgemm.tcr --timings a.db b.db --out runs/hgemm
  tunecast-train --smoke --kernel tests/data/kernels/ToyGemm.tcr --timings toy.db --out /tmp/toy

The definition (docs/kernels.md) is read through `tunecast check KERNEL.tcr --json` (--tunecast, else
the tunecast built or installed next to this package, else on PATH); a timing DB that carries its
definition needs no --kernel. Targets: each problem's fastest measured `ok` config (the median of
its repeated rows), with --near-optimal F also every `ok` config within F of it; a config with a
failed row is never a target, and is learned as bad (--failure-weight). Encoder features: log2 of
every integer field, one per symbol of every enumeration, one per architecture when the data has
several, and the definition's `feature` statements. Writes into --out what tools/train.py writes
(model.tcir.json, model.tce, model.vectors.json, model.pt, metrics.json, metrics.txt) and the
definition as kernel.tcr; then

  tunecast compile OUT/model.tcir.json --rules OUT/kernel.tcr --encoding OUT/model.tce -o K.tcm

The models, recipe flags and training loop are tools/train.py's (tools/tunecast_train/training.py).
"""
import argparse
import os
import shutil
import sqlite3
import sys
import tempfile

import numpy as np

from . import data, export, features, kernel, training

FAILURE_LOSSES = ("departure", "sequence")


def parse(argv=None):
    ap = argparse.ArgumentParser(prog="tunecast-train", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", metavar="KERNEL.tcr",
                    help="the kernel definition (docs/kernels.md), or `tunecast check KERNEL.tcr --json`'s output "
                         "saved as a .json file; default: the definition the first timing DB carries")
    ap.add_argument("--timings", nargs="+", required=True, metavar="DB",
                    help="timing DBs (tunecast-timings/2) of the kernel; several merge (a problem is matched by "
                         "its canonical text)")
    ap.add_argument("--arch", nargs="+", metavar="NAME",
                    help="learn and evaluate only these architectures (names as the data spells them); "
                         "default: every architecture in the data")
    training.add_model_arguments(ap)
    ap.add_argument("--failure-weight", type=float, default=3.0, metavar="W",
                    help="weight of the failed configs' unlikelihood term (0: failures are only never targets)")
    ap.add_argument("--failure-loss", default="departure", choices=FAILURE_LOSSES,
                    help="departure: push down the failed config's token at the step where it leaves every "
                         "prefix its problem measured ok; sequence: its whole sequence's probability")
    ap.add_argument("--failure-sample", type=int, default=8, metavar="N",
                    help="at most N failed configs of each problem per epoch, drawn anew each epoch (0: all)")
    ap.add_argument("--tunecast", metavar="CLI",
                    help="the tunecast CLI: reads the definition (`tunecast check --json`) and checks the export "
                         "(`tunecast compile --rules KERNEL --check-vectors`); default: the one built or installed "
                         "next to this package, else tunecast on PATH")
    ap.add_argument("--out", required=True, help="output folder")
    args = ap.parse_args(argv)
    training.check_counts(ap, args)
    if not args.failure_weight >= 0 or args.failure_sample < 0:
        ap.error("--failure-weight and --failure-sample must be 0 or more")
    if not 0 <= args.near_optimal:
        ap.error("--near-optimal must be 0 or more")
    for path in args.timings:
        if not os.path.isfile(path):
            sys.exit(f"tunecast-train: --timings {path} not found")
    if args.kernel and not os.path.isfile(args.kernel):
        sys.exit(f"tunecast-train: --kernel {args.kernel} not found")
    training.check_model_arguments(ap, args)   # an explicit --tunecast must be an executable
    args.tunecast = kernel.find_tunecast(args.tunecast)
    return ap, args


class KernelSource:
    """A kernel definition's timing DBs: the definition's fields, one group per architecture."""
    command = "tunecast-train"
    shipped_command = "tunecast-train"

    def __init__(self, args, k, recordings, definition_path):
        self.kernel, self.recordings, self.definition_path = k, recordings, definition_path
        self.solver = k.name
        self.param_names = k.params
        archs = recordings.archs()
        if args.arch:
            missing = [a for a in args.arch if a not in archs]
            if missing:
                sys.exit(f"tunecast-train: --arch {' '.join(missing)}: not in the data (it has "
                         f"{', '.join(archs) or 'no architecture field'})")
            archs = [a for a in archs if a in args.arch]
        self.archs = archs
        self.rows, self.failure_only = recordings.rows(args.split_seed, args.near_optimal,
                                                       set(archs) if k.arch_field else None)

    def partition(self, args):
        fit = data.FIT_SPLITS[args.fit_on]
        train = [r for r in self.rows if r["split"] in fit]
        val = [r for r in self.rows if r["split"] == "val" and not r.get("near_optimal")]
        test = [r for r in self.rows if r["split"] == "test" and not r.get("near_optimal")]
        return train, val, test

    def no_rows(self, args):
        message = (f"tunecast-train: no {args.fit_on} problem of {self.solver} with a measured ok config in "
                   f"{', '.join(args.timings)}")
        splits = {}
        for r in self.rows:
            if not r.get("near_optimal"):
                splits.setdefault(r["split"], set()).add(r["problem"])
        if not splits:
            return message
        # A problem's split is a hash of its text without the arch: one shape timed on several GPUs
        # (Kernel Tuner's caches, one problem each) is all in one split.
        counts = ", ".join(f"{len(g)} in {name}" for name, g in sorted(splits.items()))
        return (f"{message}: its problems are {counts} (split by the problem without its arch, so one shape "
                "on several GPUs is one split's); with so few problems, --fit-on all learns from every one "
                "(and evaluates on none)")

    def describe_rows(self, args, train, val, test):
        near = sum(1 for r in train if r.get("near_optimal"))
        return (f"{len(train) - near} {args.fit_on} problems" + (f" (+{near} near-optimal rows)" if near else "")
                + f" / {len(val)} val / {len(test)} test, archs {', '.join(self.archs) or '-'}; "
                + self.recordings.describe())

    def fields_matrix(self, rows):
        return np.array([r["fields"] for r in rows], dtype=np.int64).reshape(len(rows), len(self.kernel.fields))

    @staticmethod
    def groups(rows):
        out = {}
        for r in rows:
            out.setdefault(r["group"], []).append(r)
        return dict(sorted(out.items()))

    def knn_features(self, fields):
        return self.kernel.knn_features(fields)

    def vocabulary(self, param_names, train, param_order):
        """Every value of the definition's domains (with the targets' values, should a recording hold
        one outside them): the predictor can emit a value no training problem's best used, so where
        the rules leave only such values it still has a valid candidate."""
        domains = data.in_decode_order(self.kernel.domains, param_order)
        targets = list(zip(*[r["params"] for r in train])) or [()] * len(param_names)
        return data.Vocabulary(param_names, [list(d) + list(t) for d, t in zip(domains, targets)], param_order)

    @staticmethod
    def neighbour_group(r):
        return r["group"]

    def encoding(self, train, layout, args):
        k = self.kernel
        return features.Encoding.select(self.fields_matrix(train), layout, (), k.feature_candidates(self.archs),
                                        k.field_names, k.expression_symbols())

    def result_extra(self):
        return {"kernel": self.kernel.name, "source": self.recordings.describe(),
                "failure_only_problems": len(self.failure_only)}

    def metadata(self, args, shipped_command, test_metrics):
        k = self.kernel
        targets = "each problem's fastest measured ok config (median of its ok rows)"
        if args.near_optimal:
            targets += f" and every ok config within {args.near_optimal:g} of it"
        meta = {"arch": ",".join(self.archs), "solver": k.name, "fields": ",".join(k.field_names),
                "fit_on": args.fit_on, "model": args.model, "split_seed": str(args.split_seed),
                "split": "sha256('<split_seed>:<canonical problem text without the arch item>') mod 1000: "
                         "<800 train, <900 val, else test",
                "seed": str(args.seed), "training_command": shipped_command, "source": self.recordings.describe(),
                "targets": targets, "failures": (f"never targets; unlikelihood ({args.failure_loss}) weight "
                                                 f"{args.failure_weight:g}" if args.failure_weight else "never targets"),
                "test_metrics": test_metrics}
        if not k.arch_field:
            del meta["arch"]
        return meta

    def runtime_check(self, args):
        """The runtime reproduces PyTorch's outputs, the export compiled with the definition as rules
        (only where the definition was read through the CLI: a .json definition has no rules file)."""
        if not (args.tunecast and self.definition_path):
            return None
        return export.check_with_runtime(args.tunecast, args.out, rules=os.path.join(args.out, "kernel.tcr"))


def main(argv=None):
    ap, args = parse(argv)
    tmp = None
    try:
        path = args.kernel
        if not path:   # the definition the first timing DB carries
            try:
                text = kernel.definition_text(args.timings[0])
            except sqlite3.Error as e:
                sys.exit(f"tunecast-train: {args.timings[0]}: {e}")
            if not text:
                sys.exit(f"tunecast-train: {args.timings[0]} carries no definition (meta key `definition`): "
                         "pass --kernel KERNEL.tcr")
            tmp = tempfile.mkdtemp(prefix="tunecast_train_")
            path = os.path.join(tmp, "kernel.tcr")
            with open(path, "w") as fh:
                fh.write(text)
        try:
            k = kernel.Kernel.load(path, args.tunecast)
            recordings = kernel.Recordings(k, args.timings)
        except (OSError, ValueError, sqlite3.Error) as e:
            sys.exit(f"tunecast-train: {e}")
        definition = None if path.endswith(".json") else path
        training.parse_param_order(ap, args, len(k.params), k.name)
        src = KernelSource(args, k, recordings, definition)
        if not src.partition(args)[0]:
            sys.exit(src.no_rows(args))  # before OUT is made: a refused run leaves nothing behind
        os.makedirs(args.out, exist_ok=True)
        if definition:
            shutil.copyfile(definition, os.path.join(args.out, "kernel.tcr"))
        training.run(args, src)
        rules = os.path.join(args.out, "kernel.tcr") if definition else "KERNEL.tcr"
        print(f"[train] then: tunecast compile {os.path.join(args.out, 'model.tcir.json')} --rules {rules} "
              f"--encoding {os.path.join(args.out, 'model.tce')} -o {k.name}.tcm", flush=True)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

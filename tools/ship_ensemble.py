#!/usr/bin/python3
"""Ship an ensemble made by tools/ensemble.py into weights/<solver>/ with card.md and metrics.json.

Numbers come from the runtime (`tunecast eval --json`, constrained beam search), one JSON per
(arch, precision) and split, named eval_<split>_<arch db>_<precision>.json in --evals. Members refit
on train + val (tools/train.py --fit-on train+val) need only test JSONs, evaluated with
`--baselines-fit-on train+val` so that the baselines learn from the same rows. Members refit on all
of our split (--fit-on all) leave nothing to measure them on: --twin-runs names their train + val
refits (same recipes, seeds and stop epochs, checked), and --evals holds the test JSONs of the
ensemble of those twins, which the card reports as the estimate.

  /usr/bin/python3 tools/ship_ensemble.py --ensemble DIR --runs RUN1 RUN2 RUN3 --evals DIR \\
      --dest weights/ConvAsm1x1U --combine prob --why "..." \\
      [--sweeps research/sweeps/do_mlp_ensembles_beat_one_model.txt ...]
"""
import argparse
import collections
import glob
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ensemble import check_model_folder  # noqa: E402

KS = ["1", "10", "30", "50", "100"]
# What each member kind is (tools/tunecast_train/models.py), for the card.
KIND_TEXT = {
    "mlp": "our mlp model: the problem as one feature row -> Dense(ReLU) x 2 -> Dense heads for the initial "
           "states of a 2-layer LSTM decoder and a problem vector read at every step (one-row Attention = exact "
           "broadcast) -> Dense(ReLU) -> Dense(vocabulary)",
    "paper": "the paper's LSTM encoder-decoder: Dense -> LSTM -> LSTM over the feature steps; decoder Embedding "
             "-> LSTM -> LSTM (initial states from the encoder) -> Dense(vocabulary)",
    "attention": "the paper's attention model: bi-LSTM encoder over the feature steps; LSTM decoder with Luong "
                 "dot attention -> Dense(tanh) -> Dense(vocabulary)",
    "hybrid": "the hybrid model: Conv1D x 2 -> LSTM encoder over the feature steps; LSTM decoder -> Dense(vocabulary)",
}


def load_evals(d, split):
    out = {}
    for f in sorted(glob.glob(os.path.join(d, f"eval_{split}_*.json"))):
        g = os.path.basename(f)[len(f"eval_{split}_"):-5]
        out[g] = json.load(open(f))
    return out


def table(ev):
    lines = [f"{'group':26s} {'n':>5s} " + " ".join(f"{'p@' + k:>6s}" for k in KS) + "  invalid"]
    for g, j in ev.items():
        rows = [("tunecast", j["perfect"]), ("most-frequent", j["baselines"]["most_frequent"]["perfect"]),
                ("nearest", j["baselines"]["nearest"]["perfect"])]
        for name, p in rows:
            inv = f"  {j['invalid_rate']:.3f}" if name == "tunecast" else ""
            lines.append(f"{g + ' ' + name:26s} {j['n']:5d} " + " ".join(f"{p[k]:6.1f}" for k in KS) + inv)
    return "\n".join(lines)


def check_twins(members, twins):
    """A member refit on all data and its train + val twin must differ only in --fit-on (and names)."""
    if len(members) != len(twins):
        raise SystemExit(f"ship_ensemble: {len(members)} members but {len(twins)} --twin-runs")
    ignored = {"fit_on", "name", "out", "device", "threads", "tunecast", "data"}
    for m, t in zip(members, twins):
        if t["args"].get("fit_on") != "train+val":
            raise SystemExit(f"ship_ensemble: twin {t['name']} was not refit on train+val")
        diff = sorted(k for k in set(m["args"]) | set(t["args"])
                      if k not in ignored and m["args"].get(k) != t["args"].get(k))
        if diff:
            raise SystemExit(f"ship_ensemble: {m['name']} and its twin {t['name']} differ in " + ", ".join(diff))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ensemble", required=True)
    ap.add_argument("--runs", nargs="+", required=True)
    ap.add_argument("--evals", required=True)
    ap.add_argument("--dest", required=True)
    ap.add_argument("--combine", default="prob")
    ap.add_argument("--why", default="")
    ap.add_argument("--twin-runs", nargs="+", default=[],
                    help="with members refit on all data: their train + val refits, in the same order")
    ap.add_argument("--sweeps", nargs="+",
                    default=["research/sweeps/do_mlp_ensembles_beat_one_model.txt"],
                    help="the sweep plan(s) that trained the members (named in the card)")
    args = ap.parse_args()
    # Every input checked before anything is read or written, with one line naming the missing path.
    check_model_folder(args.ensemble, "--ensemble folder", "a tools/ensemble.py --out folder?")
    for r in args.runs + args.twin_runs:
        check_model_folder(r, files=("metrics.json",))
    if not os.path.isdir(args.evals):
        raise SystemExit(f"ship_ensemble: --evals folder {args.evals} not found")
    ms = [json.load(open(os.path.join(r, "metrics.json"))) for r in args.runs]
    val, test = load_evals(args.evals, "val"), load_evals(args.evals, "test")
    m0, a = ms[0], ms[0]["args"]
    fit_on = a.get("fit_on", "train")
    refit = fit_on in ("train+val", "all")
    if any(m["args"].get("fit_on", "train") != fit_on for m in ms):
        raise SystemExit("ship_ensemble: members mix fits on different splits (--fit-on)")
    if (fit_on == "all") != bool(args.twin_runs):
        raise SystemExit("ship_ensemble: --twin-runs goes with members refit on all data, and they need it")
    if args.twin_runs:
        check_twins(ms, [json.load(open(os.path.join(r, "metrics.json"))) for r in args.twin_runs])
    if not test:
        raise SystemExit(f"ship_ensemble: no eval_test_*.json in {args.evals}")
    if refit and val:
        raise SystemExit("ship_ensemble: members were refit on train+val, so val evals measure training data; "
                         "leave them out of --evals")
    if not refit and not val:
        raise SystemExit(f"ship_ensemble: no eval_val_*.json in {args.evals}")
    baselines_fit_on = {j["baselines"].get("fit_on", "train") for j in test.values()}
    if baselines_fit_on != {"train+val" if refit else "train"}:  # an all-data refit's twin: train+val
        raise SystemExit("ship_ensemble: the baselines must learn from the rows the members learned from "
                         "(tunecast eval --baselines-fit-on train+val for a refit, train otherwise)")
    stop = {m["name"]: m["args"].get("stop_epoch") or m["args"]["epochs"] for m in ms}
    with open(os.path.join(args.ensemble, "model.tcir.json")) as fh:
        search_width = int(json.load(fh)["metadata"].get("search_width", "1"))
    if {j.get("search_width", 1) for j in list(test.values()) + list(val.values())} != {search_width}:
        raise SystemExit(f"ship_ensemble: evaluate with --search-width {search_width}, the model's metadata search_width")
    decoding = ""
    if search_width > 1:
        decoding = (f"- Decoding: metadata `search_width` {search_width}: one candidate is the best of a "
                    f"{search_width}-wide constrained beam,\n  not the greedy one (`tunecast predict`, `eval` and "
                    "`table` do so by default; `--greedy` or `--search-width 1` for\n  MIOpen's greedy procedure; "
                    f"in C++, `predict()` with `beam_width = {search_width}` and capacity 1). p@1 below is measured "
                    "that way;\n  why: weights/README.md.\n")
    # Every check passed: only now does the destination change.
    os.makedirs(args.dest, exist_ok=True)
    for f in ("model.tcir.json", "model.tce"):
        shutil.copy(os.path.join(args.ensemble, f), os.path.join(args.dest, f))
    size = os.path.getsize(os.path.join(args.dest, "model.tcir.json")) / 1e6
    nparams = sum(m["parameters"] for m in ms)
    cmds = "\n".join(f"  `{m['command']}`\n" for m in ms)
    def describe(m):
        a_ = m["args"]
        size = f"units {a_['units']}, hidden {a_['hidden']}" if a_["model"] == "mlp" else f"units {a_['units']}"
        return (f"{m['name']} ({a_['model']}, {size}, emb {a_['emb']}, seed {a_['seed']}, "
                f"label smoothing {a_['label_smoothing']})")
    members = ", ".join(describe(m) for m in ms)
    kinds = collections.Counter(m["args"]["model"] for m in ms)  # in member order
    if set(kinds) - set(KIND_TEXT):
        raise SystemExit(f"ship_ensemble: no card text for member kinds {sorted(set(kinds) - set(KIND_TEXT))}")
    kinds_short = " + ".join(f"{n} {k}" for k, n in kinds.items())
    architecture = "; ".join(f"{k} ({n}): {KIND_TEXT[k]}" for k, n in kinds.items())
    if len(kinds) > 1 and "mlp" in kinds:
        architecture += (". The mlp members read the LSTM members' diagonal encoder input through the mean of "
                         "its rows (tools/ensemble.py, flat_reads_diag; checked against the original at merge)")
    def same(key):  # one value when every member shares it, else each member's
        values = [m["args"][key] for m in ms]
        return values[0] if len(set(values)) == 1 else "/".join(str(v) for v in values) + " (by member)"

    test_title = "Test split (our 10 %), runtime `tunecast eval --split test`"
    if not refit:
        rows_line = (f"rows train {m0['rows']['train']} / val {m0['rows']['val']} / test {m0['rows']['test']} "
                     "(training on train only)")
        checkpoint_line = ("checkpoint chosen on validation (mean over groups of perfect@1 + perfect@10, "
                           "beam 10)")
        val_section = f"## Validation split (selection), runtime `tunecast eval --split val`\n\n```\n{table(val)}\n```\n"
    else:
        rows_line = (f"rows train+val {m0['rows']['train']} / test {m0['rows']['test']}: the train + val refit, every member "
                     "trained on train + val with the recipe, seed and epoch count chosen on val by its train-only run")
        checkpoint_line = ("no checkpoint selection: each member stops at the epoch its train-only run picked on "
                           "validation (`--stop-epoch`: " + ", ".join(f"{n} {e}" for n, e in stop.items()) + ")")
        val_section = ("Validation: none. The members learned from the val problems, so val numbers would be "
                       "in-sample; the\nselection that chose this recipe and these members is under Selection above and in "
                       "research/README.md.\nBaselines learn from train + val too (`tunecast eval --baselines-fit-on "
                       "train+val`).\n\n")
    if fit_on == "all":
        rows_line = (f"rows {m0['rows']['train']}, all of train + val + test: the shipping refit, every member trained on "
                     "every problem of our split with the recipe, seed and epoch count chosen on val by its train-only run")
        test_title = ("Test split (our 10 %), measured on the train + val twins (" + ", ".join(args.twin_runs) +
                      "), runtime `tunecast eval --split test`")
        val_section += ("The shipped members learned the test problems too, so no split of ours can score them: "
                        "the table above\nis their train + val twins' (same recipes, seeds and stop epochs; the "
                        "last models our split measured),\nthe estimate for the independent holdout. `tunecast "
                        "eval` on this model says which evaluated splits are in-sample.\n\n")
    card = f"""# {m0['solver']} — ensemble of {len(ms)} seq2seq models ({kinds_short}) in one graph

Predicts {m0['solver']}'s tuning vector for gfx900 and gfx906, FP32 and FP16, forward/backward as the
kernel supports; arch, precision and direction are encoder inputs of one model.

- Data: MIOpen perf DBs gfx900_56.db, gfx906_60.db (commit 2d1fd997), solver {m0['solver']},
  training precisions {', '.join(a.get('train_precision') or a['precision'])};
  {rows_line}.
- Split: sha256('{a['split_seed']}:<descriptor>') mod 1000, <800 train, <900 val, else test; the descriptor
  is every config column but id (docs/training.md). Same problem, same split on every arch.
- Architecture: {len(ms)} members compiled into ONE encoder graph and ONE decoder graph by
  `tools/ensemble.py --combine {args.combine}`. Member kinds: {architecture}. The decoder applies Softmax to each member's
  logits and Adds them; `seq2seq.logits_are_probabilities` is true, so the runtime scores
  log(sum p_i) = log(mean p_i) + log {len(ms)} (a constant per step: same ranking as the mean).
  Members: {members}. {nparams} parameters, model.tcir.json {size:.2f} MB.
  Encoder input: model.tce (shared by every member). Vocabulary: position-segmented, token 0 = end,
  EndTokenAfterLast.
- Training (each member): teacher forcing, cross-entropy over the whole vocabulary with label smoothing
  spread over the current position's tokens, AdamW lr {same('lr')} wd {same('wd')}, batch {same('batch')}, cosine
  schedule, dropout {same('dropout')}, {same('epochs')} epochs; {checkpoint_line}. About
  {max(m['train_seconds'] for m in ms):.0f} s each on one H200 ({' and '.join(args.sweeps)}, all runs of a plan at once).
{decoding}- Selection: {args.why}.
- Exact commands (repo root; data from `tools/dataset.py --precision FP32 FP16 BF16 --out .device/data`;
  the sweeps ran them as `python3 research/sweep.py SWEEP --data .device/data --out OUT --jobs N` with SWEEP
  = {' and '.join(args.sweeps)}):

{cmds}
  then `/usr/bin/python3 tools/ensemble.py {' '.join(args.runs)} --combine {args.combine}{f" --search-width {search_width}" if search_width > 1 else ""} --out ENS` and
  `tunecast compile ENS/model.tcir.json --rules weights/rules/{m0['solver']}.tcr --encoding ENS/model.tce -o {m0['solver']}.tcm`.

## {test_title} (constrained beam search, {f"the first k of width max(k, {search_width})" if search_width > 1 else "width k"})

```
{table(test)}
```

{val_section}perfect@k: % of problems whose tuned vector is among the k beams; invalid: share of returned candidates
that violate weights/rules/{m0['solver']}.tcr (the runtime masks them during the search).
"""
    with open(os.path.join(args.dest, "card.md"), "w") as f:
        f.write(card)
    strip = lambda ev: {g: {"n": j["n"], "perfect": j["perfect"], "invalid_rate": j["invalid_rate"],  # noqa: E731
                            "baselines": {b: j["baselines"][b]["perfect"] for b in ("most_frequent", "nearest")}}
                        for g, j in ev.items()}
    metrics = {"name": os.path.basename(os.path.normpath(args.dest)), "solver": m0["solver"],
               "model": f"ensemble({args.combine}) of {len(ms)}: {kinds_short}", "members": [m["name"] for m in ms],
               "commands": [m["command"] for m in ms], "parameters": nparams, "rows": m0["rows"],
               "fit_on": fit_on, "stop_epochs": stop,
               **({"test_measured_on": args.twin_runs} if args.twin_runs else {}),
               "source": "tunecast eval (runtime, constrained)", "test": strip(test), "val": strip(val),
               "members_python_val": {m["name"]: m["val"] for m in ms}}
    with open(os.path.join(args.dest, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    print(f"[ship_ensemble] {args.ensemble} -> {args.dest} ({size:.2f} MB)")


if __name__ == "__main__":
    main()

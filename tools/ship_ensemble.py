#!/usr/bin/python3
"""Ship an ensemble made by tools/ensemble.py into weights/<solver>/ with card.md and metrics.json.

Numbers come from the runtime (`tunecast eval --json`, constrained beam search), one JSON per
(arch, precision) and split, named eval_<split>_<arch db>_<precision>.json in --evals. Members refit
on train + val (tools/train.py --fit-on train+val) need only test JSONs, evaluated with
`--baselines-fit-on train+val` so that the baselines learn from the same rows.

  /usr/bin/python3 tools/ship_ensemble.py --ensemble DIR --runs RUN1 RUN2 RUN3 --evals DIR \\
      --dest weights/ConvAsm1x1U --combine prob --why "..." [--sweeps tools/sweeps/fourth.txt ...]
"""
import argparse
import glob
import json
import os
import shutil

KS = ["1", "10", "30", "50", "100"]


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ensemble", required=True)
    ap.add_argument("--runs", nargs="+", required=True)
    ap.add_argument("--evals", required=True)
    ap.add_argument("--dest", required=True)
    ap.add_argument("--combine", default="prob")
    ap.add_argument("--why", default="")
    ap.add_argument("--sweeps", nargs="+", default=["tools/sweeps/fourth.txt"],
                    help="the sweep plan(s) that trained the members (named in the card)")
    args = ap.parse_args()
    ms = [json.load(open(os.path.join(r, "metrics.json"))) for r in args.runs]
    os.makedirs(args.dest, exist_ok=True)
    for f in ("model.tcir.json", "model.tce"):
        shutil.copy(os.path.join(args.ensemble, f), os.path.join(args.dest, f))
    val, test = load_evals(args.evals, "val"), load_evals(args.evals, "test")
    m0, a = ms[0], ms[0]["args"]
    refit = a.get("fit_on", "train") == "train+val"
    if any(m["args"].get("fit_on", "train") != a.get("fit_on", "train") for m in ms):
        raise SystemExit("ship_ensemble: members mix train-only and train+val fits")
    if not test:
        raise SystemExit(f"ship_ensemble: no eval_test_*.json in {args.evals}")
    if refit and val:
        raise SystemExit("ship_ensemble: members were refit on train+val, so val evals measure training data; "
                         "leave them out of --evals")
    if not refit and not val:
        raise SystemExit(f"ship_ensemble: no eval_val_*.json in {args.evals}")
    baselines_fit_on = {j["baselines"].get("fit_on", "train") for j in test.values()}
    if baselines_fit_on != {"train+val" if refit else "train"}:
        raise SystemExit("ship_ensemble: the baselines must learn from the rows the members learned from "
                         "(tunecast eval --baselines-fit-on train+val for a refit, train otherwise)")
    stop = {m["name"]: m["args"].get("stop_epoch") or m["args"]["epochs"] for m in ms}
    size = os.path.getsize(os.path.join(args.dest, "model.tcir.json")) / 1e6
    nparams = sum(m["parameters"] for m in ms)
    cmds = "\n".join(f"  `{m['command']}`\n" for m in ms)
    members = ", ".join(f"{m['name']} (units {m['args']['units']}, hidden {m['args']['hidden']}, seed "
                        f"{m['args']['seed']}, label smoothing {m['args']['label_smoothing']})" for m in ms)
    sizes = sorted({(m['args']['units'], m['args']['hidden']) for m in ms})
    sizes = "units/hidden " + " and ".join(f"{u}/{h}" for u, h in sizes)
    def same(key):  # one value when every member shares it, else each member's
        values = [m["args"][key] for m in ms]
        return values[0] if len(set(values)) == 1 else "/".join(str(v) for v in values) + " (by member)"

    if refit:
        rows_line = (f"rows train+val {m0['rows']['train']} / test {m0['rows']['test']}: the final refit, every member "
                     "trained on train + val with the recipe, seed and epoch count chosen on val by its train-only run")
        checkpoint_line = ("no checkpoint selection: each member stops at the epoch its train-only run picked on "
                           "validation (`--stop-epoch`: " + ", ".join(f"{n} {e}" for n, e in stop.items()) + ")")
        val_section = ("Validation: none. The members learned from the val problems, so val numbers would be "
                       "in-sample; the\nselection that chose this recipe and these members is under Selection above and in "
                       "weights/README.md.\nBaselines learn from train + val too (`tunecast eval --baselines-fit-on "
                       "train+val`).\n\n")
    else:
        rows_line = (f"rows train {m0['rows']['train']} / val {m0['rows']['val']} / test {m0['rows']['test']} "
                     "(training on train only)")
        checkpoint_line = ("checkpoint chosen on validation (mean over groups of perfect@1 + perfect@10, "
                           "beam 10)")
        val_section = f"## Validation split (selection), runtime `tunecast eval --split val`\n\n```\n{table(val)}\n```\n"
    card = f"""# {m0['solver']} — ensemble of {len(ms)} mlp decoders in one graph

Predicts {m0['solver']}'s tuning vector for gfx900 and gfx906, FP32 and FP16, forward/backward as the
kernel supports; arch, precision and direction are encoder inputs of one model.

- Data: MIOpen perf DBs gfx900_56.db, gfx906_60.db (commit 2d1fd997), solver {m0['solver']},
  training precisions {', '.join(a.get('train_precision') or a['precision'])};
  {rows_line}.
- Split: sha256('{a['split_seed']}:<descriptor>') mod 1000, <800 train, <900 val, else test; the descriptor
  is every config column but id (docs/training.md). Same problem, same split on every arch.
- Architecture: {len(ms)} members compiled into ONE encoder graph and ONE decoder graph by
  `tools/ensemble.py --combine {args.combine}`. Each member is our mlp model ({sizes},
  emb {a['emb']}): the problem as one feature row -> Dense(ReLU) x 2 -> Dense heads for the
  initial states of a 2-layer LSTM decoder and a problem vector read at every step (one-row Attention =
  exact broadcast) -> Dense(ReLU) -> Dense(vocabulary). The decoder applies Softmax to each member's
  logits and Adds them; `seq2seq.logits_are_probabilities` is true, so the runtime scores
  log(sum p_i) = log(mean p_i) + log {len(ms)} (a constant per step: same ranking as the mean).
  Members: {members}. {nparams} parameters, model.tcir.json {size:.2f} MB.
  Encoder input: model.tce (identical in every member). Vocabulary: position-segmented, token 0 = end,
  EndTokenAfterLast.
- Training (each member): teacher forcing, cross-entropy over the whole vocabulary with label smoothing
  spread over the current position's tokens, AdamW lr {same('lr')} wd {same('wd')}, batch {same('batch')}, cosine
  schedule, dropout {same('dropout')}, {same('epochs')} epochs; {checkpoint_line}. About
  {max(m['train_seconds'] for m in ms):.0f} s each on one H200 ({' and '.join(args.sweeps)}, all runs of a plan at once).
- Selection: {args.why}.
- Exact commands (repo root; data from `tools/dataset.py --precision FP32 FP16 BF16 --out .device/data`;
  the sweeps ran them as `python3 tools/sweep.py SWEEP --data .device/data --out OUT --jobs N` with SWEEP
  = {' and '.join(args.sweeps)}):

{cmds}
  then `/usr/bin/python3 tools/ensemble.py {' '.join(args.runs)} --combine {args.combine} --out ENS` and
  `tunecast compile ENS/model.tcir.json --rules weights/rules/{m0['solver']}.tcr --encoding ENS/model.tce -o {m0['solver']}.tcm`.

## Test split (our 10 %), runtime `tunecast eval --split test` (constrained beam search, width k)

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
               "model": f"ensemble({args.combine}) of {len(ms)} mlp", "members": [m["name"] for m in ms],
               "commands": [m["command"] for m in ms], "parameters": nparams, "rows": m0["rows"],
               "fit_on": a.get("fit_on", "train"), "stop_epochs": stop,
               "source": "tunecast eval (runtime, constrained)", "test": strip(test), "val": strip(val),
               "members_python_val": {m["name"]: m["val"] for m in ms}}
    with open(os.path.join(args.dest, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    print(f"[ship_ensemble] {args.ensemble} -> {args.dest} ({size:.2f} MB)")


if __name__ == "__main__":
    main()

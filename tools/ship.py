#!/usr/bin/python3
"""Copy a trained run (model.tcir.json, model.tce, metrics.json from tools/train.py) into
weights/<name>/ and write its card.md (data, split, architecture, exact command, metrics vs baselines).

  /usr/bin/python3 tools/ship.py --run .device/sweep3/asm1x1u_mlp_e45_ls0 --dest weights/ConvAsm1x1U \\
      --why "best validation mean perfect@k of 6 runs"
"""
import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tunecast_train import metrics  # noqa: E402

ARCH_TEXT = {
    "paper": "the paper's LSTM encoder-decoder: encoder Dense(no bias) -> LSTM -> LSTM over one time step per "
             "feature (T x 2T input: value on the diagonal, an indicator column per step); decoder Embedding -> "
             "LSTM -> LSTM -> Dense(vocabulary)",
    "attention": "bi-LSTM encoder over one time step per feature (memory = [forward; backward] outputs), decoder "
                 "Embedding -> LSTM -> Luong dot Attention -> Dense(tanh) on [h; context] -> Dense(vocabulary)",
    "hybrid": "Conv1D encoder (Dense -> 2 x Conv1D(k=3, same, ReLU) -> LSTM for the states), decoder Embedding -> "
              "LSTM -> Dense(vocabulary)",
    "mlp": "ours: the problem as one feature row -> Dense(ReLU) x 2 -> Dense heads for the initial states of a "
           "2-layer LSTM decoder and a problem vector; the decoder reads the problem vector at every step (a "
           "one-row attention memory, i.e. an exact broadcast) concatenated to the token embedding and again "
           "before its Dense(ReLU) -> Dense(vocabulary) head",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True)
    ap.add_argument("--dest", required=True)
    ap.add_argument("--why", default="")
    ap.add_argument("--seed", type=int, default=0, help="unused; for uniformity")
    args = ap.parse_args()
    for f in ("model.tcir.json", "model.tce", "metrics.json"):
        if not os.path.isfile(os.path.join(args.run, f)):
            ap.error(f"{args.run}/{f} not found: not an exported train.py run (study models such as "
                     "--model transformer write no export and cannot ship)")
    m = json.load(open(os.path.join(args.run, "metrics.json")))
    os.makedirs(args.dest, exist_ok=True)
    for f in ("model.tcir.json", "model.tce", "metrics.json"):
        shutil.copy(os.path.join(args.run, f), os.path.join(args.dest, f))
    a = m["args"]
    rows = []
    for g in sorted(m["test"]):
        rows.append((f"{g} {m['model']}", m["test"][g]))
        for b, bm in m["baselines"][g].items():
            rows.append((f"{g} {b}", bm))
    size = os.path.getsize(os.path.join(args.dest, "model.tcir.json")) / 1e6
    card = f"""# {m['solver']} — {m['name']}

Predicts {m['solver']}'s tuning vector for gfx900 and gfx906, FP32 and FP16, forward/backward as the
kernel supports; arch, precision and direction are encoder inputs of one model.

- Data: MIOpen perf DBs gfx900_56.db, gfx906_60.db (commit 2d1fd997), solver {m['solver']},
  training precisions {', '.join(a.get('train_precision') or a['precision'])};
  rows train {m['rows']['train']} / val {m['rows']['val']} / test {m['rows']['test']}.
- Split: sha256('{a['split_seed']}:<descriptor>') mod 1000, <800 train, <900 val, else test; the descriptor
  is every config column but id (docs/training.md). Same problem, same split on every arch.
- Architecture: {ARCH_TEXT[m['model']]}. {m['parameters']} parameters, model.tcir.json {size:.1f} MB.
  Encoder input: model.tce. Vocabulary: position-segmented, token 0 = end, EndTokenAfterLast.
- Training: teacher forcing, cross-entropy over the whole vocabulary with label smoothing
  {a['label_smoothing']} spread over the current position's tokens, AdamW lr {a['lr']} wd {a['wd']},
  batch {a['batch']}, cosine schedule, dropout {a['dropout']}; checkpoint chosen on validation
  (mean over groups of perfect@1 + perfect@10, beam 10). {m['train_seconds']:.0f} s on one H200
  (shared with other runs).
- Selection: {args.why or 'n/a'}.
- Exact command (run from the repo root; data from `tools/dataset.py --precision FP32 FP16 BF16 --out .device/data`):

  `{m['command']}`

- Export check: numpy interpreter vs PyTorch, max relative difference {m['export_max_abs_diff']:.1e}.

## Test split (our 10 %), beam width k, masked to each position's tokens, no validity rules

```
{metrics.table(rows)}
```
perfect@k: % of problems whose tuned vector is among the k beams; pacc: top-1 per-parameter accuracy.
The runtime's validity constraints can only raise these numbers.
"""
    with open(os.path.join(args.dest, "card.md"), "w") as f:
        f.write(card)
    print(f"[ship] {args.run} -> {args.dest} ({size:.1f} MB)")


if __name__ == "__main__":
    main()

"""The training loop, evaluation and export shared by tools/train.py (MIOpen's perf DBs and the
MIOpen-keyed timing DBs) and tunecast-train (any kernel definition and its timing DBs).

A data source (train.py's MiopenSource, tunecast-train's KernelSource) gives the rows and what
depends on the problem's fields: the field matrix, the encoding, the evaluation groups, the
nearest-neighbour baseline's features and the model's metadata. Everything else is here, once.
"""
import json
import math
import os
import random
import shlex
import sys
import time

import numpy as np
import torch

from . import data, export, metrics, models, search
from . import baselines as bl


def add_model_arguments(ap, after_dropout=None):
    """The model and recipe flags both commands take. `after_dropout(ap)` adds a command's own flags
    at that point (train.py's --kernel-features: the flags keep the order they always had)."""
    ap.add_argument("--model", default="mlp", choices=list(models.MODELS))
    ap.add_argument("--emb", type=int, default=32,
                    help="token (and enc_in) embedding width (transformer: unused, tokens embed at --units)")
    ap.add_argument("--units", type=int, default=128,
                    help="LSTM units (attention: per direction; transformer: decoder width)")
    ap.add_argument("--hidden", type=int, default=256, help="mlp and transformer: encoder width")
    ap.add_argument("--filters", type=int, default=64, help="hybrid: Conv1D filters")
    ap.add_argument("--layers", type=int, default=2, help="transformer: decoder blocks")
    ap.add_argument("--heads", type=int, default=4, help="transformer: attention heads (must divide --units)")
    ap.add_argument("--dropout", type=float, default=0.1)
    if after_dropout:
        after_dropout(ap)
    ap.add_argument("--label-smoothing", type=float, default=0.1,
                    help="mass spread over the current position's tokens")
    ap.add_argument("--neighbour-labels", type=int, default=0, metavar="M",
                    help="a study: also learn, for each training problem, the tuned vector of one of its M "
                         "nearest training problems of the same group (arch and precision; the nearest-neighbour "
                         "baseline's features), drawn anew every epoch, weighted by --neighbour-weight")
    ap.add_argument("--neighbour-weight", type=float, default=0.5,
                    help="loss weight of the neighbour's vector next to the problem's own (weight 1)")
    ap.add_argument("--param-order", metavar="P,P,...",
                    help="decode the parameters in this order (a permutation of the solver's positions, "
                         "e.g. 0,4,1,2,3,5 emits position 4 second); the export records it as the "
                         "vocabulary's decode_order: the runtime decodes in that order, checks each rule "
                         "once its parameters are known, and returns vectors in the solver's order")
    ap.add_argument("--near-optimal", type=float, default=0.0, metavar="F",
                    help="timing DBs: also learn, for each training problem, every config "
                         "within F (e.g. 0.03) of its fastest time, not only the fastest")
    ap.add_argument("--epochs", type=int, default=60, help="length of the learning-rate schedule")
    ap.add_argument("--fit-on", default="train", choices=list(data.FIT_SPLITS),
                    help="train: keep the checkpoint that scores best on val; train+val: the refit of a "
                         "recipe already chosen on val (no checkpoint selection: the weights at --stop-epoch); "
                         "all: the same on train + val + test, for shipping once every measurement is done "
                         "(nothing of our split is left to score it: the train+val twin's test numbers stand for it)")
    ap.add_argument("--stop-epoch", type=int, default=0,
                    help="with --fit-on train+val or all: stop after this epoch (default --epochs), e.g. the "
                         "epoch the train-only run picked on val")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--wd", type=float, default=1e-4)
    ap.add_argument("--eval-every", type=int, default=5, help="epochs between validation beam searches")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="stop training after this many seconds (0: none), then evaluate and export")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads")
    ap.add_argument("--smoke", action="store_true", help="a few seconds on a few hundred rows (CI)")
    ap.add_argument("--name", help="model name (default <solver>_<model>)")


def check_counts(ap, args):
    """The checks of the model flags that need no data (before the command's own)."""
    for option in ("emb", "units", "hidden", "filters", "layers", "heads", "epochs", "batch", "eval_every", "threads"):
        if getattr(args, option) < 1:
            ap.error(f"--{option.replace('_', '-')} must be at least 1, got {getattr(args, option)}")
    if not args.lr > 0 or not args.wd >= 0 or not args.time_limit >= 0:
        ap.error("--lr must be positive, --wd and --time-limit 0 or more")
    if not (0 <= args.dropout < 1 and 0 <= args.label_smoothing < 1):
        ap.error("--dropout and --label-smoothing must be in [0, 1)")


def check_model_arguments(ap, args):
    """The rest of the model flags' checks (after the command's data checks); --smoke shrinks the model."""
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        ap.error(f"--device {args.device}: this PyTorch sees no CUDA device (use --device cpu)")
    if args.stop_epoch and args.fit_on == "train":
        ap.error("--stop-epoch goes with --fit-on train+val or all (on train, val picks the checkpoint)")
    if args.tunecast and not os.access(args.tunecast, os.X_OK):
        ap.error(f"--tunecast {args.tunecast}: not an executable (build it: cmake --build build)")
    if args.smoke:  # a few seconds: a tiny model for a few epochs
        args.epochs, args.eval_every, args.units, args.hidden, args.emb = 3, 3, 16, 32, 8
    if args.model == "transformer" and args.units % args.heads:
        ap.error(f"--heads {args.heads} must divide the decoder width {args.units} (each head gets width / heads)")
    if args.tunecast and not models.MODELS[args.model].exportable:
        ap.error(f"--tunecast: --model {args.model} is a study model with no tunecast export to check")
    if not 0 <= args.stop_epoch <= args.epochs:
        ap.error(f"--stop-epoch must be within 1..--epochs ({args.epochs}), got {args.stop_epoch}")
    if args.neighbour_labels < 0 or not args.neighbour_weight >= 0:
        ap.error("--neighbour-labels and --neighbour-weight must be 0 or more")


def parse_param_order(ap, args, positions, solver):
    """--param-order as a list of positions (a permutation of 0..positions-1), in place."""
    if args.param_order is None:
        return
    try:
        args.param_order = [int(t) for t in args.param_order.split(",")]
    except ValueError:
        ap.error(f"--param-order: expected comma-separated positions, got {args.param_order!r}")
    if sorted(args.param_order) != list(range(positions)):
        ap.error(f"--param-order: expected a permutation of 0..{positions - 1} ({solver} has "
                 f"{positions} parameters), got {','.join(map(str, args.param_order))}")


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def smooth_targets(vocab, eps):
    """[P + 1, V] smoothing mass per step: eps spread over the step's own tokens (none at the end)."""
    S = torch.zeros(vocab.positions + 1, vocab.size)
    for p, toks in enumerate(vocab.position_tokens):
        S[p, toks] = eps / len(toks)
    return S


def sequence_loss(model, X, tok_in, tok_out, S, onehot_w):
    """Mean over problems of the summed per-step cross-entropy, label smoothing S[step] included."""
    logp = torch.log_softmax(model.teacher(X, tok_in), -1)                      # [B, P+1, V]
    nll = -logp.gather(2, tok_out.unsqueeze(2)).squeeze(2) * onehot_w            # [B, P+1]
    smooth = -(logp * S.unsqueeze(0)).sum(2)
    return (nll + smooth).sum(1).mean()


def log1mexp(x):
    """log(1 - exp(x)) for x < 0, stable at both ends."""
    x = x.clamp(max=-1e-7)
    return torch.where(x > -math.log(2), torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def failure_loss(model, X, tok_in, tokens, step, mode):
    """Unlikelihood of failed configs: mean over them of -log(1 - p), where p is the probability the
    model gives the failed config's token at the step where it departs from every measured `ok`
    config of its problem (mode "departure"), or its whole token sequence (mode "sequence").
    X [B, ...], tok_in [B, P] (start token then the config's first P-1 tokens), tokens [B, P],
    step [B] (the departure step)."""
    logp = torch.log_softmax(model.teacher(X, tok_in), -1)                      # [B, P, V]
    lp = logp.gather(2, tokens.clamp(min=0).unsqueeze(2)).squeeze(2)           # [B, P]
    if mode == "departure":
        lp = lp.gather(1, step.unsqueeze(1)).squeeze(1)
    else:
        lp = lp.sum(1)
    return -log1mexp(lp).mean()


def failure_examples(problems, vocab):
    """The failed configs of `problems` (rows with `ok` and `failed`, vectors in decode order) that
    the model could emit, as (problem index, tokens, departure step): the departure step is the
    first at which the config's prefix is no prefix of any config the problem measured `ok`."""
    out = []
    P = vocab.positions
    for i, r in enumerate(problems):
        prefixes = {tuple(c[:j]) for c in r["ok"] for j in range(P + 1)}
        for f in r["failed"]:
            d = next(j for j in range(P) if tuple(f[:j + 1]) not in prefixes)
            toks = vocab.encode(f)
            if min(toks[:d + 1]) < 0:   # a value no target has up to there: the model cannot emit it
                continue
            out.append((i, toks, d))
    return out


def nearest_rows(train, m, src):
    """[N, m] long tensor: for each training row, its m nearest other training rows of its group
    (the nearest-neighbour baseline's standardized features, ties by row order); a row with fewer
    than m others cycles through those it has, a row alone in its group stands for itself."""
    out = np.zeros((len(train), m), dtype=np.int64)
    by_group = {}
    for i, r in enumerate(train):
        by_group.setdefault(src.neighbour_group(r), []).append(i)
    for members in by_group.values():
        a = src.knn_features(src.fields_matrix([train[i] for i in members]))
        sd = a.std(0)
        sd[sd == 0] = 1.0
        a = (a - a.mean(0)) / sd
        for j, i in enumerate(members):
            d = ((a - a[j]) ** 2).sum(1)
            d[j] = np.inf
            order = np.lexsort((np.arange(len(d)), d))[:max(1, min(m, len(members) - 1))]
            near = [members[o] for o in order] if len(members) > 1 else [i]
            out[i] = (near * m)[:m]
    return torch.tensor(out)


def evaluate(model, enc, vocab, rows, device, ks, src):
    """{group: metrics} with beam width k for every k."""
    inputs = lambda sel: torch.tensor(enc.matrix(src.fields_matrix(sel)), device=device)  # noqa: E731
    return search.evaluate(model, inputs, vocab, rows, ks, groups=src.groups)


def run(args, src):
    """Train, evaluate, export: `src` gives the data (module docstring). Exits non-zero when the
    export check fails."""
    t0 = time.time()
    torch.set_num_threads(args.threads)
    seed_all(args.seed)
    dev = torch.device(args.device)
    name = args.name or f"{src.solver}_{args.model}"
    ks = metrics.KS
    param_names = data.in_decode_order(src.param_names, args.param_order)
    train, val, test = src.partition(args)
    for r in train + val + test + src.failure_only:
        for key in ("params", "ok", "failed"):
            if r.get(key) and key == "params":
                r[key] = data.in_decode_order(r[key], args.param_order)
            elif r.get(key):
                r[key] = [data.in_decode_order(v, args.param_order) for v in r[key]]
    failure_only = src.failure_only
    if args.smoke:
        rng = random.Random(args.seed)
        train, val, test = rng.sample(train, min(400, len(train))), val[:100], test[:100]
        failure_only = failure_only[:100]
        ks = (1, 10)
    # Splits the model learns from score nothing: no checkpoint selection on val, no test figures.
    val = [] if "val" in data.FIT_SPLITS[args.fit_on] else val
    test = [] if "test" in data.FIT_SPLITS[args.fit_on] else test
    if not train:
        sys.exit(src.no_rows(args))
    last_epoch = min(args.stop_epoch or args.epochs, args.epochs)
    print(f"[train] {name}: {src.describe_rows(args, train, val, test)}, device {dev}", flush=True)

    vocab = src.vocabulary(param_names, train, args.param_order)
    layout = models.MODELS[args.model].layout
    enc = src.encoding(train, layout, args)
    Xtr = enc.matrix(src.fields_matrix(train))
    f = enc.values(Xtr)
    mean, std = f.mean(0), f.std(0)
    std[std < 1e-6] = 1.0
    print(f"[train] vocabulary {vocab.size} tokens, encoder input {enc.shape[0]}x{enc.shape[1]} "
          f"({enc.count} features)", flush=True)

    tok = torch.tensor([vocab.encode(r["params"]) for r in train])
    tgt = torch.cat([tok, torch.zeros(len(tok), 1, dtype=torch.long)], 1)        # ... then end
    tin = torch.cat([torch.zeros(len(tok), 1, dtype=torch.long), tok], 1)        # start, prefix
    neighbours = nearest_rows(train, args.neighbour_labels, src) if args.neighbour_labels else None
    Xtr_t = torch.tensor(Xtr)
    S = smooth_targets(vocab, args.label_smoothing).to(dev)
    onehot_w = 1.0 - S.sum(1)                                                   # [P + 1]

    # Failed configs (tunecast-train): never targets; learned as bad with weight --failure-weight.
    failure_weight = getattr(args, "failure_weight", 0.0)
    fail = None
    if failure_weight > 0:
        problems = [r for r in train if not r.get("near_optimal")] + \
                   [r for r in failure_only if r["split"] in data.FIT_SPLITS[args.fit_on]]
        examples = failure_examples(problems, vocab)
        if examples:
            owner = torch.tensor([e[0] for e in examples])
            ftok = torch.tensor([e[1] for e in examples])
            fail = {"X": torch.tensor(enc.matrix(src.fields_matrix(problems)))[owner],
                    "tok": ftok, "step": torch.tensor([e[2] for e in examples]),
                    "tin": torch.cat([torch.zeros(len(ftok), 1, dtype=torch.long), ftok[:, :-1].clamp(min=0)], 1),
                    "by_problem": [torch.nonzero(owner == i).flatten() for i in range(len(problems))],
                    "gen": torch.Generator().manual_seed(args.seed + 1)}
            fail["by_problem"] = [ix for ix in fail["by_problem"] if len(ix)]
        print(f"[train] failures: {len(examples)} failed configs of {len(problems)} problems learned as bad "
              f"(--failure-weight {failure_weight}, --failure-loss {args.failure_loss}, at most "
              f"{args.failure_sample or 'all'} a problem per epoch)", flush=True)

    model = models.build(args.model, enc.shape, vocab.size, mean, std, emb=args.emb, units=args.units,
                         hidden=args.hidden, filters=args.filters, dropout=args.dropout, layers=args.layers,
                         heads=args.heads).to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    print(f"[train] model {args.model}: {nparams} parameters", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.wd)
    steps_per_epoch = math.ceil(len(train) / args.batch)
    total = steps_per_epoch * args.epochs
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (2 * steps_per_epoch)) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    gen = torch.Generator().manual_seed(args.seed)

    best, best_state, history = -1.0, None, []
    for epoch in range(1, last_epoch + 1):
        model.train()
        perm = torch.randperm(len(train), generator=gen)
        if fail is not None:   # this epoch's failed configs: at most --failure-sample of each problem, shuffled
            g, cap = fail["gen"], args.failure_sample
            picked = torch.cat([ix[torch.randperm(len(ix), generator=g)[:cap or len(ix)]] for ix in fail["by_problem"]])
            fperm = picked[torch.randperm(len(picked), generator=g)]
            fchunk = math.ceil(len(fperm) / steps_per_epoch)
        tot_loss = 0.0
        for step, s in enumerate(range(0, len(train), args.batch)):
            idx = perm[s:s + args.batch]
            X, ti, tt = Xtr_t[idx].to(dev), tin[idx].to(dev), tgt[idx].to(dev)
            loss = sequence_loss(model, X, ti, tt, S, onehot_w)
            if neighbours is not None:  # one of each problem's nearest problems' vectors, drawn anew
                pick = neighbours[idx, torch.randint(neighbours.shape[1], (len(idx),), generator=gen)]
                loss = loss + args.neighbour_weight * sequence_loss(model, X, tin[pick].to(dev), tgt[pick].to(dev),
                                                                    S, onehot_w)
            if fail is not None:
                fi = fperm[step * fchunk:(step + 1) * fchunk]
                if len(fi):
                    loss = loss + failure_weight * failure_loss(
                        model, fail["X"][fi].to(dev), fail["tin"][fi].to(dev), fail["tok"][fi].to(dev),
                        fail["step"][fi].to(dev), args.failure_loss)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            tot_loss += loss.item() * len(idx)
        over = bool(args.time_limit) and time.time() - t0 > args.time_limit
        msg = f"[train] epoch {epoch}/{last_epoch} loss {tot_loss / len(train):.4f}"
        if not val:
            best_state = None                              # keep the weights of the last epoch
        elif epoch % args.eval_every == 0 or epoch == last_epoch or over:
            vm = evaluate(model, enc, vocab, val, dev, (1, 10), src) if val else {}
            sc = float(np.mean([m["perfect@1"] + m["perfect@10"] for m in vm.values()])) if vm else 0.0
            history.append({"epoch": epoch, "val_p1_plus_p10": sc})
            msg += f" val(p@1+p@10, mean over groups) {sc:.1f}"
            if sc > best:
                best = sc
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                msg += " *"
        print(msg + f" [{time.time() - t0:.0f}s]", flush=True)
        if over:
            print(f"[train] time limit reached after epoch {epoch}", flush=True)
            break
    if best_state is not None:
        model.load_state_dict(best_state)

    print("[train] evaluating (beam width k for each k) ...", flush=True)
    test_m = evaluate(model, enc, vocab, test, dev, ks, src)
    val_m = evaluate(model, enc, vocab, val, dev, ks, src)
    base = {}
    train_groups = src.groups(train)
    for g, te in src.groups(test).items():
        tr = train_groups.get(g, [])
        near = bl.nearest(src.fields_matrix(tr), [r["params"] for r in tr], src.fields_matrix(te), max(ks),
                          src.knn_features)
        base[g] = {"frequent": metrics.score([bl.frequent([r["params"] for r in tr])] * len(te),
                                             [r["params"] for r in te], ks),
                   "nearest": metrics.score(near, [r["params"] for r in te], ks)}
    table = []
    for g in sorted(test_m):
        table.append((f"{src.solver} {' '.join(g)} {args.model}", test_m[g]))
        for bname, m in base[g].items():
            table.append((f"{src.solver} {' '.join(g)} {bname}", m))
    text = metrics.table(table, ks)
    failed_lines = [f"{src.solver} {' '.join(g)} {args.model}: top-1 (greedy) is a measured failure on "
                    f"{m['failed@1']:.1f} % of {m['n']} test problems" for g, m in sorted(test_m.items()) if "failed@1" in m]
    if failed_lines:
        text += "\n" + "\n".join(failed_lines)
    print(text, flush=True)

    command = src.command + " " + shlex.join(sys.argv[1:])
    # The shipped metadata names no build path (the compiler would strip them anyway): an absolute
    # path's last component, no interpreter path.
    shipped_command = src.shipped_command + " " + shlex.join(
        os.path.basename(a.rstrip("/")) if os.path.isabs(a) else a for a in sys.argv[1:])
    key = lambda g: "/".join(g)  # noqa: E731
    result = {"name": name, "solver": src.solver, "model": args.model, "args": vars(args), "command": command,
              "parameters": nparams, "rows": {"train": len(train), "val": len(val), "test": len(test)},
              "test": {key(g): m for g, m in test_m.items()}, "val": {key(g): m for g, m in val_m.items()},
              "baselines": {key(g): m for g, m in base.items()}, "history": history,
              "train_seconds": round(time.time() - t0, 1)}
    result.update(src.result_extra())
    test_metrics = {key(g): {k: round(v, 2) for k, v in m.items()} for g, m in test_m.items()}
    metadata = src.metadata(args, shipped_command, test_metrics)
    os.makedirs(args.out, exist_ok=True)
    model.cpu()
    export_ok, wrote = True, "model.pt, metrics.json"
    if model.exportable:
        j, jpath = export.write(args.out, model, enc, vocab, name, metadata)
        check_rows = (test or train)[:4]
        Xchk = torch.tensor(enc.matrix(src.fields_matrix(check_rows)))
        tchk = torch.tensor([[max(t, 0) for t in vocab.encode(r["params"])] for r in check_rows])
        vectors = export.reference_vectors(model, j, Xchk, tchk)
        diff = export.check(j, vectors)
        result["export_max_abs_diff"] = diff
        export_ok = diff < 1e-5
        print(f"[train] export check: max |numpy - torch| / max(1, |torch|) = {diff:.2e} ({'ok' if export_ok else 'FAILED'})")
        export.write_vectors(args.out, vectors)
        runtime = src.runtime_check(args)
        if runtime:
            runtime_ok, check_text = runtime
            export_ok = export_ok and runtime_ok
            print(f"[train] tunecast runtime vs PyTorch: {'ok' if runtime_ok else 'FAILED'}\n{check_text}", flush=True)
        wrote = f"{jpath} ({os.path.getsize(jpath) / 1e6:.2f} MB), model.tce, model.vectors.json, " + wrote
    else:
        print(f"[train] {args.model} is a study model: the runtime cannot run it, so no tunecast export", flush=True)
    # mean/std as lists: a checkpoint written under NumPy 2 (the GPU machine) then loads under NumPy 1
    torch.save({"state_dict": model.state_dict(), "args": vars(args), "encoding": enc.to_json(),
                "vocabulary": vocab.to_json(), "mean": mean.tolist(), "std": std.tolist()},
               os.path.join(args.out, "model.pt"))
    with open(os.path.join(args.out, "metrics.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    with open(os.path.join(args.out, "metrics.txt"), "w") as fh:
        fh.write(text + "\n")
    print(f"[train] wrote {wrote}, metrics.txt in {time.time() - t0:.0f}s", flush=True)
    if not export_ok:
        sys.exit(1)

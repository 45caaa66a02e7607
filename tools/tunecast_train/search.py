"""Beam search masked to each position's tokens (the runtime adds validity constraints on top).

Scoring, as documented in docs/training.md: a hypothesis' score is the sum over steps of
log_softmax(logits over the whole vocabulary)[token]; at step p only position p's tokens are
candidates; after the last position the end token's log-probability is added (EndTokenAfterLast)
and the beam is re-sorted. Ties keep torch.topk's order.
"""
import numpy as np
import torch

from . import data, metrics


@torch.no_grad()
def beam_search(model, X, vocab, width, batch=1024, end_score=True):
    """X [N, rows, cols] float tensor on the model's device -> list (per problem) of token lists,
    best first, at most `width` each."""
    model.eval()
    dev = X.device
    pos_tokens = [torch.tensor(t, device=dev) for t in vocab.position_tokens]
    results = []
    for s in range(0, len(X), batch):
        Xc = X[s:s + batch]
        n = len(Xc)
        states, mem = model.encode(Xc)
        prob = torch.arange(n, device=dev)          # problem index of each live row
        scores = torch.zeros(n, 1, device=dev)
        seqs = torch.zeros(n, 1, 0, dtype=torch.long, device=dev)
        prev = torch.zeros(n, dtype=torch.long, device=dev)
        kc = 1
        for p, toks in enumerate(pos_tokens):
            logits, states = model.step(prev, states, None if mem is None else mem[prob])
            lp = torch.log_softmax(logits.float(), -1)[:, toks].view(n, kc, -1)
            tp = lp.shape[2]
            tot = (scores.unsqueeze(2) + lp).view(n, kc * tp)
            kk = min(width, kc * tp)
            top = tot.topk(kk, dim=1)
            parent, choice = top.indices // tp, top.indices % tp
            scores = top.values
            rows = (torch.arange(n, device=dev).unsqueeze(1) * kc + parent).view(-1)
            states = [st[rows] for st in states]
            prob = prob[rows]
            new_tok = toks[choice]
            seqs = torch.cat([seqs.gather(1, parent.unsqueeze(2).expand(-1, -1, seqs.shape[2])),
                              new_tok.unsqueeze(2)], 2)
            prev = new_tok.view(-1)
            kc = kk
        if end_score:
            logits, _ = model.step(prev, states, None if mem is None else mem[prob])
            scores = scores + torch.log_softmax(logits.float(), -1)[:, 0].view(n, kc)
            order = torch.sort(scores, dim=1, descending=True, stable=True).indices
            seqs = seqs.gather(1, order.unsqueeze(2).expand(-1, -1, seqs.shape[2]))
        results += seqs.cpu().tolist()
    return results


def evaluate(model, inputs, vocab, rows, ks, max_problems=0, groups=None):
    """{(arch, precision): metrics.score} of `model` on rows, beam width k for every k (no validity
    rules). inputs(rows) -> the encoder input tensor of those rows on the model's device;
    max_problems > 0 scores only the first that many problems of each group; `groups` (default
    data.groups) splits the rows into the groups scored. Rows that list their measured failed
    configs (`failed`, tunecast-train) add `failed@1`: the % of problems whose top-1 (width 1) is one."""
    out = {}
    for g, sel in (groups or data.groups)(rows).items():
        sel = sel[:max_problems] if max_problems else sel
        X = inputs(sel)
        cache = {}

        def cands(k, X=X, cache=cache):
            if k not in cache:
                cache[k] = [[vocab.decode(t) for t in beams] for beams in beam_search(model, X, vocab, k)]
            return cache[k]
        out[g] = metrics.score(cands, [r["params"] for r in sel], ks)
        if sel and "failed" in sel[0]:
            top = cands(1)
            hits = [bool(cs) and list(cs[0]) in r["failed"] for cs, r in zip(top, sel)]
            out[g]["failed@1"] = 100.0 * float(np.mean(hits))
    return out

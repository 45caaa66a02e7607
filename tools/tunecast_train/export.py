"""Writes a trained model as tunecast-ir JSON (`model.tcir.json`) plus its encoder-input
declaration (`model.tce`), and checks the export with the numpy reference interpreter."""
import json
import os

import numpy as np
import torch

from . import ir


def model_json(model, enc, vocab, name, metadata):
    g, d, s2s = model.export(enc.shape)
    return {"format": "tunecast-ir", "version": 1, "name": name,
            "metadata": {k: (v if isinstance(v, str) else json.dumps(v, sort_keys=True)) for k, v in metadata.items()},
            "graphs": [g.to_json(), d.to_json()], "seq2seq": s2s, "vocabulary": vocab.to_json()}


def write(outdir, model, enc, vocab, name, metadata):
    os.makedirs(outdir, exist_ok=True)
    j = model_json(model, enc, vocab, name, metadata)
    jpath = os.path.join(outdir, "model.tcir.json")
    with open(jpath, "w") as f:
        json.dump(j, f, separators=(",", ":"))
    with open(os.path.join(outdir, "model.tce"), "w") as f:
        f.write(enc.text(f"tunecast encoder input of {name}"))
    return j, jpath


def _rel(a, b):
    return float((np.abs(a - b) / np.maximum(1.0, np.abs(b))).max())


@torch.no_grad()
def check(model, j, X, tokens, steps=None):
    """Max relative difference |a - b| / max(1, |b|) between PyTorch and the numpy interpreter of the exported JSON, over the
    encoder outputs and `steps` decoder steps fed with `tokens` [N, steps] (teacher forcing),
    one problem at a time (the runtime's batch 1 encoder, one row per beam decoder)."""
    model.eval()
    s2s = j["seq2seq"]
    enc_g, dec_g = j["graphs"][s2s["encoder"]], j["graphs"][s2s["decoder"]]
    worst = 0.0
    for i in range(len(X)):
        x = X[i:i + 1]
        states, mem = model.encode(x)
        enc_out = ir.run_graph(enc_g, [x[0].cpu().numpy()])
        torch_enc = [s.cpu().numpy() for s in states] + ([] if mem is None else [mem[0].cpu().numpy()])
        for a, b in zip(enc_out, torch_enc):
            worst = max(worst, _rel(a, b))
        dec_in = [None] * len(dec_g["inputs"])
        for link in s2s["states"]:
            dec_in[link["decoder_input"]] = enc_out[link["encoder_output"]]
        for link in s2s["contexts"]:
            dec_in[link["decoder_input"]] = enc_out[link["encoder_output"]]
        prev = 0
        for t in range(steps or tokens.shape[1]):
            dec_in[s2s["token_input"]] = np.array([[float(prev)]])
            out = ir.run_graph(dec_g, dec_in)
            logits, states = model.step(torch.tensor([prev], device=x.device), states, mem)
            worst = max(worst, _rel(out[s2s["logits_output"]], logits.cpu().numpy()))
            for link in s2s["states"]:
                dec_in[link["decoder_input"]] = out[link["decoder_output"]]
            prev = int(tokens[i, t])
    return worst

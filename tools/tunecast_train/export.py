"""Writes a trained model as tunecast-ir JSON (`model.tcir.json`) plus its encoder-input
declaration (`model.tce`), checks the export with the numpy reference interpreter, and records
PyTorch's own outputs (`model.vectors.json`) for the runtime to reproduce."""
import json
import os
import subprocess
import tempfile

import numpy as np
import torch

from . import ir


def model_json(model, enc, vocab, name, metadata):
    g, d, s2s = model.export(enc.shape)
    # encoding_digest: `tunecast compile` refuses a .tce other than the one written beside this model.
    metadata = dict(metadata, encoding_digest=enc.digest())
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
def check(j, vectors):
    """Max relative difference |a - b| / max(1, |b|) between PyTorch and the numpy interpreter of the
    exported JSON `j`, over the graph runs of `vectors` (reference_vectors: PyTorch's outputs)."""
    worst = 0.0
    for case in vectors["cases"]:
        graph = j["graphs"][case["graph"]]
        shapes = [graph["values"][v] for v in graph["inputs"]]
        inputs = [np.asarray(v, np.float64).reshape(s["rows"] or 1, s["cols"]) for v, s in zip(case["inputs"], shapes)]
        for got, want in zip(ir.run_graph(graph, inputs), case["outputs"]):
            if want is not None:
                worst = max(worst, _rel(np.asarray(got).ravel(), np.asarray(want)))
    return worst


VECTORS_TOLERANCE = 1e-4    # the runtime vs PyTorch, relative to max(1, |PyTorch|)


def reference_vectors(model, j, X, tokens, steps=None):
    """PyTorch's outputs for a few graph runs, as the tunecast-vectors JSON that `check` (the numpy
    interpreter) and `tunecast compile --check-vectors` (the runtime) reproduce: one case per graph
    call (the encoder on each row of X, then `steps` decoder steps fed with `tokens` [N, steps],
    teacher forcing), one problem at a time (the runtime's batch 1 encoder, one row per beam
    decoder); every input and output a flat float list in the graph's order; outputs PyTorch does
    not name are null."""
    model.eval()
    s2s = j["seq2seq"]
    dec_g = j["graphs"][s2s["decoder"]]
    flat = lambda t: [float(v) for v in np.asarray(t, np.float32).ravel()]  # noqa: E731
    cases = []
    with torch.no_grad():
        for i in range(len(X)):
            x = X[i:i + 1]
            states, mem = model.encode(x)
            enc_out = [s.cpu().numpy() for s in states] + ([] if mem is None else [mem[0].cpu().numpy()])
            cases.append({"graph": s2s["encoder"], "inputs": [flat(x[0].cpu().numpy())],
                          "outputs": [flat(o) for o in enc_out]})
            dec_in = [None] * len(dec_g["inputs"])
            for link in s2s["states"] + s2s["contexts"]:
                dec_in[link["decoder_input"]] = enc_out[link["encoder_output"]]
            prev = 0
            for t in range(steps or tokens.shape[1]):
                dec_in[s2s["token_input"]] = np.array([[float(prev)]])
                logits, states = model.step(torch.tensor([prev], device=x.device), states, mem)
                outs = [None] * len(dec_g["outputs"])
                outs[s2s["logits_output"]] = flat(logits.cpu().numpy())
                for link, state in zip(s2s["states"], states):       # model.step's states in link order
                    outs[link["decoder_output"]] = flat(state.cpu().numpy())
                cases.append({"graph": s2s["decoder"], "inputs": [flat(v) for v in dec_in], "outputs": outs})
                for link, state in zip(s2s["states"], states):
                    dec_in[link["decoder_input"]] = state.cpu().numpy()
                prev = int(tokens[i, t])
    return {"format": "tunecast-vectors", "version": 1, "source": "PyTorch " + torch.__version__,
            "tolerance": VECTORS_TOLERANCE, "cases": cases}


def write_vectors(outdir, vectors):
    path = os.path.join(outdir, "model.vectors.json")
    with open(path, "w") as f:
        json.dump(vectors, f, separators=(",", ":"))
    return path


def check_with_runtime(tunecast, outdir, rules=None):
    """Compiles outdir's export with the tunecast CLI and has it reproduce model.vectors.json
    (`tunecast compile --check-vectors`), with `rules` (a kernel definition, whose problem fields
    the encoding reads) when given. Returns (ok, the CLI's output)."""
    with tempfile.TemporaryDirectory(prefix="tunecast_check_") as tmp:   # the blob itself is not kept
        cmd = [tunecast, "compile", os.path.join(outdir, "model.tcir.json"), "--encoding",
               os.path.join(outdir, "model.tce"), "--check-vectors", os.path.join(outdir, "model.vectors.json"),
               "-o", os.path.join(tmp, "model.tcm")] + (["--rules", rules] if rules else [])
        run = subprocess.run(cmd, capture_output=True, text=True)
    return run.returncode == 0, (run.stdout + run.stderr).strip()

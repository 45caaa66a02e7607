#!/usr/bin/python3
"""Compile several trained seq2seq models into ONE tunecast-ir graph pair (an ensemble).

Every member must share the vocabulary and the encoder input (same model.tce lines apart from the
comments). Members of both layouts may mix: mlp members (flat input, 1 x T) are rewritten to read the
LSTM models' diag input (T x 2T) with runtime layers (flat_reads_diag), each checked against the
original by the numpy reference interpreter. The merged encoder runs every member's encoder on the
one `features` input and outputs all their states and contexts; the merged decoder feeds the one
`prev_token` input to every member's decoder and combines their outputs with runtime layers only:

  --combine prob  (default): Softmax per member -> Add; seq2seq.logits_are_probabilities = true, so
                  the runtime scores log(sum_i p_i) = log(mean_i p_i) + log(M). log(M) is the same for
                  every token at every step and every hypothesis decodes the same number of steps,
                  so beam ranking equals the arithmetic mean of the members' distributions.
  --combine logit: each member's output Dense is scaled by 1/M and the logits are Added; the runtime's
                  log-softmax then gives the normalized geometric mean of the members' distributions.

The runtime limits a graph to 48 inputs/outputs (runtime/include/tunecast/model.h kMaxGraphIo), 192
values and 128 layers: up to eight mlp members (4 states + 1 context each) fit.

  /usr/bin/python3 tools/ensemble.py RUN1 RUN2 RUN3 --out DIR [--combine prob|logit] [--name NAME]
                                     [--search-width W]
writes DIR/model.tcir.json and DIR/model.tce (RUNi: folders holding model.tcir.json + model.tce).
"""
import argparse
import base64
import copy
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tunecast_train import features, ir  # noqa: E402


def check_model_folder(folder, what="run folder", hint="a tools/train.py run folder?",
                       files=("model.tcir.json", "model.tce")):
    """Exits with one line (named after the running tool) unless `folder` holds every one of
    `files`."""
    tool = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    if not os.path.isdir(folder):
        sys.exit(f"{tool}: {what} {folder} not found")
    for f in files:
        if not os.path.isfile(os.path.join(folder, f)):
            sys.exit(f"{tool}: {os.path.join(folder, f)} not found ({hint})")


def load(run):
    path = os.path.join(run, "model.tcir.json")
    with open(path) as fh:
        try:
            j = json.load(fh)
        except json.JSONDecodeError as e:
            sys.exit(f"ensemble: {path} is not JSON ({e})")
    with open(os.path.join(run, "model.tce")) as fh:
        tce = fh.read().splitlines()
    return j, tce


def scale_blob(blob, s):
    a = np.frombuffer(base64.b64decode(blob), dtype="<f4") * np.float32(s)
    return base64.b64encode(a.astype("<f4").tobytes()).decode("ascii")


def scale_matrix(m, s):
    m = dict(m)
    m["data"] = scale_blob(m["data"], s)
    return m


def flat_reads_diag(member):
    """Rewrite a member whose encoder reads the `flat` input [1, T] (mlp) to read the `diag` input
    [T, 2T] of the LSTM models instead, with runtime layers only, so both kinds share one encoder
    input. Row t of the diag input holds feature t at column t and 1 at column T + t, so the mean of
    its rows is [features / T, 1 / T ... 1 / T]. An Attention whose query is all zeros weighs every
    row 1 / T and yields that mean (up to float rounding); the zero query is a Dense with zero weights
    over the last output of a one-unit Lstm (the runtime has no constant layer, and only an Lstm
    turns the T rows into one). The first Dense then takes the kernel T * K on the feature columns and
    0 on the indicator columns."""
    m = copy.deepcopy(member)
    e = m["graphs"][m["seq2seq"]["encoder"]]
    fin = e["inputs"][0]
    T = e["values"][fin]["cols"]
    if e["batched"] or e["values"][fin]["rows"] != 1:
        sys.exit("ensemble: flat_reads_diag needs a sequence graph (not batched) with a [1, T] input")
    if fin in e["outputs"]:
        sys.exit("ensemble: a flat member's encoder input is also its output")
    readers = [L for L in e["layers"] if fin in L["inputs"]]
    if any(L["type"] != "Dense" for L in readers):
        sys.exit("ensemble: a flat member's input must feed only Dense layers")
    e["values"][fin] = dict(e["values"][fin], rows=T, cols=2 * T)
    base = len(e["values"])
    e["values"] += [{"name": "zq_last", "rows": 1, "cols": 1}, {"name": "zq_h", "rows": 1, "cols": 1},
                    {"name": "zq_c", "rows": 1, "cols": 1}, {"name": "zero_query", "rows": 1, "cols": 2 * T},
                    {"name": "row_mean", "rows": 1, "cols": 2 * T}]
    last, query, mean = base, base + 3, base + 4
    zeros = lambda r, c: ir.matrix(np.zeros((r, c), np.float32))  # noqa: E731
    head = [{"type": "Lstm", "name": "zq_lstm", "inputs": [fin], "outputs": [last, last + 1, last + 2], "units": 1,
             "kernel": zeros(2 * T, 4), "recurrent": zeros(1, 4), "bias": ir.b64(np.zeros(4))},
            {"type": "Dense", "name": "zero_query", "inputs": [last], "outputs": [query], "units": 2 * T,
             "kernel": zeros(1, 2 * T), "bias": ir.b64(np.zeros(2 * T))},
            {"type": "Attention", "name": "row_mean", "inputs": [query, fin], "outputs": [mean]}]
    for L in readers:
        K = ir.unmatrix(L["kernel"])
        L["kernel"] = ir.matrix(np.concatenate([K * np.float32(T), np.zeros_like(K)]))
        L["inputs"] = [mean if x == fin else x for x in L["inputs"]]
    e["layers"] = head + e["layers"]
    return m


def flat_reads_diag_error(member, converted, rng):
    """Largest relative difference between the original encoder's outputs on random features and
    the rewritten one's on the same features in the diag layout (numpy reference interpreter)."""
    e0 = member["graphs"][member["seq2seq"]["encoder"]]
    e1 = converted["graphs"][converted["seq2seq"]["encoder"]]
    T = e0["values"][e0["inputs"][0]]["cols"]
    worst = 0.0
    for _ in range(3):
        f = rng.normal(0, 3, T)
        diag = np.concatenate([np.diag(f), np.eye(T)], 1)
        for a, b in zip(ir.run_graph(e0, [f[None, :]]), ir.run_graph(e1, [diag])):
            worst = max(worst, float(np.max(np.abs(a - b) / np.maximum(1, np.abs(a)))))
    return worst


def merge(members, combine, name):
    M = len(members)
    s0 = members[0]["seq2seq"]
    if any(m["vocabulary"] != members[0]["vocabulary"] for m in members):
        sys.exit("ensemble: members' vocabularies differ")
    enc_i, dec_i = s0["encoder"], s0["decoder"]
    for m in members:
        s = m["seq2seq"]
        if (s["encoder"], s["decoder"], s["token_input"], s["logits_output"], s["start_token"]) != \
                (enc_i, dec_i, s0["token_input"], s0["logits_output"], s0["start_token"]):
            sys.exit("ensemble: members' seq2seq layouts differ")
        if s.get("logits_are_probabilities"):
            sys.exit("ensemble: members must output logits")
        if (m["graphs"][enc_i]["batched"], m["graphs"][dec_i]["batched"]) != \
                (members[0]["graphs"][enc_i]["batched"], members[0]["graphs"][dec_i]["batched"]):
            sys.exit("ensemble: members' graphs differ in kind (sequence or step graph)")
    ge = members[0]["graphs"][enc_i]
    gd = members[0]["graphs"][dec_i]
    if len(ge["inputs"]) != 1:
        sys.exit("ensemble: encoders must have one input")
    feat = ge["values"][ge["inputs"][0]]
    tok_pos, log_pos = s0["token_input"], s0["logits_output"]
    token = gd["values"][gd["inputs"][tok_pos]]

    enc = {"name": "encoder", "batched": ge["batched"], "values": [dict(feat)], "inputs": [0], "outputs": [],
           "layers": []}
    dec = {"name": "decoder", "batched": gd["batched"], "values": [dict(token)], "inputs": [0], "outputs": [None],
           "layers": []}
    states, contexts, member_out = [], [], []
    for i, m in enumerate(members):
        e, d, s = m["graphs"][enc_i], m["graphs"][dec_i], m["seq2seq"]
        if e["values"][e["inputs"][0]] != feat:
            sys.exit("ensemble: members' encoder inputs differ")
        # encoder: member values get new ids; its input is the shared `features`
        emap = {e["inputs"][0]: 0}
        for v, val in enumerate(e["values"]):
            if v not in emap:
                emap[v] = len(enc["values"])
                enc["values"].append(dict(val, name=f"m{i}_{val['name']}"))
        for layer in e["layers"]:
            enc["layers"].append(dict(layer, name=f"m{i}_{layer['name']}", inputs=[emap[x] for x in layer["inputs"]],
                                      outputs=[emap[x] for x in layer["outputs"]]))
        eout = {}
        for p, v in enumerate(e["outputs"]):
            eout[p] = len(enc["outputs"])
            enc["outputs"].append(emap[v])
        # decoder: the token input is shared; the output Dense may be scaled
        dmap = {d["inputs"][tok_pos]: 0}
        for v, val in enumerate(d["values"]):
            if v not in dmap:
                dmap[v] = len(dec["values"])
                dec["values"].append(dict(val, name=f"m{i}_{val['name']}"))
        logits_v = d["outputs"][log_pos]
        for layer in d["layers"]:
            layer = dict(layer, name=f"m{i}_{layer['name']}", inputs=[dmap[x] for x in layer["inputs"]],
                         outputs=[dmap[x] for x in layer["outputs"]])
            if combine == "logit" and dmap[logits_v] in layer["outputs"]:
                if layer["type"] != "Dense":
                    sys.exit("ensemble: --combine logit needs a Dense output layer")
                layer["kernel"] = scale_matrix(layer["kernel"], 1.0 / M)
                if "bias" in layer:
                    layer["bias"] = scale_blob(layer["bias"], 1.0 / M)
            dec["layers"].append(layer)
        din, dout = {}, {}
        for p, v in enumerate(d["inputs"]):
            if p != tok_pos:
                din[p] = len(dec["inputs"])
                dec["inputs"].append(dmap[v])
        for p, v in enumerate(d["outputs"]):
            if p != log_pos:
                dout[p] = len(dec["outputs"])
                dec["outputs"].append(dmap[v])
        for st in s["states"]:
            states.append({"decoder_input": din[st["decoder_input"]], "encoder_output": eout[st["encoder_output"]],
                           "decoder_output": dout[st["decoder_output"]]})
        for c in s.get("contexts", []):
            contexts.append({"decoder_input": din[c["decoder_input"]], "encoder_output": eout[c["encoder_output"]]})
        lv = dmap[logits_v]
        if combine == "prob":
            pv = len(dec["values"])
            dec["values"].append(dict(dec["values"][lv], name=f"m{i}_probs"))
            dec["layers"].append({"type": "Softmax", "name": f"m{i}_softmax", "inputs": [lv], "outputs": [pv]})
            member_out.append(pv)
        else:
            member_out.append(lv)
    out_v = len(dec["values"])
    dec["values"].append(dict(dec["values"][member_out[0]], name="probs" if combine == "prob" else "logits"))
    dec["layers"].append({"type": "Add", "name": "ensemble_sum", "inputs": member_out, "outputs": [out_v]})
    dec["outputs"][0] = out_v
    graphs = [None, None]
    graphs[enc_i], graphs[dec_i] = enc, dec
    seq = {"encoder": enc_i, "decoder": dec_i, "token_input": 0, "logits_output": 0,
           "start_token": s0["start_token"], "states": states, "contexts": contexts,
           "logits_are_probabilities": combine == "prob"}
    meta = copy.deepcopy(members[0]["metadata"])
    meta["model"] = f"ensemble of {M} ({combine}): " + ", ".join(m["metadata"].get("model", "?") for m in members)
    meta["members"] = ",".join(m["name"] for m in members)
    meta["seed"] = ",".join(m["metadata"].get("seed", "?") for m in members)
    meta["training_command"] = " ; ".join(m["metadata"].get("training_command", "") for m in members)
    meta.pop("test_metrics", None)
    return {"format": members[0]["format"], "version": members[0]["version"], "name": name, "metadata": meta,
            "graphs": graphs, "seq2seq": seq, "vocabulary": members[0]["vocabulary"]}


def encoder_layout(tce):
    """('flat' or 'diag', T, feature texts in order, range lines) of a model.tce; exits on any other
    layout. flat: input 1 x T, `encode 0 t F_t`. diag: input T x 2T, `encode t t F_t` and
    `encode t T+t raw 1` (tools/tunecast_train/features.py)."""
    rows, cols = next((int(w[1]), int(w[3])) for w in (ln.split() for ln in tce) if w and w[0] == "input")
    enc = {(int(w[1]), int(w[2])): " ".join(w[3:]) for w in (ln.split() for ln in tce) if w and w[0] == "encode"}
    ranges = [ln for ln in tce if ln.startswith("range ")]
    if rows == 1 and set(enc) == {(0, t) for t in range(cols)}:
        return "flat", cols, [enc[(0, t)] for t in range(cols)], ranges
    T = rows
    if cols == 2 * T and set(enc) == {(t, t) for t in range(T)} | {(t, T + t) for t in range(T)} \
            and all(enc[(t, T + t)] == "raw 1" for t in range(T)):
        return "diag", T, [enc[(t, t)] for t in range(T)], ranges
    sys.exit(f"ensemble: encoder input {rows} x {cols} is neither the flat nor the diag layout")


def share_input(runs, loaded):
    """(members, whether layouts mixed). Members of both layouts: flat ones are rewritten to read
    the diag input, which must then declare the same features in the same order and the same field
    ranges (train.py selects them from the same rows)."""
    layouts = [encoder_layout(tce) for _, tce in loaded]
    if len({lay[0] for lay in layouts}) == 1:
        return loaded, False
    k = next(i for i, lay in enumerate(layouts) if lay[0] == "diag")
    rng = np.random.default_rng(0)
    out = []
    for r, (j, tce), lay in zip(runs, loaded, layouts):
        if lay[0] == "flat":
            if lay[1:] != layouts[k][1:]:
                sys.exit(f"ensemble: {r} encodes other features or ranges than {runs[k]}")
            conv = flat_reads_diag(j)
            err = flat_reads_diag_error(j, conv, rng)
            if err > 1e-5:
                sys.exit(f"ensemble: {r} rewritten for the diag input is off by {err:.2e}")
            j, tce = conv, loaded[k][1]
            print(f"[ensemble] {r}: flat member rewritten to read the diag input (checked)", flush=True)
        out.append((j, tce))
    return out, True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--combine", choices=["prob", "logit"], default="prob")
    ap.add_argument("--name")
    ap.add_argument("--search-width", type=int, default=0,
                    help="record the recommended beam width for one candidate (metadata search_width: "
                         "tunecast predict/eval/table then take the best of that beam; 0: none, greedy)")
    args = ap.parse_args()
    if not 0 <= args.search_width <= 256:
        ap.error("--search-width must be within 0..256")
    for r in args.runs:
        check_model_folder(r)
    loaded = [load(r) for r in args.runs]
    loaded, mixed = share_input(args.runs, loaded)
    note = "mlp members read this diagonal input" if mixed else "identical encodings"
    body = [ln for ln in loaded[0][1] if not ln.startswith("#")]
    for r, (_, tce) in zip(args.runs, loaded):
        if [ln for ln in tce if not ln.startswith("#")] != body:
            sys.exit(f"ensemble: {r}/model.tce differs from {args.runs[0]}/model.tce")
    name = args.name or "ensemble_" + "_".join(os.path.basename(os.path.normpath(r)) for r in args.runs)
    j = merge([m for m, _ in loaded], args.combine, name)
    if args.search_width:
        j["metadata"]["search_width"] = str(args.search_width)
    j["metadata"]["encoding_digest"] = features.encoding_digest("\n".join(body))  # the merged input's
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "model.tcir.json")
    with open(path, "w") as fh:
        json.dump(j, fh, separators=(",", ":"))
    with open(os.path.join(args.out, "model.tce"), "w") as fh:
        fh.write("\n".join([f"# tunecast encoder input of {name}",
                            f"# members: {', '.join(args.runs)} ({note})"] + body) + "\n")
    print(f"[ensemble] {len(loaded)} members, combine {args.combine}: {path} ({os.path.getsize(path) / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()

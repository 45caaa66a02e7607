"""tunecast-ir JSON (docs/interchange.md): a graph builder, and a numpy interpreter of the same
semantics the C++ runtime implements, used to check every export against PyTorch."""
import base64

import numpy as np


def b64(a):
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode("ascii")


def unb64(s):
    return np.frombuffer(base64.b64decode(s), dtype="<f4")


def matrix(a):
    """Logical [rows = inputs, cols = outputs] matrix, row-major."""
    a = np.asarray(a, dtype=np.float32)
    assert a.ndim == 2
    return {"rows": int(a.shape[0]), "cols": int(a.shape[1]), "data": b64(a)}


def unmatrix(m):
    return unb64(m["data"]).reshape(m["rows"], m["cols"])


class Graph:
    def __init__(self, name, batched):
        self.name, self.batched = name, batched
        self.values, self.inputs, self.outputs, self.layers = [], [], [], []

    def value(self, name, rows, cols):
        self.values.append({"name": name, "rows": int(rows), "cols": int(cols)})
        return len(self.values) - 1

    def input(self, name, rows, cols):
        v = self.value(name, rows, cols)
        self.inputs.append(v)
        return v

    def layer(self, type_, name, inputs, outputs, **kw):
        d = {"type": type_, "name": name, "inputs": list(inputs), "outputs": list(outputs)}
        for k, v in kw.items():
            if v is None:
                continue
            if isinstance(v, np.ndarray):
                v = matrix(v) if k in ("kernel", "recurrent") else b64(v)
            d[k] = v
        self.layers.append(d)

    def cols(self, v):
        return self.values[v]["cols"]

    def to_json(self):
        return {"name": self.name, "batched": self.batched, "values": self.values,
                "inputs": self.inputs, "outputs": self.outputs, "layers": self.layers}


# ---------------------------------------------------------------------------------------------
# Reference interpreter (float64 numpy), independent of PyTorch.
_ACT = {
    "Linear": lambda x: x, "Relu": lambda x: np.maximum(x, 0), "Tanh": np.tanh,
    "Sigmoid": lambda x: 1 / (1 + np.exp(-x)), "HardSigmoid": lambda x: np.clip(0.2 * x + 0.5, 0, 1),
    "Softmax": lambda x: _softmax(x),
}


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _lstm(layer, x, h, c, sequence):
    """x [T, in] (sequence graph: T time steps, batch 1) or [B, in] (step graph: one step per row)."""
    K = unmatrix(layer["kernel"]).astype(np.float64)
    R = unmatrix(layer["recurrent"]).astype(np.float64)
    b = unb64(layer["bias"]).astype(np.float64) if "bias" in layer else 0.0
    u = layer["units"]
    ra = _ACT[layer.get("recurrent_activation", "Sigmoid")]
    ca = _ACT[layer.get("cell_activation", "Tanh")]

    def cell(xt, h, c):
        z = xt @ K + h @ R + b
        i, f, g, o = ra(z[..., :u]), ra(z[..., u:2 * u]), ca(z[..., 2 * u:3 * u]), ra(z[..., 3 * u:])
        c = f * c + i * g
        return o * ca(c), c

    if not sequence:
        h, c = cell(x, h, c)
        return h, h, c
    T = x.shape[0]
    seq = np.zeros((T, u))
    order = range(T - 1, -1, -1) if layer.get("reverse", False) else range(T)
    for t in order:
        h, c = cell(x[t:t + 1], h, c)
        seq[t] = h[0]
    return (seq if layer.get("return_sequences", False) else h), h, c


def run_graph(graph, inputs):
    vals = {}
    for vid, a in zip(graph["inputs"], inputs):
        vals[vid] = np.asarray(a, dtype=np.float64)
    for L in graph["layers"]:
        ins = [vals[i] for i in L["inputs"]]
        t = L["type"]
        if t == "Dense":
            y = ins[0] @ unmatrix(L["kernel"]).astype(np.float64)
            if "bias" in L:
                y = y + unb64(L["bias"])
            outs = [_ACT[L.get("activation", "Linear")](y)]
        elif t == "Embedding":
            outs = [unmatrix(L["kernel"]).astype(np.float64)[ins[0][:, 0].astype(np.int64)]]
        elif t == "Lstm":
            x = ins[0]
            u = L["units"]
            rows = 1 if not graph["batched"] else x.shape[0]
            h = ins[1] if len(ins) > 1 else np.zeros((rows, u))
            c = ins[2] if len(ins) > 2 else np.zeros((rows, u))
            outs = list(_lstm(L, x, h, c, sequence=not graph["batched"]))
        elif t == "Conv1D":
            x = ins[0]
            k = L.get("kernel_size", 1)
            W = unmatrix(L["kernel"]).astype(np.float64)
            if L.get("padding_same", False):
                x = np.concatenate([np.zeros(((k - 1) // 2, x.shape[1])), x, np.zeros((k // 2, x.shape[1]))])
            T = x.shape[0] - k + 1
            y = np.stack([x[t:t + k].reshape(-1) @ W for t in range(T)])
            if "bias" in L:
                y = y + unb64(L["bias"])
            outs = [_ACT[L.get("activation", "Linear")](y)]
        elif t == "Attention":
            q, mem = ins
            a = _softmax(q @ mem.T)
            outs = [a @ mem]
        elif t == "Concat":
            outs = [np.concatenate(ins, 1)]
        elif t == "Add":
            outs = [sum(ins)]
        elif t in ("Relu", "Tanh", "Sigmoid", "Softmax"):
            outs = [_ACT[t](ins[0])]
        else:
            raise ValueError(f"unknown layer type {t}")
        for vid, o in zip(L["outputs"], outs):
            vals[vid] = o
    return [vals[v] for v in graph["outputs"]]

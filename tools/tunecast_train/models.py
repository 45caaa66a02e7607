"""Seq2seq models built only from runtime layer types, each with its tunecast-ir export.

Every model takes the encoder input exactly as the runtime builds it from the `.tce` declarations
(unstandardized); standardization is an elementwise affine map inside the model that the exporter
folds into the first Dense layer. Interface:
  encode(X [B, rows, cols]) -> (states: list of [B, u] tensors, memory [B, T, d] or None)
  step(prev_token [B] long, states, memory) -> (logits [B, V], new states)
The decoder step is the same function in training (teacher forcing), beam search and export tests.
"""
import numpy as np
import torch
from torch import nn

from .ir import Graph


def _np(t):
    return t.detach().cpu().double().numpy()


def _lstm_weights(lstm):
    """PyTorch nn.LSTM (1 layer) -> (kernel [in, 4u], recurrent [u, 4u], bias [4u])."""
    return (_np(lstm.weight_ih_l0).T, _np(lstm.weight_hh_l0).T, _np(lstm.bias_ih_l0 + lstm.bias_hh_l0))


def _run_lstm(lstm, x, h=None, c=None, reverse=False):
    """x [B, T, in] -> (seq [B, T, u], h [B, u], c [B, u]); reverse runs time backwards."""
    if reverse:
        x = x.flip(1)
    state = None if h is None else (h.unsqueeze(0).contiguous(), c.unsqueeze(0).contiguous())
    seq, (hn, cn) = lstm(x, state)
    if reverse:
        seq = seq.flip(1)
    return seq, hn[0], cn[0]


def attention(q, mem):
    """Luong dot: q [B, u], mem [B, T, u] -> context [B, u]."""
    a = torch.softmax(torch.bmm(mem, q.unsqueeze(2)).squeeze(2), dim=1)
    return torch.bmm(a.unsqueeze(1), mem).squeeze(1)


class Seq2Seq(nn.Module):
    layout = "diag"
    exportable = True  # every layer runs in the runtime (blob and generated code)

    def __init__(self, enc_shape, vocab_size, feat_mean, feat_std, dropout):
        super().__init__()
        rows, cols = enc_shape
        T = len(feat_mean)
        A = np.ones((rows, cols), np.float32)
        B = np.zeros((rows, cols), np.float32)
        for t in range(T):
            r, c = (0, t) if self.layout == "flat" else (t, t)
            A[r, c] = 1.0 / feat_std[t]
            B[r, c] = -feat_mean[t] / feat_std[t]
        self.register_buffer("norm_a", torch.tensor(A))
        self.register_buffer("norm_b", torch.tensor(B))
        self.T, self.V = T, vocab_size
        self.drop = nn.Dropout(dropout)

    def normalize(self, X):
        return X * self.norm_a + self.norm_b

    def fold_first_dense(self, lin):
        """Kernel [in, out] and bias of the first Dense layer with the input normalization folded in."""
        W = _np(lin.weight).T
        b = _np(lin.bias) if lin.bias is not None else np.zeros(W.shape[1])
        A, B = _np(self.norm_a), _np(self.norm_b)
        if self.layout == "flat":
            return W * A[0][:, None], b + B[0] @ W
        T = self.T
        K = W.copy()
        for t in range(T):
            K[t] = W[t] * A[t, t]
            K[T + t] = W[T + t] + B[t, t] * W[t]  # the indicator column (value 1) carries row t's shift
        return K, b

    def teacher(self, X, tok_in):
        """Teacher forcing: tok_in [B, L] (start token then the target prefix) -> logits [B, L, V]."""
        states, mem = self.encode(X)
        out = []
        for i in range(tok_in.shape[1]):
            logits, states = self.step(tok_in[:, i], states, mem)
            out.append(logits)
        return torch.stack(out, 1)

    def export(self, enc_shape):
        """(encoder graph, decoder graph, seq2seq dict)."""
        raise NotImplementedError


def _dec_inputs(g, names_units):
    tok = g.input("prev_token", 0, 1)
    return tok, [g.input(n, 0, u) for n, u in names_units]


class PaperModel(Seq2Seq):
    """The paper's encoder-decoder: Dense(no bias) -> LSTM -> LSTM over the feature steps; decoder
    Embedding -> LSTM -> LSTM (initial states from the encoder) -> Dense(vocab)."""

    def __init__(self, enc_shape, V, mean, std, emb=64, units=128, dropout=0.1, **_):
        super().__init__(enc_shape, V, mean, std, dropout)
        self.enc_in = nn.Linear(enc_shape[1], emb, bias=False)
        self.enc1, self.enc2 = nn.LSTM(emb, units, batch_first=True), nn.LSTM(units, units, batch_first=True)
        self.emb = nn.Embedding(V, emb)
        self.dec1, self.dec2 = nn.LSTM(emb, units, batch_first=True), nn.LSTM(units, units, batch_first=True)
        self.out = nn.Linear(units, V)
        self.units, self.emb_dim = units, emb

    def encode(self, X):
        x = self.enc_in(self.normalize(X))
        s1, h1, c1 = _run_lstm(self.enc1, x)
        _, h2, c2 = _run_lstm(self.enc2, self.drop(s1))
        return [h1, c1, h2, c2], None

    def step(self, tok, states, mem):
        h1, c1, h2, c2 = states
        x = self.drop(self.emb(tok)).unsqueeze(1)
        o1, h1, c1 = _run_lstm(self.dec1, x, h1, c1)
        o2, h2, c2 = _run_lstm(self.dec2, self.drop(o1), h2, c2)
        return self.out(self.drop(o2[:, 0])), [h1, c1, h2, c2]

    def export(self, enc_shape):
        u, e = self.units, self.emb_dim
        g = Graph("encoder", False)
        T = enc_shape[0]
        f = g.input("features", *enc_shape)
        x, s1, h1, c1, s2, h2, c2 = (g.value(n, r, c) for n, r, c in [
            ("enc_in", T, e), ("enc1_seq", T, u), ("enc1_h", 1, u), ("enc1_c", 1, u),
            ("enc2_last", 1, u), ("enc2_h", 1, u), ("enc2_c", 1, u)])
        K, b = self.fold_first_dense(self.enc_in)
        g.layer("Dense", "enc_in", [f], [x], units=e, kernel=K, bias=b)
        for name, lstm, i, o, seq in [("enc1", self.enc1, x, [s1, h1, c1], True), ("enc2", self.enc2, s1, [s2, h2, c2], False)]:
            k, r, bb = _lstm_weights(lstm)
            g.layer("Lstm", name, [i], o, units=u, kernel=k, recurrent=r, bias=bb, return_sequences=seq)
        g.outputs = [h1, c1, h2, c2]
        d = Graph("decoder", True)
        tok, (ih1, ic1, ih2, ic2) = _dec_inputs(d, [("h1", u), ("c1", u), ("h2", u), ("c2", u)])
        em, o1, nh1, nc1, o2, nh2, nc2, lg = (d.value(n, 0, c) for n, c in [
            ("emb", e), ("dec1_out", u), ("dec1_h", u), ("dec1_c", u), ("dec2_out", u), ("dec2_h", u),
            ("dec2_c", u), ("logits", self.V)])
        d.layer("Embedding", "emb", [tok], [em], units=e, kernel=_np(self.emb.weight))
        for name, lstm, ins, outs in [("dec1", self.dec1, [em, ih1, ic1], [o1, nh1, nc1]),
                                      ("dec2", self.dec2, [o1, ih2, ic2], [o2, nh2, nc2])]:
            k, r, bb = _lstm_weights(lstm)
            d.layer("Lstm", name, ins, outs, units=u, kernel=k, recurrent=r, bias=bb)
        d.layer("Dense", "out", [o2], [lg], units=self.V, kernel=_np(self.out.weight).T, bias=_np(self.out.bias))
        d.outputs = [lg, nh1, nc1, nh2, nc2]
        s2s = {"encoder": 0, "decoder": 1, "token_input": 0, "logits_output": 0, "start_token": 0,
               "states": [{"decoder_input": i + 1, "encoder_output": i, "decoder_output": i + 1} for i in range(4)],
               "contexts": [], "logits_are_probabilities": False}
        return g, d, s2s


class AttentionModel(Seq2Seq):
    """Bi-LSTM encoder over the feature steps (memory = [fwd; bwd] outputs), LSTM decoder with
    Luong dot attention: logits = Dense(tanh(Dense([h; context])))."""

    def __init__(self, enc_shape, V, mean, std, emb=64, units=64, dropout=0.1, **_):
        super().__init__(enc_shape, V, mean, std, dropout)
        self.enc_in = nn.Linear(enc_shape[1], emb, bias=False)
        self.fwd, self.bwd = nn.LSTM(emb, units, batch_first=True), nn.LSTM(emb, units, batch_first=True)
        d = 2 * units
        self.emb = nn.Embedding(V, emb)
        self.dec = nn.LSTM(emb, d, batch_first=True)
        self.comb = nn.Linear(2 * d, d)
        self.out = nn.Linear(d, V)
        self.units, self.emb_dim = units, emb

    def encode(self, X):
        x = self.drop(self.enc_in(self.normalize(X)))
        sf, hf, cf = _run_lstm(self.fwd, x)
        sb, hb, cb = _run_lstm(self.bwd, x, reverse=True)
        return [torch.cat([hf, hb], 1), torch.cat([cf, cb], 1)], torch.cat([sf, sb], 2)

    def step(self, tok, states, mem):
        h, c = states
        o, h, c = _run_lstm(self.dec, self.drop(self.emb(tok)).unsqueeze(1), h, c)
        ctx = attention(o[:, 0], mem)
        a = torch.tanh(self.comb(torch.cat([o[:, 0], ctx], 1)))
        return self.out(self.drop(a)), [h, c]

    def export(self, enc_shape):
        u, e, d2 = self.units, self.emb_dim, 2 * self.units
        T = enc_shape[0]
        g = Graph("encoder", False)
        f = g.input("features", *enc_shape)
        x, sf, hf, cf, sb, hb, cb, mem, h0, c0 = (g.value(n, r, c) for n, r, c in [
            ("enc_in", T, e), ("fwd_seq", T, u), ("fwd_h", 1, u), ("fwd_c", 1, u), ("bwd_seq", T, u),
            ("bwd_h", 1, u), ("bwd_c", 1, u), ("memory", T, d2), ("h0", 1, d2), ("c0", 1, d2)])
        K, b = self.fold_first_dense(self.enc_in)
        g.layer("Dense", "enc_in", [f], [x], units=e, kernel=K, bias=b)
        for name, lstm, outs, rev in [("fwd", self.fwd, [sf, hf, cf], False), ("bwd", self.bwd, [sb, hb, cb], True)]:
            k, r, bb = _lstm_weights(lstm)
            g.layer("Lstm", name, [x], outs, units=u, kernel=k, recurrent=r, bias=bb, return_sequences=True,
                    reverse=rev)
        g.layer("Concat", "memory", [sf, sb], [mem])
        g.layer("Concat", "h0", [hf, hb], [h0])
        g.layer("Concat", "c0", [cf, cb], [c0])
        g.outputs = [h0, c0, mem]
        d = Graph("decoder", True)
        tok, (ih, ic) = _dec_inputs(d, [("h", d2), ("c", d2)])
        dm = d.input("memory", T, d2)
        em, o, nh, nc, ctx, cat, a, lg = (d.value(n, 0, c) for n, c in [
            ("emb", e), ("dec_out", d2), ("dec_h", d2), ("dec_c", d2), ("context", d2), ("concat", 2 * d2),
            ("comb", d2), ("logits", self.V)])
        d.layer("Embedding", "emb", [tok], [em], units=e, kernel=_np(self.emb.weight))
        k, r, bb = _lstm_weights(self.dec)
        d.layer("Lstm", "dec", [em, ih, ic], [o, nh, nc], units=d2, kernel=k, recurrent=r, bias=bb)
        d.layer("Attention", "attention", [o, dm], [ctx])
        d.layer("Concat", "concat", [o, ctx], [cat])
        d.layer("Dense", "comb", [cat], [a], units=d2, activation="Tanh", kernel=_np(self.comb.weight).T,
                bias=_np(self.comb.bias))
        d.layer("Dense", "out", [a], [lg], units=self.V, kernel=_np(self.out.weight).T, bias=_np(self.out.bias))
        d.outputs = [lg, nh, nc]
        s2s = {"encoder": 0, "decoder": 1, "token_input": 0, "logits_output": 0, "start_token": 0,
               "states": [{"decoder_input": 1, "encoder_output": 0, "decoder_output": 1},
                          {"decoder_input": 2, "encoder_output": 1, "decoder_output": 2}],
               "contexts": [{"decoder_input": 3, "encoder_output": 2}], "logits_are_probabilities": False}
        return g, d, s2s


class HybridModel(Seq2Seq):
    """Conv1D encoder (two same-padded Conv1D+ReLU over the feature steps, then an LSTM for the
    states) and an LSTM decoder."""

    def __init__(self, enc_shape, V, mean, std, emb=64, units=128, filters=64, dropout=0.1, **_):
        super().__init__(enc_shape, V, mean, std, dropout)
        self.enc_in = nn.Linear(enc_shape[1], emb, bias=False)
        self.conv1 = nn.Conv1d(emb, filters, 3, padding=1)
        self.conv2 = nn.Conv1d(filters, filters, 3, padding=1)
        self.enc = nn.LSTM(filters, units, batch_first=True)
        self.emb = nn.Embedding(V, emb)
        self.dec = nn.LSTM(emb, units, batch_first=True)
        self.out = nn.Linear(units, V)
        self.units, self.emb_dim, self.filters = units, emb, filters

    def encode(self, X):
        x = self.enc_in(self.normalize(X)).transpose(1, 2)
        x = torch.relu(self.conv2(self.drop(torch.relu(self.conv1(x))))).transpose(1, 2)
        _, h, c = _run_lstm(self.enc, x)
        return [h, c], None

    def step(self, tok, states, mem):
        h, c = states
        o, h, c = _run_lstm(self.dec, self.drop(self.emb(tok)).unsqueeze(1), h, c)
        return self.out(self.drop(o[:, 0])), [h, c]

    def export(self, enc_shape):
        u, e, fl = self.units, self.emb_dim, self.filters
        T = enc_shape[0]
        g = Graph("encoder", False)
        f = g.input("features", *enc_shape)
        x, y1, y2, last, h, c = (g.value(n, r, cc) for n, r, cc in [
            ("enc_in", T, e), ("conv1", T, fl), ("conv2", T, fl), ("enc_last", 1, u), ("enc_h", 1, u), ("enc_c", 1, u)])
        K, b = self.fold_first_dense(self.enc_in)
        g.layer("Dense", "enc_in", [f], [x], units=e, kernel=K, bias=b)
        for name, conv, i, o in [("conv1", self.conv1, x, y1), ("conv2", self.conv2, y1, y2)]:
            w = _np(conv.weight)  # [out, in, k]
            g.layer("Conv1D", name, [i], [o], units=fl, activation="Relu", kernel_size=3, padding_same=True,
                    kernel=w.transpose(2, 1, 0).reshape(-1, w.shape[0]), bias=_np(conv.bias))
        k, r, bb = _lstm_weights(self.enc)
        g.layer("Lstm", "enc", [y2], [last, h, c], units=u, kernel=k, recurrent=r, bias=bb)
        g.outputs = [h, c]
        d = Graph("decoder", True)
        tok, (ih, ic) = _dec_inputs(d, [("h", u), ("c", u)])
        em, o, nh, nc, lg = (d.value(n, 0, cc) for n, cc in [
            ("emb", e), ("dec_out", u), ("dec_h", u), ("dec_c", u), ("logits", self.V)])
        d.layer("Embedding", "emb", [tok], [em], units=e, kernel=_np(self.emb.weight))
        k, r, bb = _lstm_weights(self.dec)
        d.layer("Lstm", "dec", [em, ih, ic], [o, nh, nc], units=u, kernel=k, recurrent=r, bias=bb)
        d.layer("Dense", "out", [o], [lg], units=self.V, kernel=_np(self.out.weight).T, bias=_np(self.out.bias))
        d.outputs = [lg, nh, nc]
        s2s = {"encoder": 0, "decoder": 1, "token_input": 0, "logits_output": 0, "start_token": 0,
               "states": [{"decoder_input": 1, "encoder_output": 0, "decoder_output": 1},
                          {"decoder_input": 2, "encoder_output": 1, "decoder_output": 2}],
               "contexts": [], "logits_are_probabilities": False}
        return g, d, s2s


class MlpModel(Seq2Seq):
    """Ours: the problem as one feature row -> MLP -> initial states of a 2-layer LSTM decoder and a
    problem vector that the decoder reads at every step. The runtime has no broadcast layer, so the
    problem vector is a one-row attention memory: softmax over one row is exactly 1, and Attention
    returns that row for every beam."""
    layout = "flat"

    def __init__(self, enc_shape, V, mean, std, emb=32, units=128, hidden=256, dropout=0.1, **_):
        super().__init__(enc_shape, V, mean, std, dropout)
        T = enc_shape[1]
        self.fc1, self.fc2 = nn.Linear(T, hidden), nn.Linear(hidden, hidden)
        self.init = nn.ModuleList([nn.Linear(hidden, units) for _ in range(4)])  # h1 c1 h2 c2
        self.ctx = nn.Linear(hidden, units)
        self.emb = nn.Embedding(V, emb)
        self.dec1 = nn.LSTM(emb + units, units, batch_first=True)
        self.dec2 = nn.LSTM(units, units, batch_first=True)
        self.head = nn.Linear(2 * units, units)
        self.out = nn.Linear(units, V)
        self.units, self.emb_dim, self.hidden = units, emb, hidden

    def encode(self, X):
        z = torch.relu(self.fc1(self.normalize(X)))
        z = self.drop(torch.relu(self.fc2(self.drop(z))))
        st = [torch.tanh(lin(z))[:, 0] if i % 2 == 0 else lin(z)[:, 0] for i, lin in enumerate(self.init)]
        return st, torch.tanh(self.ctx(z))  # memory [B, 1, u]

    def step(self, tok, states, mem):
        h1, c1, h2, c2 = states
        ctx = attention(h1, mem)
        x = torch.cat([self.drop(self.emb(tok)), ctx], 1).unsqueeze(1)
        o1, h1, c1 = _run_lstm(self.dec1, x, h1, c1)
        o2, h2, c2 = _run_lstm(self.dec2, self.drop(o1), h2, c2)
        a = torch.relu(self.head(torch.cat([o2[:, 0], ctx], 1)))
        return self.out(self.drop(a)), [h1, c1, h2, c2]

    def export(self, enc_shape):
        u, e, hd = self.units, self.emb_dim, self.hidden
        g = Graph("encoder", False)
        f = g.input("features", *enc_shape)
        z1, z2 = g.value("fc1", 1, hd), g.value("fc2", 1, hd)
        K, b = self.fold_first_dense(self.fc1)
        g.layer("Dense", "fc1", [f], [z1], units=hd, activation="Relu", kernel=K, bias=b)
        g.layer("Dense", "fc2", [z1], [z2], units=hd, activation="Relu", kernel=_np(self.fc2.weight).T,
                bias=_np(self.fc2.bias))
        outs = []
        for i, (name, lin) in enumerate(zip(["h1", "c1", "h2", "c2"], self.init)):
            v = g.value(name, 1, u)
            g.layer("Dense", f"init_{name}", [z2], [v], units=u, activation="Tanh" if i % 2 == 0 else "Linear",
                    kernel=_np(lin.weight).T, bias=_np(lin.bias))
            outs.append(v)
        m = g.value("problem", 1, u)
        g.layer("Dense", "problem", [z2], [m], units=u, activation="Tanh", kernel=_np(self.ctx.weight).T,
                bias=_np(self.ctx.bias))
        g.outputs = outs + [m]
        d = Graph("decoder", True)
        tok, (ih1, ic1, ih2, ic2) = _dec_inputs(d, [("h1", u), ("c1", u), ("h2", u), ("c2", u)])
        dm = d.input("problem", 1, u)
        ctx, em, x, o1, nh1, nc1, o2, nh2, nc2, cat, a, lg = (d.value(n, 0, c) for n, c in [
            ("problem_b", u), ("emb", e), ("dec1_in", e + u), ("dec1_out", u), ("dec1_h", u), ("dec1_c", u),
            ("dec2_out", u), ("dec2_h", u), ("dec2_c", u), ("head_in", 2 * u), ("head", u), ("logits", self.V)])
        d.layer("Attention", "broadcast_problem", [ih1, dm], [ctx])
        d.layer("Embedding", "emb", [tok], [em], units=e, kernel=_np(self.emb.weight))
        d.layer("Concat", "dec1_in", [em, ctx], [x])
        for name, lstm, ins, outs_ in [("dec1", self.dec1, [x, ih1, ic1], [o1, nh1, nc1]),
                                       ("dec2", self.dec2, [o1, ih2, ic2], [o2, nh2, nc2])]:
            k, r, bb = _lstm_weights(lstm)
            d.layer("Lstm", name, ins, outs_, units=u, kernel=k, recurrent=r, bias=bb)
        d.layer("Concat", "head_in", [o2, ctx], [cat])
        d.layer("Dense", "head", [cat], [a], units=u, activation="Relu", kernel=_np(self.head.weight).T,
                bias=_np(self.head.bias))
        d.layer("Dense", "out", [a], [lg], units=self.V, kernel=_np(self.out.weight).T, bias=_np(self.out.bias))
        d.outputs = [lg, nh1, nc1, nh2, nc2]
        s2s = {"encoder": 0, "decoder": 1, "token_input": 0, "logits_output": 0, "start_token": 0,
               "states": [{"decoder_input": i + 1, "encoder_output": i, "decoder_output": i + 1} for i in range(4)],
               "contexts": [{"decoder_input": 5, "encoder_output": 4}], "logits_are_probabilities": False}
        return g, d, s2s


class _DecoderBlock(nn.Module):
    """Pre-LayerNorm transformer decoder block for one new position: causal self-attention over the
    cached prefix, cross-attention to the problem memory, feed-forward."""

    def __init__(self, d, heads, ff, dropout):
        super().__init__()
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.self_attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(ff, d))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, cache, mem):
        """x [B, 1, d], cache [B, t, d] (this block's normalized inputs at earlier positions)."""
        h = self.ln1(x)
        kv = torch.cat([cache, h], 1)  # the prefix and the new position: causal by construction
        x = x + self.drop(self.self_attn(h, kv, kv, need_weights=False)[0])
        h = self.ln2(x)
        x = x + self.drop(self.cross_attn(h, mem, mem, need_weights=False)[0])
        return x + self.drop(self.ff(self.ln3(x))), kv

    def sequence(self, x, mem):
        """All positions at once (training): x [B, L, d] -> [B, L, d], the same as L calls of forward()."""
        L = x.shape[1]
        causal = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)  # True: may not attend
        h = self.ln1(x)
        x = x + self.drop(self.self_attn(h, h, h, attn_mask=causal, need_weights=False)[0])
        h = self.ln2(x)
        x = x + self.drop(self.cross_attn(h, mem, mem, need_weights=False)[0])
        return x + self.drop(self.ff(self.ln3(x)))


class TransformerModel(Seq2Seq):
    """Issue 7's "small transformer decoder", a study model (PyTorch only: the runtime has no
    LayerNorm or multi-head attention, so it does not export). The mlp model's problem encoder makes
    `mem_tokens` memory vectors; the decoder is `layers` pre-LN blocks of width `units` with learned
    positions. The decoder state is each block's normalized (ln1) input at the earlier positions (a
    cache), so step() keeps the interface of the other models and beam search reorders it like LSTM
    states."""
    layout = "flat"
    exportable = False
    max_positions = 64  # parameters plus the end token; the longest vector today has 10

    def __init__(self, enc_shape, V, mean, std, units=128, hidden=256, dropout=0.1, layers=2, heads=4,
                 mem_tokens=4, **_):
        super().__init__(enc_shape, V, mean, std, dropout)
        T = enc_shape[1]
        self.fc1, self.fc2 = nn.Linear(T, hidden), nn.Linear(hidden, hidden)
        self.mem = nn.Linear(hidden, mem_tokens * units)
        self.emb = nn.Embedding(V, units)
        self.pos = nn.Embedding(self.max_positions, units)
        self.blocks = nn.ModuleList([_DecoderBlock(units, heads, 2 * units, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(units)
        self.out = nn.Linear(units, V)
        self.units, self.mem_tokens = units, mem_tokens

    def encode(self, X):
        z = torch.relu(self.fc1(self.normalize(X)))
        z = self.drop(torch.relu(self.fc2(self.drop(z))))          # [B, 1, hidden]
        mem = self.mem(z).view(len(X), self.mem_tokens, self.units)
        return [z.new_zeros(len(X), 0, self.units) for _ in self.blocks], mem

    def step(self, tok, states, mem):
        t = states[0].shape[1]
        if t >= self.max_positions:
            raise ValueError(f"transformer decoder: more than {self.max_positions} positions")
        x = self.drop(self.emb(tok) + self.pos.weight[t]).unsqueeze(1)
        new = []
        for block, cache in zip(self.blocks, states):
            x, cache = block(x, cache, mem)
            new.append(cache)
        return self.out(self.ln(x[:, 0])), new

    def teacher(self, X, tok_in):
        """Teacher forcing in one causal pass (the step loop gives the same logits, only slower)."""
        _, mem = self.encode(X)
        L = tok_in.shape[1]
        if L > self.max_positions:
            raise ValueError(f"transformer decoder: more than {self.max_positions} positions")
        x = self.drop(self.emb(tok_in) + self.pos.weight[:L])
        for block in self.blocks:
            x = block.sequence(x, mem)
        return self.out(self.ln(x))

    def export(self, enc_shape):
        raise NotImplementedError("the transformer decoder is a PyTorch study model: the runtime has no "
                                  "LayerNorm or multi-head attention layer to export it to")


MODELS = {"paper": PaperModel, "attention": AttentionModel, "hybrid": HybridModel, "mlp": MlpModel,
          "transformer": TransformerModel}


def build(kind, enc_shape, V, mean, std, **cfg):
    return MODELS[kind](enc_shape, V, mean, std, **cfg)

"""Encoder input = the rules language's `encode` declarations, evaluated in Python.

One list of element declarations (row, col, transform, expression text) is the single source of
truth: `Encoding.text()` writes it as a `.tce` file, and `Encoding.matrix()` evaluates the very same
expression strings with the small C-like evaluator below. Nothing else computes features, so the
runtime's input and the trainer's input cannot diverge.
"""
import re

import numpy as np

from .data import FIELDS, SYMBOLS, arch_code

# ---------------------------------------------------------------------------------------------
# Integer expressions: C operators and precedence, ?:, the rules language's builtins, problem
# fields and symbols (F, FP16, gfx906; a kernel definition's own fields and symbols, kernel.py).
_TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+|\d+|[A-Za-z_][A-Za-z_0-9]*|==|!=|<=|>=|<<|>>|&&|\|\||[-+*/%<>!?:(),])")
_BINARY = [  # lowest to highest precedence
    ["||"], ["&&"], ["==", "!="], ["<", "<=", ">", ">="], ["<<", ">>"], ["+", "-"], ["*", "/", "%"]]


def _c_div(a, b):
    q = np.abs(a) // np.maximum(np.abs(b), 1)
    return np.where(b == 0, 0, np.sign(a) * np.sign(b) * q)


def _c_mod(a, b):
    return a - _c_div(a, b) * b


_OPS = {
    "||": lambda a, b: ((a != 0) | (b != 0)).astype(np.int64),
    "&&": lambda a, b: ((a != 0) & (b != 0)).astype(np.int64),
    "==": lambda a, b: (a == b).astype(np.int64), "!=": lambda a, b: (a != b).astype(np.int64),
    "<": lambda a, b: (a < b).astype(np.int64), "<=": lambda a, b: (a <= b).astype(np.int64),
    ">": lambda a, b: (a > b).astype(np.int64), ">=": lambda a, b: (a >= b).astype(np.int64),
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": _c_div, "%": _c_mod,
    "<<": lambda a, b: np.left_shift(a, b), ">>": lambda a, b: np.right_shift(a, b),
}


def _ceil_div(a, b):  # the exact quotient rounded up (the rules language's ceil_div)
    q = _c_div(a, b)
    return q + ((a - q * b != 0) & ((a > 0) == (b > 0))).astype(np.int64)


def _ilog2(a):
    return np.floor(np.log2(np.maximum(a, 1).astype(np.float64))).astype(np.int64)


# Builtins (docs/rules_language.md): name -> (arity, or None for 1 or more; function of int64 arrays).
_BUILTINS = {
    "min": (None, lambda *a: np.minimum.reduce(np.broadcast_arrays(*a))),
    "max": (None, lambda *a: np.maximum.reduce(np.broadcast_arrays(*a))),
    "ceil_div": (2, _ceil_div),
    "abs": (1, np.abs),
    "is_pow2": (1, lambda a: ((a > 0) & ((a & (a - 1)) == 0)).astype(np.int64)),
    "ilog2": (1, _ilog2),
}


class Expr:
    """Parsed integer expression; `eval(env)` takes field name -> int64 array. `fields` and
    `symbols` default to the convolution problem's (problem.h); a kernel definition passes its own,
    and `any_arch` then reads any other name that is an architecture name (`h100`) as its code."""

    def __init__(self, text, fields=None, symbols=None, any_arch=False):
        self.text = text
        self.field_names = FIELDS if fields is None else fields
        self.symbols = SYMBOLS if symbols is None else symbols
        self.any_arch = any_arch
        self.toks = _TOKEN.findall(text)
        if "".join(self.toks) != re.sub(r"\s+", "", text):
            raise ValueError(f"bad character in expression: {text!r}")
        self.pos = 0
        self.fields = set()
        self.fn = self._ternary()
        if self.pos != len(self.toks):
            raise ValueError(f"trailing tokens in expression: {text!r}")

    def _peek(self):
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def _take(self, expected=None):
        t = self._peek()
        if t is None or (expected and t != expected):
            raise ValueError(f"expected {expected or 'a token'} in {self.text!r}")
        self.pos += 1
        return t

    def _ternary(self):
        cond = self._binary(0)
        if self._peek() == "?":
            self._take()
            a = self._ternary()
            self._take(":")
            b = self._ternary()
            return lambda env: np.where(cond(env) != 0, a(env), b(env))
        return cond

    def _binary(self, level):
        if level == len(_BINARY):
            return self._unary()
        lhs = self._binary(level + 1)
        while self._peek() in _BINARY[level]:
            op = _OPS[self._take()]
            rhs = self._binary(level + 1)
            lhs = (lambda l, r, o: lambda env: o(l(env), r(env)))(lhs, rhs, op)
        return lhs

    def _unary(self):
        t = self._peek()
        if t == "-":
            self._take()
            f = self._unary()
            return lambda env: -f(env)
        if t == "!":
            self._take()
            f = self._unary()
            return lambda env: (f(env) == 0).astype(np.int64)
        if t == "(":
            self._take()
            f = self._ternary()
            self._take(")")
            return f
        t = self._take()
        if t[0].isdigit():
            v = np.int64(int(t, 0) if t[:2] in ("0x", "0X") else int(t))
            return lambda env: v
        if t in _BUILTINS and self._peek() == "(":
            return self._call(t)
        if t in self.field_names:
            self.fields.add(t)
            return lambda env: env[t]
        if t in self.symbols:
            v = np.int64(self.symbols[t])
            return lambda env: v
        if (t.startswith("gfx") or self.any_arch) and arch_code(t) is not None:  # as problem.h codes it
            v = np.int64(arch_code(t))
            return lambda env: v
        raise ValueError(f"unknown symbol {t!r} in {self.text!r}")

    def _call(self, name):
        arity, fn = _BUILTINS[name]
        self._take("(")
        args = [self._ternary()]
        while self._peek() == ",":
            self._take()
            args.append(self._ternary())
        self._take(")")
        if arity is not None and len(args) != arity:
            raise ValueError(f"{name} takes {arity} argument{'s' if arity > 1 else ''} in {self.text!r}")
        return lambda env: fn(*(np.asarray(a(env), dtype=np.int64) for a in args))

    def eval(self, env, n):
        return np.broadcast_to(np.asarray(self.fn(env), dtype=np.int64), (n,))


# ---------------------------------------------------------------------------------------------
def _tz(e):  # number of trailing zero bits, capped at 6 (divisibility by 2..64)
    return " + ".join(f"({e} % {1 << j} == 0)" for j in range(1, 7))


# Candidate scalar features (transform, expression). Those constant on the training rows are dropped.
CANDIDATES = [
    ("log2", "n"), ("log2", "c"), ("log2", "k"), ("log2", "h"), ("log2", "w"),
    ("log2", "h * w"), ("log2", "c * k"), ("log2", "n * h * w"),
    ("log2", "((h - 1) / stride_h + 1) * ((w - 1) / stride_w + 1)"),
    ("raw", "stride_h"), ("raw", "stride_w"), ("log2", "g"), ("log2", "c / g"), ("log2", "k / g"),
    ("raw", _tz("c")), ("raw", _tz("k")), ("raw", _tz("n")), ("raw", _tz("h * w")),
    ("raw", "dir == B"), ("raw", "dir == W"),
    ("raw", "dtype == FP16"), ("raw", "dtype == BF16"), ("raw", "arch == gfx906"),
]


# Kernel-aware candidates (train.py --kernel-features): quantities the kernel's rules
# (weights/rules/<solver>.tcr) derive from the problem and its tuning choices hinge on, which log2
# sizes give an MLP only approximately: ceilings, caps and divisibility of per-group channels.
_E = "(dtype == FP16 ? 2 : 1)"                      # elements per 32-bit word
_OW = "(stride_w * (w - 1) + 1)"                    # x width (stride 2: the narrower reading)
_OH = "(stride_h * (h - 1) + 1)"
_W_VEC = f"(({_OW} + {_E} - 1) / {_E})"
KERNEL_CANDIDATES = {
    "ConvAsmBwdWrW3x3": [
        ("raw", f"({_W_VEC} + 15) / 16"),            # g_in0 for chunk_size 16
        ("raw", f"({_W_VEC} + 6) / 7"),              # g_in0 for chunk_size 8
        ("raw", f"{_OH} < 16 ? {_OH} : 16"),         # pipe_lines_depth's cap
        ("raw", "n < 8 ? n : 8"),                    # n_per_group's cap
        ("raw", _tz("c / g")), ("raw", _tz("k / g")),  # chunk_size / k_per_wave divisibility per group
        ("raw", f"{_OW} < 48"),                      # the static default's chunk_size switch
    ],
}


def _apply(transform, values):
    if transform == "log2":
        return np.log2(np.maximum(values, 1)).astype(np.float64)
    if transform == "raw":
        return values.astype(np.float64)
    raise ValueError(transform)


def _env(fields, names=None):
    return {f: fields[:, i] for i, f in enumerate(FIELDS if names is None else names)}


def encoding_digest(tce_text):
    """Identity of an encoding's input shape and `encode` lines (not its comments or ranges):
    "fnv1a64:<16 hex>" over one canonical line per statement, `input R x C`, then `R C TRANSFORM
    EXPR` with every blank removed from the transform's arguments and the expression. The trainer
    stores it in the model's metadata (encoding_digest) and `tunecast compile` recomputes it from
    the compiled encoding, refusing a .tce the model was not trained with
    (codegen/compiler/src/assemble.cpp). Statements on one line each, as this module writes them."""
    lines = []
    for raw in tce_text.splitlines():
        words = raw.split("#", 1)[0].split()
        if words[:1] == ["input"]:
            lines.append("input " + "".join(words[1:]).replace("x", " x "))
        elif words[:1] == ["encode"]:
            row, col, transform, rest = int(words[1]), int(words[2]), words[3], words[4:]
            numbers = []  # the transform's arguments, as the C++ compiler reads them (a sign may stand apart)
            while len(numbers) < {"onehot": 1, "standardize": 2}.get(transform, 0):
                token = rest.pop(0)
                numbers.append(token + rest.pop(0) if token in ("-", "+") else token)
            args = "".join(f":{float(np.float32(a)):.9g}" if transform == "standardize" else f":{int(a)}"
                           for a in numbers)
            lines.append(f"{row} {col} {transform}{args} {''.join(rest)}")
    h = 0xcbf29ce484222325
    for byte in "".join(line + "\n" for line in lines).encode():
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"fnv1a64:{h:016x}"


def ranges_of(train_fields, names=None):
    """{field: (min, max)} over the training rows for EVERY problem field, not only those the
    encoding reads: a field the model never saw vary (a 1x1 kernel's filter size, the layout) is
    ignored by the encoding, so only its range lets the runtime flag a problem the model cannot
    know (y=3 for ConvAsm1x1U)."""
    fields = np.asarray(train_fields, dtype=np.int64)
    return {f: (int(fields[:, i].min()), int(fields[:, i].max()))
            for i, f in enumerate(FIELDS if names is None else names)}


class Encoding:
    """Scalar features laid out as the encoder input.

    layout "flat": 1 x T, element (0, t) = feature t (one time step; MLP encoders).
    layout "diag": T x 2T, element (t, t) = feature t and (t, T + t) = 1 (one time step per feature,
    with a per-step indicator so a first Dense layer can hold a per-feature bias; sequence encoders).

    `fields` and `symbols` name the problem's fields (the columns of a field matrix) and symbols:
    the convolution problem's by default, a kernel definition's own otherwise (kernel.py; its
    expressions may then name any architecture, `arch == h100`).
    """

    def __init__(self, features, layout, ranges=None, fields=None, symbols=None):
        self.features = [tuple(f) for f in features]
        self.layout = layout
        self.ranges = ranges or {}
        self.fields, self.symbols = (None, None) if fields is None else (list(fields), dict(symbols or {}))
        self.exprs = {e: self._expr(e) for _, e in self.features}
        self.exprs["1"] = Expr("1")

    def _expr(self, text):
        return Expr(text, self.fields, self.symbols, any_arch=self.fields is not None)

    @classmethod
    def select(cls, train_fields, layout, extra=(), candidates=None, fields=None, symbols=None):
        """The `candidates` (default CANDIDATES), then `extra` (e.g. KERNEL_CANDIDATES[solver]), that
        vary on the training rows."""
        probe = cls([], layout, None, fields, symbols)
        env = _env(train_fields, probe.fields)
        kept = []
        for tr, e in list(CANDIDATES if candidates is None else candidates) + list(extra):
            v = _apply(tr, probe._expr(e).eval(env, len(train_fields)))
            if v.std() > 1e-9 and (tr, e) not in kept:
                kept.append((tr, e))
        return cls(kept, layout, ranges_of(train_fields, probe.fields), fields, symbols)

    @property
    def count(self):
        return len(self.features)

    @property
    def shape(self):
        t = self.count
        return (1, t) if self.layout == "flat" else (t, 2 * t)

    def elements(self):
        """(row, col, transform, expression) for every non-zero element."""
        out = []
        for t, (tr, e) in enumerate(self.features):
            if self.layout == "flat":
                out.append((0, t, tr, e))
            else:
                out.append((t, t, tr, e))
                out.append((t, self.count + t, "raw", "1"))
        return out

    def text(self, title=""):
        rows, cols = self.shape
        lines = [f"# {title}" if title else "# tunecast encoder input",
                 "# Generated by tools/tunecast_train/features.py; the trainer evaluated these exact lines.",
                 f"input {rows} x {cols}"]
        lines += [f"encode {r} {c} {tr} {e}" for r, c, tr, e in self.elements()]
        lines += [f"range {f} {lo} {hi}" for f, (lo, hi) in self.ranges.items()]
        return "\n".join(lines) + "\n"

    def digest(self):
        return encoding_digest(self.text())

    def matrix(self, fields):
        """[N, rows, cols] float32 encoder inputs for an [N, len(FIELDS)] field matrix (the
        definition's fields, in its order, for a kernel definition's encoding)."""
        n = len(fields)
        env = _env(np.asarray(fields, dtype=np.int64), self.fields)
        rows, cols = self.shape
        x = np.zeros((n, rows, cols), dtype=np.float64)
        for r, c, tr, e in self.elements():
            x[:, r, c] = _apply(tr, self.exprs[e].eval(env, n))
        return x.astype(np.float32)

    def values(self, x):
        """The T scalar feature values inside encoder inputs [N, rows, cols] (inverse of the layout)."""
        t = np.arange(self.count)
        return x[:, 0, t] if self.layout == "flat" else x[:, t, t]

    def to_json(self):
        j = {"features": [list(f) for f in self.features], "layout": self.layout,
             "ranges": {k: list(v) for k, v in self.ranges.items()}}
        if self.fields is not None:  # a kernel definition's problem
            j["fields"], j["symbols"] = self.fields, self.symbols
        return j

    @classmethod
    def from_json(cls, j):
        return cls(j["features"], j["layout"], {k: tuple(v) for k, v in j["ranges"].items()},
                   j.get("fields"), j.get("symbols"))

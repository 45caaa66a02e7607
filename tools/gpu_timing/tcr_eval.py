#!/usr/bin/env python3
"""A Python reading of a kernel definition (.tcr: docs/kernels.md, docs/rules_language.md), for
checking a definition's rules against timing data on a machine without the C++ tools.

Reads `kernel`, `field`, `param`, `params`, `option`, `let` (also with arguments), `require`,
`applies` and `feature` statements, and evaluates expressions with the language's semantics:
int64 values, booleans 0/1, C precedence (`?:`, `||`, `&&`, `==` `!=`, `<` `<=` `>` `>=` `in`,
`<<` `>>`, `+` `-`, `*` `/` `%`, unary `-` `!`), `/` truncating toward zero, `%` with the
dividend's sign, short-circuit `&&` `||` `?:`, builtins min, max, ceil_div, abs, is_pow2, ilog2,
sets `{...}`, `pow2[lo..hi]`, ranges `[lo..hi]`. Names: let arguments, lets, options, params,
problem fields, then symbols (an enumeration's symbol compares equal to the field holding it, an
architecture name to the arch field). A failed evaluation (division by zero, ilog2 of <= 0)
counts as a violated require, as in the C++ runtime. Not a replacement for `tunecast check`:
the C++ rules compiler is the reference; this mirrors it for the statements above.

    python3 tools/gpu_timing/tcr_eval.py weights/rules/TritonGemmSplitK.tcr \
        --problem m=1,n=4096,k=4096,dtype=FP16 --config 16,64,128,4,4,3
"""
import argparse
import itertools
import re
import sys

TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(\.\.|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>!?:(),{}\[\]=]))")


class TcrError(ValueError):
    pass


class EvalFail(Exception):
    """An evaluation failure (division by zero, ...): the constraint counts as violated."""


def tokenize(text, where):
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        mt = TOKEN.match(text, pos)
        if not mt or mt.end() == pos:
            if text[pos:].strip() == "":
                break
            raise TcrError(f"{where}: cannot read {text[pos:]!r}")
        pos = mt.end()
        if mt.group(1):
            out.append(("num", int(mt.group(1))))
        elif mt.group(2):
            out.append(("name", mt.group(2)))
        else:
            out.append(("op", mt.group(3)))
    return out


BINARY = [  # (operators, binding power), loosest first, after ?: (handled apart)
    ({"||"}, 2), ({"&&"}, 3), ({"==", "!="}, 4), ({"<", "<=", ">", ">=", "in"}, 5), ({"<<", ">>"}, 6),
    ({"+", "-"}, 7), ({"*", "/", "%"}, 8),
]
POWER = {op: bp for ops, bp in BINARY for op in ops}


class Parser:
    def __init__(self, tokens, where):
        self.t, self.i, self.where = tokens, 0, where

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else ("end", None)

    def take(self, kind=None, value=None):
        tok = self.peek()
        if (kind and tok[0] != kind) or (value is not None and tok[1] != value):
            raise TcrError(f"{self.where}: expected {value or kind}, got {tok[1]!r}")
        self.i += 1
        return tok

    def at(self, value):
        tok = self.peek()
        return tok[0] in ("op", "name") and tok[1] == value

    def expr(self, min_bp=0):
        left = self.unary()
        while True:
            tok = self.peek()
            if tok[0] == "op" and tok[1] == "?" and min_bp <= 1:
                self.take()
                a = self.expr(0)
                self.take("op", ":")
                b = self.expr(1)  # right-associative
                left = ("?", left, a, b)
                continue
            op = tok[1] if tok[0] in ("op", "name") else None
            bp = POWER.get(op)
            if bp is None or bp <= min_bp:
                return left
            self.take()
            if op == "in":
                left = ("in", left, self.set_expr())
            else:
                left = (op, left, self.expr(bp))

    def unary(self):
        tok = self.peek()
        if tok[0] == "op" and tok[1] in ("-", "!"):
            self.take()
            return ("neg" if tok[1] == "-" else "not", self.unary())
        return self.primary()

    def primary(self):
        tok = self.take()
        if tok[0] == "num":
            return ("num", tok[1])
        if tok[0] == "op" and tok[1] == "(":
            e = self.expr(0)
            self.take("op", ")")
            return e
        if tok[0] == "name":
            if self.at("("):
                self.take()
                args = []
                if not self.at(")"):
                    args.append(self.expr(0))
                    while self.at(","):
                        self.take()
                        args.append(self.expr(0))
                self.take("op", ")")
                return ("call", tok[1], args)
            return ("name", tok[1])
        raise TcrError(f"{self.where}: unexpected {tok[1]!r}")

    def set_expr(self):
        if self.at("{"):
            self.take()
            items = [self.expr(0)]
            while self.at(","):
                self.take()
                items.append(self.expr(0))
            self.take("op", "}")
            return ("set", items)
        if self.at("pow2"):
            self.take()
            lo, hi = self.range_bounds()
            return ("pow2", lo, hi)
        if self.at("["):
            lo, hi = self.range_bounds()
            return ("range", lo, hi)
        tok = self.take("name")
        return ("setname", tok[1])

    def range_bounds(self):
        self.take("op", "[")
        lo = self.expr(0)
        self.take("op", "..")
        hi = self.expr(0)
        self.take("op", "]")
        return lo, hi


def parse_expr(text, where):
    p = Parser(tokenize(text, where), where)
    e = p.expr(0)
    if p.i != len(p.t):
        raise TcrError(f"{where}: unexpected {p.t[p.i][1]!r}")
    return e


def _trunc_div(a, b):
    if b == 0:
        raise EvalFail("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _c_mod(a, b):
    if b == 0:
        raise EvalFail("modulo by zero")
    return a - _trunc_div(a, b) * b


class Definition:
    def __init__(self, text, path="<definition>"):
        self.path = path
        self.kernel = None
        self.fields = []      # [(name, kind 'int'|'enum'|'arch', info)]
        self.params = []      # [(name, values or None)]
        self.options, self.lets, self.requires, self.applies, self.features = {}, {}, [], [], []
        pending, start = "", 0
        for no, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line and not pending:
                continue
            if pending:  # a statement continues while its parentheses are open
                line, no = pending + " " + line, start
            if line.count("(") > line.count(")"):
                pending, start = line, no
                continue
            pending = ""
            where = f"{path}:{no}"
            word, _, rest = line.partition(" ")
            rest = rest.strip()
            if word == "kernel":
                self.kernel = rest
            elif word == "field":
                self._field(rest, where)
            elif word == "param":
                name, _, dom = rest.partition(" in ")
                self.params.append((name.strip(), self._domain(dom.strip(), where)))
            elif word == "params":
                self.params.extend((n.strip(), None) for n in rest.split(","))
            elif word == "option":
                name, _, e = rest.partition("=")
                self.options[name.strip()] = self.eval(parse_expr(e, where), {})
            elif word == "let":
                head, _, e = rest.partition("=")
                head = head.strip()
                mt = re.match(r"([A-Za-z_]\w*)\s*(?:\((.*)\))?$", head)
                if not mt:
                    raise TcrError(f"{where}: bad let {head!r}")
                args = [a.strip() for a in mt.group(2).split(",")] if mt.group(2) else []
                tokens = tokenize(e, where)
                if tokens and tokens[0] == ("op", "{"):  # a let bound to a set
                    self.lets[mt.group(1)] = (args, Parser(tokens, where).set_expr(), True)
                else:
                    self.lets[mt.group(1)] = (args, parse_expr(e, where), False)
            elif word == "require":
                self.requires.append((where, rest, parse_expr(rest, where)))
            elif word == "applies":
                self.applies.append((where, rest, parse_expr(rest, where)))
            elif word == "feature":
                transform, _, e = rest.partition(" ")
                self.features.append((transform, e.strip(), parse_expr(e, where)))
            else:
                raise TcrError(f"{where}: unknown statement {word!r}")
        for i, (name, vals) in enumerate(self.params):  # the older `params` form: domains from requires
            if vals is None:
                for _, _, e in self.requires:
                    if e[0] == "in" and e[1] == ("name", name):
                        dom = self._set_values(e[2], {})
                        vals = dom if vals is None else vals & dom
                self.params[i] = (name, None if vals is None else sorted(vals))
        self.param_names = [p for p, _ in self.params]
        self.symbols = {}
        for name, kind, info in self.fields:
            if kind == "enum":
                for i, s in enumerate(info["symbols"]):
                    self.symbols.setdefault(s, i)

    def _field(self, rest, where):
        mt = re.match(r"([A-Za-z_]\w*)\s*(.*)$", rest)
        name, tail = mt.group(1), mt.group(2)
        default = None
        dm = re.search(r"\bdefault\s+(\S+)\s*$", tail)
        if dm:
            default, tail = dm.group(1), tail[:dm.start()].strip()
        if name == "arch":
            self.fields.append((name, "arch", {"default": default}))
        elif tail.startswith("in {"):
            syms = [s.strip() for s in tail[4:].rstrip("}").split(",")]
            self.fields.append((name, "enum", {"symbols": syms, "default": default}))
        elif tail.startswith("in ["):
            lo, hi = tail[4:].rstrip("]").split("..")
            self.fields.append((name, "int", {"min": int(lo), "max": int(hi),
                                              "default": None if default is None else int(default)}))
        else:
            raise TcrError(f"{where}: bad field {rest!r}")

    def _domain(self, text, where):
        e = Parser(tokenize(text, where), where).set_expr()
        return sorted(self._set_values(e, {}))

    def _set_values(self, s, env):
        if s[0] == "set":
            return {self.eval(x, env) for x in s[1]}
        if s[0] == "pow2":
            lo, hi = self.eval(s[1], env), self.eval(s[2], env)
            return {1 << i for i in range(64) if lo <= (1 << i) <= hi}
        if s[0] == "range":
            return set(range(self.eval(s[1], env), self.eval(s[2], env) + 1))
        if s[0] == "setname":
            args, e, is_set = self.lets.get(s[1], (None, None, False))
            if not is_set:
                raise TcrError(f"{s[1]!r} is not a set")
            return self._set_values(e, env)
        raise TcrError(f"not a set: {s}")

    def configs(self):
        return list(itertools.product(*(vals for _, vals in self.params)))

    # -- evaluation ------------------------------------------------------------------------
    def _value(self, name, env):
        if name in env:
            return env[name]
        if name in self.lets:
            args, e, is_set = self.lets[name]
            if is_set or args:
                raise TcrError(f"{name!r} used as a number")
            return self.eval(e, env)
        if name in self.options:
            return self.options[name]
        prob = env.get("__problem__", {})
        cfg = env.get("__config__", {})
        if name in cfg:
            return cfg[name]
        if name in prob:
            return prob[name]
        if name in self.symbols:
            return ("sym", name)
        return ("sym", name)  # an architecture name

    def _num(self, v):
        if isinstance(v, tuple):
            raise TcrError(f"symbol {v[1]} used as a number")
        return v

    def eval(self, e, env):
        op = e[0]
        if op == "num":
            return e[1]
        if op == "name":
            return self._value(e[1], env)
        if op == "?":
            return self.eval(e[2], env) if self._num(self._truth(self.eval(e[1], env))) else self.eval(e[3], env)
        if op == "&&":
            return 1 if self._truth(self.eval(e[1], env)) and self._truth(self.eval(e[2], env)) else 0
        if op == "||":
            return 1 if self._truth(self.eval(e[1], env)) or self._truth(self.eval(e[2], env)) else 0
        if op == "not":
            return 0 if self._truth(self.eval(e[1], env)) else 1
        if op == "neg":
            return -self._num(self.eval(e[1], env))
        if op in ("==", "!="):
            a, b = self.eval(e[1], env), self.eval(e[2], env)
            eq = self._same(a, b)
            return int(eq if op == "==" else not eq)
        if op == "in":
            return int(self._num(self.eval(e[1], env)) in self._set_values(e[2], env))
        if op == "call":
            return self._call(e[1], [self.eval(a, env) for a in e[2]], e, env)
        a, b = self._num(self.eval(e[1], env)), self._num(self.eval(e[2], env))
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return _trunc_div(a, b)
        if op == "%":
            return _c_mod(a, b)
        if op == "<":
            return int(a < b)
        if op == "<=":
            return int(a <= b)
        if op == ">":
            return int(a > b)
        if op == ">=":
            return int(a >= b)
        if op in ("<<", ">>"):
            if not 0 <= b <= 63:
                raise EvalFail("bad shift")
            return a << b if op == "<<" else a >> b
        raise TcrError(f"unknown operator {op}")

    def _truth(self, v):
        return self._num(v) != 0

    def _same(self, a, b):
        if isinstance(a, tuple) or isinstance(b, tuple):
            sa = a[1] if isinstance(a, tuple) else a
            sb = b[1] if isinstance(b, tuple) else b
            return sa == sb
        return a == b

    def _call(self, name, args, e, env):
        if name in self.lets:
            params, body, _ = self.lets[name]
            if len(params) != len(args):
                raise TcrError(f"{name} takes {len(params)} arguments")
            return self.eval(body, {**env, **dict(zip(params, args))})
        args = [self._num(a) for a in args]
        if name == "min":
            return min(args)
        if name == "max":
            return max(args)
        if name == "ceil_div":
            if args[1] == 0:
                raise EvalFail("ceil_div by zero")
            return -_trunc_div(-args[0], args[1]) if (args[0] >= 0) == (args[1] > 0) else _trunc_div(args[0], args[1])
        if name == "abs":
            return abs(args[0])
        if name == "is_pow2":
            return int(args[0] > 0 and args[0] & (args[0] - 1) == 0)
        if name == "ilog2":
            if args[0] <= 0:
                raise EvalFail("ilog2 of <= 0")
            return args[0].bit_length() - 1
        raise TcrError(f"unknown function {name}")

    def problem(self, values):
        """values: {field: int or symbol text}; defaults filled in."""
        out = {}
        if not self.fields:  # the built-in convolution problem: numbers, and symbols as given
            return {k: int(v) if str(v).lstrip("-").isdigit() else ("sym", v) for k, v in values.items()}
        for name, kind, info in self.fields:
            v = values.get(name, info.get("default"))
            if v is None:
                raise TcrError(f"problem lacks required field {name}")
            if kind == "int":
                v = int(v)
                if not info["min"] <= v <= info["max"]:
                    raise TcrError(f"{name}={v} outside [{info['min']}..{info['max']}]")
            elif kind == "enum":
                if v not in info["symbols"]:
                    raise TcrError(f"{name}={v} not in {{{', '.join(info['symbols'])}}}")
                v = ("sym", v)
            else:
                v = ("sym", v)
            out[name] = v
        return out

    def accepts(self, problem, cfg):
        """(accepted, the first violated require's text or None); problem from problem()."""
        env = {"__problem__": problem, "__config__": dict(zip(self.param_names, cfg))}
        for name, vals in self.params:
            if vals is not None and env["__config__"][name] not in vals:
                return False, f"{name} not in its domain"
        for where, text, e in self.requires:
            try:
                ok = self._truth(self.eval(e, env))
            except EvalFail:
                ok = False
            if not ok:
                return False, text
        return True, None

    def applies_to(self, problem):
        env = {"__problem__": problem, "__config__": {}}
        return all(self._truth(self.eval(e, env)) for _, _, e in self.applies)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("definition")
    ap.add_argument("--problem", help="name=value items, comma-separated")
    ap.add_argument("--config", help="parameter values, comma-separated, in position order")
    args = ap.parse_args(argv)
    with open(args.definition) as f:
        d = Definition(f.read(), args.definition)
    print(f"kernel {d.kernel}: fields {', '.join(n for n, _, _ in d.fields)}; params "
          f"{', '.join(f'{n} ({len(v)})' for n, v in d.params)}; {len(d.configs())} configs; "
          f"{len(d.requires)} requires, {len(d.applies)} applies, {len(d.features)} features")
    if args.problem:
        vals = dict(kv.split("=", 1) for kv in args.problem.replace(";", ",").split(",") if kv.strip())
        prob = d.problem(vals)
        if args.config:
            cfg = tuple(int(v) for v in args.config.split(","))
            ok, why = d.accepts(prob, cfg)
            print("accepted" if ok else f"rejected: {why}")
        else:
            valid = sum(1 for c in d.configs() if d.accepts(prob, c)[0])
            print(f"applies: {d.applies_to(prob)}; valid configs: {valid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

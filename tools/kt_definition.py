#!/usr/bin/python3
"""Kernel Tuner's tunable space as a tunecast kernel definition (docs/kernels.md): `tune_params`
(name -> list of integer values) become `param NAME in {...}`, every `restrictions` string (a Python
expression over the parameters, as Kernel Tuner evaluates it) a `require` in the rules language.

  tools/kt_definition.py SPACE.json -o kernel.tcr [--kernel NAME]

SPACE.json: {"kernel": "convolution", "tune_params": {"block_size_x": [16, 32], ...},
"restrictions": ["block_size_x*block_size_y<=1024", ...]} (what a Kernel Tuner script passes to
tune_kernel; a single string is one restriction, as Kernel Tuner takes it; optional
"block_size_names"), or the benchmark hub's T1 kernel description (kernels/*.json). The translation
is Python's own parse (ast): and / or / not (as true or false: `a or b` used as a number is
refused), chained comparisons (`32 <= a*b <= 1024`), `in` / `not in` a constant list, + - * // %
(Python's: rounded toward minus infinity, also for negative values), `/` where it divides evenly
for every config, `**` with a constant exponent, min, max, abs, True / False, parentheses; a
restriction using anything else (a function, a float, a string parameter) is refused with the
restriction quoted. Parameters with one value are kept (the definition's space is the script's).
Kernel Tuner's own restriction is added as it adds it: the block size parameters' product (threads
per block) at most --max-threads (default 1024).

Parameter names are kept as they are: tune --replay, eval-search and import-timings match a Kernel
Tuner cache's parameters by name. A name the rules language cannot take (letters, digits and _,
not starting with a digit; not a keyword such as `kernel` or `in`, not a builtin such as `min`) is
refused. The kernel's name (the JSON's 'kernel', else the file's stem) has every other character
written as `_`, and `_` before a leading digit; a --kernel NAME that is no name is refused.

The definition's one problem field, `size` (default 0; `size_` when a parameter is called size),
stands for the one problem a Kernel Tuner cache holds, so no --problem is needed:
`tunecast tune kernel.tcr --replay cache.json.gz --budget 20`. Any refusal exits with status 2 and
writes nothing.
"""
import argparse
import ast
import json
import os
import re
import sys
import tempfile


class Untranslatable(Exception):
    pass


BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/", ast.Mod: "%", ast.Div: "/"}
COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
# The rules language's names and reserved words (codegen/compiler/src/rules_compiler.cpp:
# is_ident_start, is_keyword, kBuiltins): a parameter so named does not parse, or clashes.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
KEYWORDS = {"params", "let", "option", "require", "input", "encode", "range", "in", "pow2", "kernel", "field",
            "param", "feature", "default", "applies"}
BUILTINS = {"min", "max", "ceil_div", "abs", "is_pow2", "ilog2"}
INT64_MAX = 2**63 - 1  # -2**63 has no literal: the parser reads `-` and then 2**63
MAX_PARAMS, MAX_VALUES = 16, 4096  # tunecast::kMaxParameters, the parser's kMaxSetSize
INF = float("inf")
DEFAULT_BLOCK_SIZE_NAMES = ["block_size_x", "block_size_y", "block_size_z"]  # Kernel Tuner's util.default_block_size_names
# Python's // and % round toward minus infinity, the rules language's / and % toward zero (C): they
# differ where the operands' signs do, so such an operand gets these lets (their names: FLOOR_LETS).
FLOOR_LETS = {
    ast.FloorDiv: ("py_floordiv", "(x, y) = x / y - (x % y != 0 && (x % y < 0) != (y < 0))"),
    ast.Mod: ("py_mod", "(x, y) = x % y != 0 && (x % y < 0) != (y < 0) ? x % y + y : x % y"),
}


def mul(x, y):
    return 0 if x == 0 or y == 0 else x * y  # inf * 0 is 0 here, not nan


def bounds(node, params):
    """The least and greatest value a restriction's subexpression can take over the space (at least:
    -inf, inf where not known). Where both operands of // and % are >= 0, C's truncation is Python's
    floor and the plain operator is written."""
    if isinstance(node, ast.Name) and node.id in params:
        return min(params[node.id]), max(params[node.id])
    if isinstance(node, ast.Constant) and isinstance(node.value, int):  # True, False too
        return int(node.value), int(node.value)
    if isinstance(node, ast.Compare) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return 0, 1
    if isinstance(node, ast.BoolOp):  # Python's `a or b` is a or b, not 0 / 1
        kids = [bounds(v, params) for v in node.values]
        return min([0] + [k[0] for k in kids]), max([1] + [k[1] for k in kids])
    if isinstance(node, ast.UnaryOp):
        lo, hi = bounds(node.operand, params)
        return (-hi, -lo) if isinstance(node.op, ast.USub) else (lo, hi) if isinstance(node.op, ast.UAdd) else (-INF, INF)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
        kids = [bounds(a, params) for a in node.args]
        if node.func.id == "min":
            return min(k[0] for k in kids), min(k[1] for k in kids)
        if node.func.id == "max":
            return max(k[0] for k in kids), max(k[1] for k in kids)
        if node.func.id == "abs" and len(kids) == 1:
            lo, hi = kids[0]
            return (lo, hi) if lo >= 0 else (-hi, -lo) if hi <= 0 else (0, max(-lo, hi))
    if isinstance(node, ast.BinOp):
        (a, b), (c, d) = bounds(node.left, params), bounds(node.right, params)
        if isinstance(node.op, ast.Add):
            return a + c, b + d
        if isinstance(node.op, ast.Sub):
            return a - d, b - c
        if isinstance(node.op, ast.Mult):
            corners = [mul(x, y) for x in (a, b) for y in (c, d)]
            return min(corners), max(corners)
        if isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) and isinstance(node.right.value, int) \
                and 0 <= node.right.value <= 8:
            e = node.right.value
            values = [a ** e, b ** e] + ([0] if a < 0 < b else [])
            return min(values), max(values)
        if isinstance(node.op, (ast.FloorDiv, ast.Div)) and a >= 0 and c >= 1:
            return 0, b  # an integer divisor >= 1
        if isinstance(node.op, ast.Mod) and c >= 1:
            return 0, d - 1  # Python's % has the divisor's sign
        if isinstance(node.op, ast.Mod) and d <= -1:
            return c + 1, 0
    return -INF, INF


def describe(node):
    """What a Python construct the rules language lacks is, in a user's words."""
    text = ast.unparse(node)
    if isinstance(node, ast.BinOp):
        return f"operator '{text[len(ast.unparse(node.left)):].split()[0]}' ({text})"
    if isinstance(node, ast.IfExp):
        return f"a conditional expression ({text})"
    if isinstance(node, ast.Constant):
        kind = "a float" if isinstance(node.value, float) else "a string" if isinstance(node.value, str) else "a constant"
        return f"{kind} ({text})"
    if isinstance(node, ast.Call):
        return f"a call ({text}; only min, max and abs are translated)"
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return f"a list ({text}) outside `x in [...]`"
    return f"{text}"


def constant_set(node):
    """The integers of a constant list, tuple or set (the right side of `in`), or None."""
    if not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return None
    values = []
    for e in node.elts:
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant):
            e = ast.Constant(-e.operand.value) if isinstance(e.operand.value, int) else e
        if not (isinstance(e, ast.Constant) and isinstance(e.value, int)):
            return None
        values.append(int(e.value))
    return sorted(set(values))


def rule(node, params, lets, boolean=True):
    """The rules-language text of a Python expression node; `lets` maps a FLOOR_LETS operator to its
    let's name, and collects in lets["used"] the operators whose let the text calls. `boolean`: the
    node's value is used only as true or false (a restriction, an operand of and / or / not)."""
    if isinstance(node, ast.Expression):
        return rule(node.body, params, lets, boolean)
    if isinstance(node, ast.BoolOp):
        if not boolean:  # Python's `a or b` is a or b, the rules language's a || b is 0 or 1
            raise Untranslatable(f"'{'and' if isinstance(node.op, ast.And) else 'or'}' used as a value "
                                 f"({ast.unparse(node)}): Python's gives an operand, not true or false")
        op = " && " if isinstance(node.op, ast.And) else " || "
        return "(" + op.join(rule(v, params, lets) for v in node.values) + ")"
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            return "!(" + rule(node.operand, params, lets) + ")"
        if isinstance(node.op, ast.USub):
            return "-(" + rule(node.operand, params, lets, False) + ")"
        if isinstance(node.op, ast.UAdd):
            return rule(node.operand, params, lets, False)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow):
            if not (isinstance(node.right, ast.Constant) and isinstance(node.right.value, int) and 0 <= node.right.value <= 8):
                raise Untranslatable("'**' needs a small constant integer exponent")
            base = rule(node.left, params, lets, False)
            return "(" + " * ".join([base] * node.right.value) + ")" if node.right.value else "1"
        if type(node.op) in BINARY:
            left, right = rule(node.left, params, lets, False), rule(node.right, params, lets, False)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod, ast.Div)) and bounds(node.right, params) == (0, 0):
                raise Untranslatable("divides by 0 on every config")  # the rules compiler refuses it
            signs_known = bounds(node.left, params)[0] >= 0 and bounds(node.right, params)[0] >= 0  # False for nan
            if type(node.op) in FLOOR_LETS and not signs_known:
                lets["used"].add(type(node.op))
                return f"{lets[type(node.op)]}({left}, {right})"
            return "(" + left + " " + BINARY[type(node.op)] + " " + right + ")"
    if isinstance(node, ast.Compare):
        parts, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                values = constant_set(right)
                if values is None:
                    raise Untranslatable(f"'in' needs a constant list of integers on its right ({ast.unparse(node)})")
                if not values:  # nothing is in an empty list: false, and `not in` true
                    parts.append("0" if isinstance(op, ast.In) else "1")
                else:
                    test = "(" + rule(left, params, lets, False) + " in {" + ", ".join(map(str, values)) + "})"
                    parts.append(test if isinstance(op, ast.In) else "!" + test)
            elif type(op) in COMPARE:
                parts.append(rule(left, params, lets, False) + " " + COMPARE[type(op)] + " " + rule(right, params, lets, False))
            else:
                raise Untranslatable(f"comparison '{'is' if isinstance(op, ast.Is) else 'is not'}' ({ast.unparse(node)})")
            left = right
        return "(" + " && ".join(parts) + ")"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max", "abs"):
        return node.func.id + "(" + ", ".join(rule(a, params, lets, False) for a in node.args) + ")"
    if isinstance(node, ast.Name):
        if node.id not in params:
            raise Untranslatable(f"'{node.id}' is not a tunable parameter")
        return node.id
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return "1" if node.value else "0"
        if isinstance(node.value, int):
            return str(node.value)
    raise Untranslatable(describe(node))


def divides_evenly(tree, params):
    """Whether every true division `/` in the restriction divides evenly on every config: only then
    is the rules language's integer division the same number as Python's."""
    names = list(params)
    import itertools
    divisions = [n for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)]
    if not divisions:
        return True
    for values in itertools.product(*(params[n] for n in names)):
        env = dict(zip(names, values))
        for d in divisions:
            den = eval(compile(ast.Expression(d.right), "<r>", "eval"), {}, env)  # noqa: S307 (the user's own restriction)
            num = eval(compile(ast.Expression(d.left), "<r>", "eval"), {}, env)  # noqa: S307
            if den == 0 or num % den != 0:
                return False
    return True


def restrictions_of(space):
    """The restrictions as a list: Kernel Tuner's Searchspace takes anything but a list or tuple as
    a list of one (kernel_tuner/searchspace.py), so a single string is one restriction."""
    restrictions = space.get("restrictions")
    if restrictions is None:
        return []
    return restrictions if isinstance(restrictions, list) else [restrictions]


def param_name_problem(p):
    """Why the rules language cannot take parameter name `p`, or None."""
    if not NAME.match(p):
        return "is not a name in the rules language (letters, digits and _, not starting with a digit)"
    if p in KEYWORDS:
        return "is a keyword of the rules language"
    if p in BUILTINS:
        return "is a builtin function of the rules language"
    return None


def free_name(name, taken):
    while name in taken:
        name += "_"
    return name


def block_size_names(space):
    """Kernel Tuner's thread block dimensions: the space's `block_size_names` (tune_kernel's argument),
    the defaults filling the dimensions it leaves out, as Kernel Tuner's util.append_default_block_size_names."""
    names = space.get("block_size_names")
    if names is None:
        return list(DEFAULT_BLOCK_SIZE_NAMES)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise Untranslatable("'block_size_names' is not a list of names")
    return names + DEFAULT_BLOCK_SIZE_NAMES[len(names):]


def definition(space, name, max_threads=1024):
    params = space["tune_params"]
    if not params:
        raise Untranslatable("'tune_params' is empty: a definition needs a parameter")
    if len(params) > MAX_PARAMS:
        raise Untranslatable(f"{len(params)} parameters: a definition has at most {MAX_PARAMS}")
    for p, values in params.items():
        why = param_name_problem(p)
        if why:  # a cache's parameters are matched by name: a renamed one would match nothing
            raise Untranslatable(f"parameter '{p}' {why}; it is not renamed, since tune --replay and import-timings "
                                 "match a Kernel Tuner cache's parameters by name")
        if not isinstance(values, list) or not values or \
                not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            shown = values[:4] if isinstance(values, list) else values
            raise Untranslatable(f"parameter '{p}' has non-integer values {shown}: a definition's are integers")
        if any(abs(v) > INT64_MAX for v in values):
            raise Untranslatable(f"parameter '{p}' has a value outside [-{INT64_MAX}, {INT64_MAX}]")
        if len(set(values)) > MAX_VALUES:
            raise Untranslatable(f"parameter '{p}' has {len(set(values))} values: a domain has at most {MAX_VALUES}")
    field = free_name("size", params)  # the problem field is ours to name: a parameter keeps its own
    lets = {op: free_name(let, set(params) | {field}) for op, (let, _) in FLOOR_LETS.items()}
    lets["used"] = set()
    lines = [f"# {name}: generated by tools/kt_definition.py from Kernel Tuner's tune_params and restrictions",
             f"kernel {name}", f"field {field} in [0..0] default 0   # one problem: a Kernel Tuner cache's", ""]
    for p, values in params.items():
        lines.append(f"param {p} in {{{', '.join(str(v) for v in sorted(set(values)))}}}")
    lines.append("")
    requires = []
    for text in restrictions_of(space):
        if not isinstance(text, str):
            raise Untranslatable(f"restriction {text!r} is not a string (a function cannot be translated)")
        try:
            tree = ast.parse(text, mode="eval")
            if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) for n in ast.walk(tree)) and \
                    not divides_evenly(tree, params):
                raise Untranslatable("'/' does not divide evenly for every config (Python's result is a fraction)")
            translated = rule(tree, params, lets)
            if not any(isinstance(n, ast.Name) for n in ast.walk(tree)) and not eval(compile(tree, "<r>", "eval")):  # noqa: S307
                raise Untranslatable("is always false: no config passes")  # the rules compiler refuses it
            comment = " ".join(text.split())  # a restriction over several lines stays in its comment
            requires.append(f"require {translated}   # {comment}")
        except (SyntaxError, ValueError, ArithmeticError, Untranslatable) as e:
            raise Untranslatable(f"restriction {text!r}: {e}")
    # Kernel Tuner adds this one itself (searchspace.py: MaxProdConstraint over the block size
    # parameters), so its caches never hold a block of more threads than the device has.
    block = [n for n in block_size_names(space) if n in params]
    if block and max_threads > 0:
        product = " * ".join(block)
        requires.append(f"require ({product}) <= {max_threads}   # Kernel Tuner's own: threads per block <= "
                        "max_threads (--max-threads)")
    for op, (let, body) in FLOOR_LETS.items():
        if op in lets["used"]:
            lines.append(f"let {lets[op]}{body}   # Python's {'//' if op is ast.FloorDiv else '%'}, for negative values")
    if lets["used"]:
        lines.append("")
    return "\n".join(lines + requires) + "\n"


def from_t1(doc):
    """The benchmark hub's T1 kernel description (`kernels/*.json`: ConfigurationSpace.TuningParameters
    with their Values as a Python list expression, Conditions' Expressions) as tune_params and
    restrictions; None when `doc` is not one."""
    space = doc.get("ConfigurationSpace") if isinstance(doc, dict) else None
    if not isinstance(space, dict) or not isinstance(space.get("TuningParameters"), list):
        return None
    tune_params = {}
    for p in space["TuningParameters"]:
        values = p.get("Values") if isinstance(p, dict) else None
        try:  # a Python expression such as `[1, 2] + list(range(32, 1025, 32))`, as Kernel Tuner evaluates it
            values = eval(values, {"__builtins__": {}, "list": list, "range": range}) if isinstance(values, str) else values  # noqa: S307
        except Exception:  # noqa: BLE001 (any fault of the user's expression is the same refusal)
            raise Untranslatable(f"T1 parameter {p.get('Name')!r}: Values {p.get('Values')!r} is not a list")
        tune_params[str(p.get("Name"))] = list(values) if isinstance(values, (list, tuple)) else values
    conditions = space.get("Conditions") or []
    restrictions = [c.get("Expression") if isinstance(c, dict) else c for c in conditions]
    general = doc.get("General") if isinstance(doc.get("General"), dict) else {}
    out = {"tune_params": tune_params, "restrictions": restrictions}
    if general.get("BenchmarkName"):
        out["kernel"] = general["BenchmarkName"]
    return out


def kernel_name(name):
    """`name` as the rules language takes a kernel's name: other characters as `_`, `_` before a
    leading digit (and before `in`, which the parser reads as the keyword)."""
    name = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    return "_" + name if not name or name[0].isdigit() or name == "in" else name


def same_file(a, b):
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)  # a hard link
    except OSError:
        return False


def fail(message):
    print(f"kt_definition: {message}", file=sys.stderr)
    sys.exit(2)


def write_atomically(path, text):
    """`text` into `path` through a temporary file beside it, so a reader never sees half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would create it, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("space", help="JSON with tune_params and restrictions")
    ap.add_argument("-o", "--output", required=True, help="the definition to write (.tcr)")
    ap.add_argument("--kernel", help="the kernel's name (default: the JSON's 'kernel', else the file's stem)")
    ap.add_argument("--max-threads", type=int, default=1024,
                    help="the device's threads per block: Kernel Tuner's own restriction on the product of the "
                         "block size parameters (default 1024, NVIDIA's and AMD's; 0 leaves it out)")
    args = ap.parse_args()
    try:
        with open(args.space) as f:
            space = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{args.space}: {e}")
    try:
        t1 = from_t1(space)
    except Untranslatable as e:
        fail(f"{args.space}: {e}")
    space = t1 or space
    if not isinstance(space, dict) or not isinstance(space.get("tune_params"), dict):
        fail(f"{args.space}: no 'tune_params' object (nor a T1 ConfigurationSpace)")
    if args.max_threads < 0:
        fail(f"--max-threads {args.max_threads}: a thread count >= 1, or 0 to leave the limit out")
    if args.kernel is not None:
        if not NAME.match(args.kernel) or args.kernel == "in":
            fail(f"--kernel {args.kernel!r} is not a kernel name in the rules language (letters, digits and _, "
                 "not starting with a digit; not 'in')")
        name = args.kernel
    else:
        given = space.get("kernel") or os.path.splitext(os.path.basename(args.space))[0]
        name = kernel_name(str(given))
        if name != given:
            print(f"kt_definition: note: kernel '{given}' is named '{name}' (the rules language's names are "
                  "letters, digits and _, not starting with a digit; --kernel NAME sets it)", file=sys.stderr)
    if same_file(args.output, args.space):
        fail("the output would replace the input")
    try:
        text = definition(space, name, args.max_threads)
    except Untranslatable as e:
        fail(f"{args.space}: {e}")
    try:
        write_atomically(args.output, text)
    except OSError as e:
        fail(f"cannot write {args.output}: {e.strerror or e}")
    print(f"kt_definition: wrote {args.output} ({len(space['tune_params'])} parameters, "
          f"{len(restrictions_of(space))} restrictions)", file=sys.stderr)


if __name__ == "__main__":
    main()

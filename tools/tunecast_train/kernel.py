"""Any kernel: its definition (read through `tunecast check KERNEL.tcr --json`) and its timing DBs
(`tunecast-timings/2`, docs/kernels.md), turned into training rows.

Nothing here names a kernel, a field or an architecture: the definition says what the problem's
fields are (integers, enumerations, the architecture), the parameters and their domains, and the
definition's own encoder features; the timing DBs say which architectures there are.

A problem's value of a field, as the runtime sees it: an integer field as is, an enumeration the
position of its symbol, the architecture `arch_code(name)` (data.arch_code, problem.h).

Rows, one per problem that has a measured `ok` config (tools/tunecast_train/training.py learns from
them): `fields` (the values in definition order), `params` (the target: the fastest `ok` config,
times the median of its `ok` rows), `ok` (every config measured `ok`), `failed` (every config with a
failed row: never a target, learned as bad), `problem` (the canonical text), `split`, `arch_name`,
`group`. With near-optimal targets, further rows of the same problem carry another `ok` config
within the fraction of the fastest time and `near_optimal` True.
"""
import json
import os
import shutil
import sqlite3
import statistics
import subprocess

import numpy as np

from . import data, features

FORMAT = "tunecast-timings/2"
OK = "ok"


# ---------------------------------------------------------------------------------------------
# The definition
def find_tunecast(explicit=None):
    """The tunecast CLI: `explicit`, else the one built or installed next to this package (the
    source tree's build/codegen/tunecast; an installed prefix's bin/tunecast), else tunecast on
    PATH; None if there is none."""
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "..", "..", "build", "codegen", "tunecast"),       # tools/tunecast_train
                      os.path.join(here, "..", "..", "..", "..", "bin", "tunecast")):     # share/tunecast/tools/...
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    return shutil.which("tunecast")


def check_json(definition_path, tunecast):
    """The definition as `tunecast check DEFINITION --json` prints it (docs/kernels.md): the one
    place the trainer calls the C++ CLI to read a definition."""
    try:
        run = subprocess.run([tunecast, "check", definition_path, "--json"], capture_output=True, text=True)
    except OSError as e:
        raise ValueError(f"cannot run {tunecast}: {e.strerror}")
    if run.returncode != 0:
        said = (run.stderr or run.stdout).strip().splitlines()
        raise ValueError(f"`{tunecast} check {definition_path} --json` failed (exit {run.returncode})"
                         + (f": {said[-1]}" if said else "") + " (tunecast-train needs a tunecast that reads "
                         "kernel definitions, or `tunecast check --json`'s saved output as --kernel FILE.json)")
    try:
        return json.loads(run.stdout)
    except json.JSONDecodeError as e:
        raise ValueError(f"`{tunecast} check {definition_path} --json` printed no JSON ({e})")


def _identifier(name):
    return (name[:1].isalpha() or name[:1] == "_") and all(c.isascii() and (c.isalnum() or c == "_") for c in name)


class Kernel:
    """A kernel definition, from `tunecast check --json` (docs/kernels.md)."""

    def __init__(self, j, source=""):
        self.source = source
        try:
            self.name = j["kernel"]
            if j.get("builtin_problem"):
                raise ValueError(f"{source or self.name}: a definition with no `field` statement describes a MIOpen "
                                 "convolution kernel; train those with tools/train.py --solver")
            self.fields = [dict(f) for f in j["fields"]]
            self.params = [p["name"] for p in j["params"]]
            self.domains = [list(p.get("values") or []) for p in j["params"]]
            # `expanded` (the text with the definition's lets inlined), where the JSON gives it
            self.features = [(f["transform"], f.get("expanded") or f["text"]) for f in j.get("features", [])]
        except (KeyError, TypeError) as e:
            raise ValueError(f"{source or 'definition'}: not a `tunecast check --json` definition (no {e})")
        if not self.params:
            raise ValueError(f"{source or self.name}: the definition has no parameter")
        self.field_names = [f["name"] for f in self.fields]
        self.symbols = {}  # enumeration symbol -> value (a symbol shared by enumerations has one position)
        for f in self.fields:
            if f["kind"] not in ("int", "enum", "arch"):
                raise ValueError(f"{source or self.name}: field {f['name']} of unknown kind {f['kind']!r}")
            for i, s in enumerate(f.get("symbols") or []):
                self.symbols[s] = i
        self.arch_field = next((f["name"] for f in self.fields if f["kind"] == "arch"), None)
        for transform, text in self.features:   # what features.py cannot evaluate fails here, named
            if transform not in ("raw", "log2"):
                raise ValueError(f"{source or self.name}: feature `{transform} {text}`: transform {transform!r} "
                                 "(raw or log2)")
            try:
                self._check_names(text)
                features.Expr(text, self.field_names, self.symbols, any_arch=True)
            except ValueError as e:
                raise ValueError(f"{source or self.name}: feature `{transform} {text}`: {e}")

    def _check_names(self, text):
        """Every name of an expression is a field, a symbol, a builtin called, or an architecture
        compared with the architecture field (`arch == h100`): a misspelt name is no silent constant."""
        toks = features._TOKEN.findall(text)
        for i, t in enumerate(toks):
            if not (t[:1].isalpha() or t[:1] == "_") or t in self.field_names or t in self.symbols:
                continue
            if t in features._BUILTINS and toks[i + 1:i + 2] == ["("]:
                continue
            compared = (i >= 2 and toks[i - 1] in ("==", "!=") and toks[i - 2] == self.arch_field) or \
                       (toks[i + 1:i + 2] in (["=="], ["!="]) and toks[i + 2:i + 3] == [self.arch_field])
            if not (self.arch_field and compared and data.arch_code(t) is not None):
                raise ValueError(f"unknown name {t!r} (the expression may read the definition's fields and symbols, "
                                 f"the builtins, and architectures compared with the architecture field; "
                                 f"a let is not visible here)")

    @classmethod
    def load(cls, path, tunecast=None):
        """A definition file (`.tcr`, read with `tunecast check --json`) or that command's saved
        output (`.json`)."""
        if path.endswith(".json"):
            try:
                with open(path) as fh:
                    return cls(json.load(fh), path)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not JSON ({e})")
        if not tunecast:
            raise ValueError(f"reading {path} needs the tunecast CLI (`tunecast check --json`): pass --tunecast "
                             "(e.g. build/codegen/tunecast), or the command's saved output as --kernel FILE.json")
        return cls(check_json(path, tunecast), path)

    def field(self, name):
        return self.fields[self.field_names.index(name)]

    def value(self, field, text):
        """A field's value as the runtime sees it, from a timing DB column (an integer, a symbol or an
        architecture name); ValueError naming the field when the definition refuses it."""
        kind, name = field["kind"], field["name"]
        if text is None:
            if field.get("default") is None:
                raise ValueError(f"field {name} has no value and no default")
            d = field["default"]   # an enumeration's: the symbol's position (or the symbol)
            return self.value(field, field["symbols"][d] if kind == "enum" and isinstance(d, int) else d)
        if kind == "int":
            try:
                v = int(text)
            except (TypeError, ValueError):
                raise ValueError(f"field {name}: {text!r} is not an integer")
            if not field.get("min", v) <= v <= field.get("max", v):
                raise ValueError(f"field {name}: {v} outside [{field['min']}..{field['max']}]")
            return v
        if kind == "enum":
            symbols = field["symbols"]
            if str(text) not in symbols:
                raise ValueError(f"field {name}: {text!r} is not one of {', '.join(symbols)}")
            return symbols.index(str(text))
        code = data.arch_code(str(text))
        if code is None:
            raise ValueError(f"field {name}: {text!r} is not an architecture name")
        return code

    def spelled(self, field, text):
        """A field's value as the canonical problem text spells it."""
        if text is None:
            d = field.get("default")
            return field["symbols"][d] if field["kind"] == "enum" and isinstance(d, int) else self.spelled(field, d)
        if field["kind"] == "arch":
            return str(text).strip().split(":")[0].strip().lower()
        return str(int(text)) if field["kind"] == "int" else str(text)

    def arch_symbol(self, name):
        """How an expression names an architecture: its name where that is one (`h100`), else its code."""
        if _identifier(name) and name not in self.field_names and name not in self.params \
                and name not in self.symbols:
            return name
        return str(data.arch_code(name))

    def expression_symbols(self):
        return dict(self.symbols)

    # -- features -----------------------------------------------------------------------------
    def feature_candidates(self, archs):
        """The schema's default encoder features, then the definition's own: log2 of every integer
        field, one per symbol of every enumeration (`dtype == FP16`: a one-hot of the symbol count's
        width), one per architecture in `archs` (`arch == h100`), then each `feature` statement.
        Encoding.select keeps those that vary on the training rows (an architecture alone, a
        symbol never seen, a field never varied give none)."""
        out = []
        for f in self.fields:
            if f["kind"] == "int":
                out.append(("log2", f["name"]))
            elif f["kind"] == "enum":
                out += [("raw", f"{f['name']} == {s}") for s in f["symbols"]]
        if self.arch_field:
            out += [("raw", f"{self.arch_field} == {self.arch_symbol(a)}") for a in archs]
        return out + list(self.features)

    def knn_features(self, fields):
        """The nearest-neighbour baseline's features: log2(max(v, 1)) of every integer field, every
        enumeration's value raw (the architecture is the group, not a feature)."""
        f = np.asarray(fields, dtype=np.int64)
        cols = [np.log2(np.maximum(f[:, i], 1)) if fd["kind"] == "int" else f[:, i].astype(np.float64)
                for i, fd in enumerate(self.fields) if fd["kind"] != "arch"]
        return np.stack(cols, 1) if cols else np.zeros((len(f), 1))


# ---------------------------------------------------------------------------------------------
# Timing DBs
def _columns(con, table):
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def _open(path, kernel):
    """A read-only connection to a timing DB of `kernel`, its format checked."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"timing DB {path} not found")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" not in tables or "problems" not in tables or "timings" not in tables:
        if "config" in tables:
            raise ValueError(f"{path}: a MIOpen-keyed timing DB (a `config` table): train it with tools/train.py "
                             "--data FOLDER --solver, or convert it with `tunecast import-timings`")
        raise ValueError(f"{path}: not a {FORMAT} timing DB (needs tables meta, problems and timings)")
    meta = dict(con.execute("SELECT key, value FROM meta"))
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: format {meta.get('format')!r}, expected {FORMAT}")
    if meta.get("solver") and meta["solver"] != kernel.name:
        raise ValueError(f"{path}: timings of {meta['solver']}, the definition is {kernel.name}")
    names = [p.strip() for p in meta.get("params", "").split(",") if p.strip()]
    if names and names != kernel.params:
        raise ValueError(f"{path}: parameters {','.join(names)}, the definition has {','.join(kernel.params)}")
    have = set(_columns(con, "problems"))
    for f in kernel.fields:
        if f["name"] not in have and f.get("default") is None:
            raise ValueError(f"{path}: no column for the required field {f['name']}")
    return con, meta


def definition_text(path):
    """The `definition` a timing DB carries in its meta table (None if it has none)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'definition'").fetchone()
    except sqlite3.Error:
        row = None
    con.close()
    return row[0] if row else None


class Recordings:
    """The problems and measurements of one or more timing DBs of one kernel, merged: a problem is
    matched by its canonical text; a row that another file already holds (same problem, params,
    status and time) counts once."""

    def __init__(self, kernel, paths):
        self.kernel, self.paths = kernel, list(paths)
        self.problems = {}      # canonical text -> {"values", "texts", "configs": {params: [(time, status)]}}
        self.measurements = self.failed_rows = 0
        for path in self.paths:
            try:
                self._read(path)
            except sqlite3.Error as e:
                raise ValueError(f"{path}: not a readable {FORMAT} timing DB ({e})")

    def _read(self, path):
        k = self.kernel
        con, _ = _open(path, k)
        have = _columns(con, "problems")
        cols = [f["name"] for f in k.fields if f["name"] in have]
        by_id = {}
        for row in con.execute(f"SELECT id, {', '.join(['problem'] + [f'[{c}]' for c in cols])} FROM problems ORDER BY id"):
            given = dict(zip(cols, row[2:]))
            try:
                values = [k.value(f, given.get(f["name"])) for f in k.fields]
            except ValueError as e:
                raise ValueError(f"{path}: problem {row[1]!r}: {e}")
            texts = [k.spelled(f, given.get(f["name"])) for f in k.fields]
            canonical = ",".join(f"{n}={t}" for n, t in zip(k.field_names, texts))
            p = self.problems.setdefault(canonical, {"values": values, "texts": texts, "configs": {}})
            by_id[row[0]] = p
        P = len(k.params)
        here = {}
        for pid, params, time_us, status in con.execute(
                "SELECT problem, params, time_us, status FROM timings ORDER BY rowid"):
            p = by_id.get(pid)
            if p is None:
                raise ValueError(f"{path}: a timing of problem id {pid}, which the problems table lacks")
            try:
                vec = tuple(int(t) for t in params.split(","))
            except ValueError:
                raise ValueError(f"{path}: params {params!r} are not comma-separated integers")
            if len(vec) != P:
                raise ValueError(f"{path}: params {params!r}: {len(vec)} values, the definition has {P} parameters")
            for name, v, dom in zip(k.params, vec, k.domains):
                if dom and v not in dom:
                    raise ValueError(f"{path}: params {params!r}: {name} = {v} is not in its domain")
            if status == OK and time_us is None:
                raise ValueError(f"{path}: an `ok` row of {params!r} without time_us")
            here.setdefault((id(p), vec), (p, []))[1].append((float(time_us) if status == OK else None, status))
        con.close()
        for (_, vec), (p, ms) in here.items():
            earlier = list(p["configs"].get(vec, []))      # rows of the files read before
            for m in ms:
                if m in earlier:                           # the same row in another file counts once
                    earlier.remove(m)
                    continue
                p["configs"].setdefault(vec, []).append(m)
                self.measurements += 1
                self.failed_rows += m[1] != OK

    def describe(self):
        names = ", ".join(os.path.basename(p) for p in self.paths)
        return (f"timing DB{'s' if len(self.paths) > 1 else ''} {names} ({FORMAT}), {len(self.problems):,} problems, "
                f"{self.measurements:,} measurements ({self.failed_rows:,} failed)")

    def archs(self):
        """The architecture names in the data, in order of first appearance."""
        k = self.kernel
        if not k.arch_field:
            return []
        i = k.field_names.index(k.arch_field)
        return list(dict.fromkeys(p["texts"][i] for p in self.problems.values()))

    def split_text(self, canonical):
        """What the split hashes (data.split_of): the canonical text without the architecture, so
        a problem is in the same split on every architecture (as a perf DB's descriptor)."""
        k = self.kernel
        if not k.arch_field:
            return canonical
        return ",".join(item for item in canonical.split(",") if not item.startswith(k.arch_field + "="))

    def rows(self, split_seed=0, near_optimal=0.0, archs=None):
        """(rows, failure_only): the training rows (module docstring), and the problems whose every
        measured config failed (no target; their failures are still learned as bad)."""
        k = self.kernel
        ai = k.field_names.index(k.arch_field) if k.arch_field else None
        rows, failure_only = [], []
        for canonical, p in self.problems.items():
            arch = p["texts"][ai] if ai is not None else ""
            if archs is not None and arch not in archs:
                continue
            ok, failed = {}, []
            for vec, ms in p["configs"].items():
                if any(s != OK for _, s in ms):
                    failed.append(list(vec))      # a config with any failed row is failed
                else:
                    ok[vec] = statistics.median(t for t, _ in ms)
            base = {"solver": k.name, "arch_name": arch, "group": (arch or "all",), "fields": p["values"],
                    "problem": canonical, "split": data.split_of(self.split_text(canonical), split_seed),
                    "failed": sorted(failed), "measured": len(p["configs"])}
            if not ok:
                failure_only.append(dict(base, params=None, ok=[]))
                continue
            ranked = sorted(ok, key=lambda v: (ok[v], v))
            best = ranked[0]
            rows.append(dict(base, params=list(best), ok=[list(v) for v in sorted(ok)], time_us=ok[best]))
            if near_optimal > 0:
                for vec in ranked[1:]:
                    if ok[vec] > ok[best] * (1 + near_optimal):
                        break
                    rows.append(dict(base, params=list(vec), time_us=ok[vec], near_optimal=True))
        return rows, failure_only

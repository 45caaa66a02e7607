"""Perf-DB extraction, the deterministic problem split, and per-position vocabularies.

A row is one tuned problem: the problem fields named as in runtime/include/tunecast/problem.h
(integers, enumerations as their problem.h values), plus solver, arch, split and the tuned
parameter vector.
"""
import csv
import glob
import hashlib
import os
import sqlite3

import numpy as np

from . import files

# problem.h field order; these are also the integer expression symbols of the rules language.
FIELDS = ["dir", "dtype", "layout", "n", "c", "k", "h", "w", "d", "y", "x", "z",
          "pad_h", "pad_w", "pad_d", "stride_h", "stride_w", "stride_d",
          "dil_h", "dil_w", "dil_d", "g", "bias", "spatial_dim", "arch"]

# problem.h symbolic values.
DIRECTIONS = {"F": 0, "B": 1, "W": 2}
DTYPES = {"FP32": 0, "FP16": 1, "BF16": 2, "INT8": 3}
LAYOUTS = {"NCHW": 0, "NHWC": 1, "NCDHW": 2, "NDHWC": 3}
ARCHS = {"gfx900": 0, "gfx906": 1, "gfx908": 2, "gfx90a": 3, "gfx942": 4, "gfx1030": 5}


def arch_code(name):
    """problem.h arch_code: the integer of any architecture name (the six of ARCHS keep theirs;
    ":feature" suffixes dropped, each a name and + or -). None for what is no architecture name."""
    name, *features = name.strip().split(":")
    if any(len(f) < 2 or f[-1] not in "+-" or not all(c.isascii() and (c.isalnum() or c == "_") for c in f[:-1])
           for f in features):
        return None
    name = name.strip().lower()
    if not name or len(name) > 24:
        return None
    if name in ARCHS:
        return ARCHS[name]
    flags = 0
    if len(name) > 3 and name.startswith("gfx"):
        flags, name = flags | 1, name[3:]
    if len(name) > 8 and name.endswith("-generic"):
        flags, name = flags | 2, name[:-8]
    digits = "0123456789abcdefghijklmnopqrstuvwxyz-"
    if len(name) > 11 or any(c not in digits for c in name):
        return None
    packed = 0
    for i in range(11):
        packed = packed * 38 + (digits.index(name[i]) + 1 if i < len(name) else 0)
    return 64 + flags * 38 ** 11 + packed


SYMBOLS = {**DIRECTIONS, **DTYPES, **LAYOUTS, **ARCHS}
# GPUs of the timing DBs that tools/gpu_timing records (timings/, decompressed as <gpu>_<SMs>.db):
# not MIOpen archs, so their rows leave the problem's arch field unset (0) and a model trained on
# one of them does not read it.
DEVICE_ARCHS = ("h100",)
PRECISION_OF = {v: k for k, v in DTYPES.items()}  # a row's dtype value -> "FP32", "FP16", ...

# perf DB config column -> problem field. Order is the config table's (minus id); the split hash
# walks it in this order.
CONFIG_COLUMNS = [
    ("layout", "layout"), ("data_type", "dtype"), ("direction", "dir"), ("spatial_dim", "spatial_dim"),
    ("in_channels", "c"), ("in_h", "h"), ("in_w", "w"), ("in_d", "d"),
    ("fil_h", "y"), ("fil_w", "x"), ("fil_d", "z"), ("out_channels", "k"), ("batchsize", "n"),
    ("pad_h", "pad_h"), ("pad_w", "pad_w"), ("pad_d", "pad_d"),
    ("conv_stride_h", "stride_h"), ("conv_stride_w", "stride_w"), ("conv_stride_d", "stride_d"),
    ("dilation_h", "dil_h"), ("dilation_w", "dil_w"), ("dilation_d", "dil_d"),
    ("bias", "bias"), ("group_count", "g"),
]

SOLVER_PARAMS = {
    "ConvAsm1x1U": ["read_size", "k_mult", "chunks_per_wave", "chunk_size", "n_mult", "c_mult",
                    "waves_c_in_group", "waves_k_in_group"],
    "ConvOclDirectFwd1x1": ["grp_tile1", "grp_tile0", "in_tile1", "in_tile0", "out_pix_tile1",
                            "out_pix_tile0", "n_out_pix_tiles", "n_in_data_tiles", "n_stacks"],
    "ConvAsmBwdWrW1x1": ["chunk_size", "c_per_gpr", "c_mult", "k_per_gpr", "k_mult", "n_per_gpr",
                         "n_part_cnt", "read_size", "short_store", "data_prefetch"],
    "ConvAsmBwdWrW3x3": ["limit_wave_cnt", "reverse_inout", "chunk_size", "k_per_wave",
                         "pipe_lines_depth", "n_per_group"],
    # tools/gpu_timing's Triton GEMM for 1x1 convolutions (timings/README.md)
    "TritonGemm1x1": ["block_m", "block_n", "block_k", "group_m", "num_warps", "num_stages"],
}

# Like the C++ tests: $TUNECAST_DATA_DIR, else the checkout's sibling ../shared/data.
DEFAULT_PERFDB_DIR = os.path.normpath(os.path.join(
    os.environ.get("TUNECAST_DATA_DIR")
    or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "data"),
    "miopen", "perfdb"))
SPLITS = ("train", "val", "test")
# train.py --fit-on: the splits a run learns from.
FIT_SPLITS = {"train": ("train",), "train+val": ("train", "val"), "all": ("train", "val", "test")}


def descriptor_text(config_row):
    """Canonical text of a problem descriptor: every config column but id, in table order, with the
    DB's own spelling ('layout=NCHW;data_type=FP32;...'). Independent of arch and row order."""
    return ";".join(f"{col}={config_row[col]}" for col, _ in CONFIG_COLUMNS)


def split_of(descriptor, seed=0):
    """80/10/10 split from sha256('<seed>:<descriptor>'): first 8 bytes big-endian, mod 1000:
    < 800 train, < 900 val, else test."""
    digest = hashlib.sha256(f"{seed}:{descriptor}".encode()).digest()
    bucket = int.from_bytes(digest[:8], "big") % 1000
    return "train" if bucket < 800 else "val" if bucket < 900 else "test"


def perfdb_path(perfdb_dir, arch):
    # MIOpen names them <arch>_<CUs>.db, and gfx942's without the underscore (gfx942130.db).
    paths = sorted(glob.glob(os.path.join(perfdb_dir, f"{arch}_*.db")) +
                   glob.glob(os.path.join(perfdb_dir, f"{arch}[0-9]*.db")))
    if not paths:
        raise FileNotFoundError(f"no perf DB for {arch} in {perfdb_dir} (expected {arch}_<CUs>.db)")
    return paths[0]


def extract(perfdb_dir, solvers, archs, precisions, split_seed=0, near_optimal=0.0):
    """Rows (dicts) for every (solver, arch, precision) asked, straight from the SQLite perf DBs.
    With `near_optimal` > 0 and a timing DB (timings/: a `timings` table beside perf_db), each
    training problem also gives one row per other config within that fraction of its fastest time
    (`near_optimal` rows): the model learns what runs well, not only the one fastest vector."""
    rows = []
    for arch in archs:
        con = sqlite3.connect(f"file:{perfdb_path(perfdb_dir, arch)}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        q = ("SELECT c.*, p.solver AS solver, p.params AS params FROM perf_db p JOIN config c "
             "ON p.config = c.id WHERE p.solver IN (%s) AND c.data_type IN (%s) ORDER BY c.id, p.solver"
             % (",".join("?" * len(solvers)), ",".join("?" * len(precisions))))
        for r in con.execute(q, list(solvers) + list(precisions)):
            row = {"solver": r["solver"], "arch_name": arch, "config_id": r["id"]}
            for col, field in CONFIG_COLUMNS:
                v = r[col]
                row[field] = SYMBOLS[v] if field in ("dir", "dtype", "layout") else int(v)
            row["arch"] = ARCHS.get(arch, 0)  # DEVICE_ARCHS: unset
            row["split"] = split_of(descriptor_text(r), split_seed)
            row["params"] = [int(t) for t in r["params"].split(",")]
            rows.append(row)
            if near_optimal > 0 and row["split"] == "train" and _has_timings(con):
                for params in _near_optimal(con, r["id"], r["params"], near_optimal):
                    rows.append({**row, "params": [int(t) for t in params.split(",")], "near_optimal": True})
        con.close()
    return rows


def _has_timings(con):
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'timings'").fetchone() is not None


def _near_optimal(con, config_id, best, fraction):
    """Configs of one problem (other than `best`) that ran within `fraction` of its fastest time."""
    fastest = con.execute("SELECT MIN(time_us) FROM timings WHERE config = ? AND status = 'ok'",
                          (config_id,)).fetchone()[0]
    if fastest is None:
        return []
    return [p for (p,) in con.execute(
        "SELECT params FROM timings WHERE config = ? AND status = 'ok' AND time_us <= ? "
        "ORDER BY time_us, params", (config_id, fastest * (1 + fraction))) if p != best]


CSV_COLUMNS = ["solver", "arch_name", "config_id", "split"] + FIELDS + ["params"]


def write_csv(rows, path):
    """Whole or not at all: an interrupted run leaves the previous file, not half of one."""
    with files.replacing(path) as partial, open(partial, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            w.writerow([r[c] if c != "params" else ",".join(map(str, r[c])) for c in CSV_COLUMNS])


def read_csv(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            row = {c: r[c] for c in ("solver", "arch_name", "split")}
            row["config_id"] = int(r["config_id"])
            for fld in FIELDS:
                row[fld] = int(r[fld])
            row["params"] = [int(t) for t in r["params"].split(",")]
            rows.append(row)
    return rows


def load(data, solvers, archs, precisions, split_seed=0, near_optimal=0.0):
    """Rows from an extracted CSV (a file, or a folder holding <solver>.csv) or from a perf DB folder."""
    if os.path.isdir(data) and glob.glob(os.path.join(data, "*.db")):
        return extract(data, solvers, archs, precisions, split_seed, near_optimal)
    if near_optimal > 0:
        raise ValueError("--near-optimal needs a timing DB folder (timings/), not CSV data")
    paths = [data] if os.path.isfile(data) else [os.path.join(data, f"{s}.csv") for s in solvers]
    rows = []
    for p in paths:
        if not os.path.isfile(p):
            raise FileNotFoundError(f"no {p}: --data takes a perf DB folder, a folder of <solver>.csv "
                                    "(tools/dataset.py) or one such CSV")
        rows += [r for r in read_csv(p) if r["solver"] in solvers and r["arch_name"] in archs
                 and PRECISION_OF[r["dtype"]] in precisions]
    if split_seed != 0:  # CSVs hold the seed-0 split; recompute from the fields for other seeds
        raise ValueError("CSV data holds the split of seed 0; extract again with --split-seed")
    return rows


def groups(rows):
    """{(arch, precision): rows of that group}, sorted by arch and precision."""
    out = {}
    for r in rows:
        out.setdefault((r["arch_name"], PRECISION_OF[r["dtype"]]), []).append(r)
    return dict(sorted(out.items()))


def fields_matrix(rows):
    """[N, len(FIELDS)] int64 matrix of problem fields."""
    return np.array([[r[f] for f in FIELDS] for r in rows], dtype=np.int64)


def in_decode_order(params, decode_order):
    """A solver-ordered vector (or list of names) in decode order: element s is params[decode_order[s]]."""
    return list(params) if not decode_order else [params[q] for q in decode_order]


class Vocabulary:
    """Position-segmented vocabulary: token 0 is the end token (value -1); then every position's
    distinct values, sorted, each with its own token even where two positions share a value.

    Positions are decode steps. decode_order (None: the solver's own order) says which solver
    position each step emits (train.py --param-order); the export lists the parameters in the
    solver's order with that decode_order, as the artifact does (schemas/tunecast_model.fbs)."""

    def __init__(self, param_names, position_values, decode_order=None):
        self.decode_order = list(decode_order) if decode_order else None
        self.param_names = list(param_names)
        self.position_values = [sorted(set(v)) for v in position_values]
        self.token_values = [-1]
        self.position_tokens = []
        self.lookup = []
        for values in self.position_values:
            toks = list(range(len(self.token_values), len(self.token_values) + len(values)))
            self.token_values += values
            self.position_tokens.append(toks)
            self.lookup.append(dict(zip(values, toks)))

    @classmethod
    def from_rows(cls, param_names, rows, decode_order=None):
        """param_names and rows' params in decode order (already permuted by decode_order)."""
        cols = list(zip(*[r["params"] for r in rows]))
        return cls(param_names, cols, decode_order)

    @property
    def size(self):
        return len(self.token_values)

    @property
    def positions(self):
        return len(self.param_names)

    def encode(self, params):
        """Token list for a parameter vector; -1 for a value never seen in training."""
        return [self.lookup[p].get(v, -1) for p, v in enumerate(params)]

    def decode(self, tokens):
        return [self.token_values[t] for t in tokens]

    def to_json(self):
        params = [{"name": n, "tokens": t} for n, t in zip(self.param_names, self.position_tokens)]
        j = {"token_values": self.token_values, "end_tokens": [0], "parameters": params,
             "end_policy": "EndTokenAfterLast"}
        if self.decode_order:  # parameters in the solver's order, step s emits decode_order[s]
            j["parameters"] = [params[self.decode_order.index(q)] for q in range(len(params))]
            j["decode_order"] = self.decode_order
        return j

    @classmethod
    def from_json(cls, j):
        params, order = j["parameters"], j.get("decode_order") or None  # [] = the solver's order
        if order is not None:
            params = [params[q] for q in order]
        names = [p["name"] for p in params]
        values = [[j["token_values"][t] for t in p["tokens"]] for p in params]
        return cls(names, values, order)

    def to_decode_order(self, params):
        """A solver-ordered parameter vector in this vocabulary's decode order."""
        return in_decode_order(params, self.decode_order)

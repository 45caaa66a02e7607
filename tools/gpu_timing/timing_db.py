#!/usr/bin/env python3
"""Writer, reader and merger of the generic timing DB (docs/kernels.md, "Timing DB (recordings)").

SQLite, format `tunecast-timings/2`:
  meta      (key TEXT PRIMARY KEY, value TEXT): format, solver, params (names in position order),
            fields (problem field names in definition order), time_unit (us), definition (the
            .tcr text), provenance keys;
  problems  (id INTEGER PRIMARY KEY, problem TEXT NOT NULL UNIQUE, one column per field: INTEGER
            for integer fields, TEXT for symbols and the architecture): problem = canonical text,
            every field in definition order, `m=4096,n=4096,k=1024,dtype=FP16,arch=h100`;
  timings   (problem INTEGER NOT NULL REFERENCES problems(id), params TEXT NOT NULL, time_us REAL,
            status TEXT NOT NULL), index timings_problem: one row per measurement;
  perf_db   (id INTEGER PRIMARY KEY, solver TEXT, problem INTEGER UNIQUE, params TEXT): the fastest
            ok config of each problem.
A harness may add its own tables keyed by problem id (EXTRA_TABLES below: timing_detail, pairs,
kernels); merge() carries them over, renumbering problem ids.

As a command: merge timing DBs (.db, .db.gz, .db.xz) into one, optionally only the problems of a
shape-index range (pairs.shape_idx), written atomically (.xz: xz -9):
    python3 tools/gpu_timing/timing_db.py A.db.gz B.db.gz -o out/timing/splitk.db
    python3 tools/gpu_timing/timing_db.py out/timing/splitk.db --shapes-range 0:200 -o part.db.xz
Runs on the CPU (Python's sqlite3 only).
"""
import argparse
import gzip
import lzma
import os
import shutil
import sqlite3
import sys
import tempfile

FORMAT = "tunecast-timings/2"

BASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS timings (problem INTEGER NOT NULL REFERENCES problems(id), params TEXT NOT NULL,
    time_us REAL, status TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS timings_problem ON timings(problem);
CREATE TABLE IF NOT EXISTS perf_db (id INTEGER PRIMARY KEY, solver TEXT, problem INTEGER UNIQUE, params TEXT);
"""

# Harness tables (optional): per-measurement detail, per-problem run record, per-compiled-kernel facts.
EXTRA_TABLES = {
    "timing_detail": "CREATE TABLE IF NOT EXISTS timing_detail (problem INTEGER NOT NULL, params TEXT NOT NULL, "
                     "rel_err REAL, spread_permille INTEGER, launches INTEGER, repeats INTEGER, t_check_us REAL, "
                     "PRIMARY KEY (problem, params))",
    "pairs": "CREATE TABLE IF NOT EXISTS pairs (problem INTEGER PRIMARY KEY, shape_idx INTEGER, seconds REAL, "
             "n_ok INTEGER, best_us REAL, best_params TEXT, graph_fallbacks INTEGER)",
    "kernels": "CREATE TABLE IF NOT EXISTS kernels (dtype TEXT, n_class TEXT, k_class TEXT, params TEXT, status TEXT, "
               "shared INTEGER, n_regs INTEGER, n_spills INTEGER, compile_s REAL, msg TEXT, "
               "PRIMARY KEY (dtype, n_class, k_class, params))",
}


def schema(fields):
    """fields: [(name, 'INTEGER' | 'TEXT')] in definition order."""
    cols = "".join(f", {name} {typ}" for name, typ in fields)
    return (BASE_SCHEMA + f"CREATE TABLE IF NOT EXISTS problems (id INTEGER PRIMARY KEY, problem TEXT NOT NULL UNIQUE{cols});\n"
            + ";\n".join(EXTRA_TABLES.values()) + ";\n")


def canonical(fields, values):
    return ",".join(f"{name}={values[name]}" for name, _ in fields)


def base_meta(solver, params, fields, definition=None):
    m = {"format": FORMAT, "solver": solver, "params": ",".join(params),
         "fields": ",".join(name for name, _ in fields), "time_unit": "us"}
    if definition is not None:
        m["definition"] = definition
    return m


def add_problem(con, fields, values, pid=None):
    """Inserts (or finds) a problem; returns its id."""
    text = canonical(fields, values)
    row = con.execute("SELECT id FROM problems WHERE problem = ?", (text,)).fetchone()
    if row:
        return row[0]
    names = [name for name, _ in fields]
    cur = con.execute(f"INSERT INTO problems (id, problem, {', '.join(names)}) VALUES (?, ?{', ?' * len(names)})",
                      (pid, text, *[values[n] for n in names]))
    return cur.lastrowid


def fill_perf_db(con, solver):
    con.execute("DELETE FROM perf_db")
    con.execute("INSERT INTO perf_db (solver, problem, params) "
                "SELECT ?, problem, params FROM (SELECT problem, params, MIN(time_us) FROM timings "
                "WHERE status = 'ok' GROUP BY problem) ORDER BY problem", (solver,))


# ----------------------------------------------------------------------------------------------
# Reading (compressed) files and merging
# ----------------------------------------------------------------------------------------------

def open_db(path):
    """(connection, tmpdir or None): .gz and .xz are decompressed into a temporary folder."""
    if path.endswith(".gz") or path.endswith(".xz"):
        tmpdir = tempfile.mkdtemp(prefix="timing_db_")
        plain = os.path.join(tmpdir, "in.db")
        opener = gzip.open if path.endswith(".gz") else lzma.open
        with opener(path, "rb") as fi, open(plain, "wb") as fo:
            shutil.copyfileobj(fi, fo, 1 << 20)
        return sqlite3.connect(plain), tmpdir
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True), None


def close_db(con, tmpdir):
    con.close()
    if tmpdir:
        shutil.rmtree(tmpdir, ignore_errors=True)


def table_exists(con, name):
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def field_types(con):
    """[(name, type)] of the problems table's field columns, in order."""
    cols = con.execute("PRAGMA table_info(problems)").fetchall()
    return [(c[1], c[2]) for c in cols if c[1] not in ("id", "problem")]


def publish(plain, out, prefix):
    """Moves the SQLite file `plain` to `out` atomically, xz -9 or gzip compressed when out's name
    says so (a temporary file named by `prefix` beside out, renamed when whole)."""
    folder = os.path.dirname(os.path.abspath(out)) or "."
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=folder)
    os.close(fd)
    try:
        if out.endswith(".xz"):
            with open(plain, "rb") as fi, lzma.open(tmp, "wb", preset=9 | lzma.PRESET_EXTREME) as fo:
                shutil.copyfileobj(fi, fo, 1 << 20)
        elif out.endswith(".gz"):
            with open(plain, "rb") as fi, gzip.open(tmp, "wb", compresslevel=9) as fo:
                shutil.copyfileobj(fi, fo, 1 << 20)
        else:
            shutil.copyfile(plain, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_atomic(build, out):
    """build(con) fills a fresh SQLite file; it is moved (or xz -9 / gzip compressed) to out."""
    folder = os.path.dirname(os.path.abspath(out)) or "."
    os.makedirs(folder, exist_ok=True)
    tmpdir = tempfile.mkdtemp(prefix="timing_db_out_")
    try:
        plain = os.path.join(tmpdir, "out.db")
        con = sqlite3.connect(plain)
        build(con)
        con.commit()
        con.execute("VACUUM")
        con.close()
        publish(plain, out, ".timing_db.")
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def merge(inputs, out, shapes_range=None, meta_extra=None, order_key=None):
    """Merges timing DBs into out. Problems are matched by canonical text and renumbered 1.. in
    order_key(shape_idx, problem text, field values) order (default: shape index, then text);
    a timings row already present (same problem, params, status, time) is not added again;
    extra tables are carried over. shapes_range (lo, hi): only problems with lo <= shape_idx < hi.
    meta: the keys of the inputs (a key whose values differ keeps them all, ' | '-separated),
    then meta_extra."""
    problems = {}   # text -> dict(values, shape_idx, rows set, rows list, detail {params: row}, pair row)
    kernels = {}
    meta = {}
    fields = None
    for path in inputs:
        con, tmpdir = open_db(path)
        try:
            f = field_types(con)
            if fields is None:
                fields = f
            elif [n for n, _ in f] != [n for n, _ in fields]:
                raise SystemExit(f"{path}: fields {f} differ from {fields}")
            for k, v in con.execute("SELECT key, value FROM meta"):
                if k not in meta:
                    meta[k] = v
                    continue
                have = meta[k].split(" | ")
                for item in v.split(" | "):
                    if item not in have:
                        have.append(item)
                meta[k] = " | ".join(have)
            names = [n for n, _ in fields]
            idmap = {}
            has_pairs = table_exists(con, "pairs")
            for row in con.execute(f"SELECT id, problem, {', '.join(names)} FROM problems"):
                pid, text, vals = row[0], row[1], dict(zip(names, row[2:]))
                pair = con.execute("SELECT shape_idx, seconds, n_ok, best_us, best_params, graph_fallbacks FROM pairs "
                                   "WHERE problem = ?", (pid,)).fetchone() if has_pairs else None
                shape_idx = pair[0] if pair else None
                if shapes_range and (shape_idx is None or not (shapes_range[0] <= shape_idx < shapes_range[1])):
                    continue
                p = problems.setdefault(text, {"values": vals, "shape_idx": shape_idx, "seen": set(), "rows": [],
                                               "detail": {}, "pair": None, "pid": pid})
                if pair:
                    p["pair"] = pair
                    p["shape_idx"] = shape_idx
                idmap[pid] = p
            for pid, params, t, st in con.execute("SELECT problem, params, time_us, status FROM timings"):
                p = idmap.get(pid)
                if p is None:
                    continue
                if (params, st, t) not in p["seen"]:
                    p["seen"].add((params, st, t))
                    p["rows"].append((params, t, st))
            if table_exists(con, "timing_detail"):
                for row in con.execute("SELECT problem, params, rel_err, spread_permille, launches, repeats, t_check_us "
                                       "FROM timing_detail"):
                    p = idmap.get(row[0])
                    if p is not None:
                        p["detail"][row[1]] = row[2:]
            if table_exists(con, "kernels"):
                for row in con.execute("SELECT dtype, n_class, k_class, params, status, shared, n_regs, n_spills, "
                                       "compile_s, msg FROM kernels"):
                    kernels.setdefault(row[:4], row)
        finally:
            close_db(con, tmpdir)
    if fields is None:
        raise SystemExit("no input")
    if order_key is None:
        def order_key(p, text):  # shape index, then the id the harness gave it (its precision order)
            return (p["shape_idx"] if p["shape_idx"] is not None else 1 << 60, p["pid"], text)
    ordered = sorted(problems.items(), key=lambda kv: order_key(kv[1], kv[0]))
    for k in ("pairs_left", "pairs_done", "stopped", "finished", "timing_seconds", "fatal", "fatal_pair"):
        meta.pop(k, None)  # per-call bookkeeping: described by the merged file's coverage instead
    meta.update(meta_extra or {})
    meta["problems"] = str(len(ordered))
    meta["timings_rows"] = str(sum(len(p["rows"]) for _, p in ordered))

    def build(out_con):
        out_con.executescript(schema(fields))
        out_con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        for new_id, (text, p) in enumerate(ordered, 1):
            add_problem(out_con, fields, p["values"], pid=new_id)
            out_con.executemany("INSERT INTO timings VALUES (?, ?, ?, ?)",
                                [(new_id, params, t, st) for params, t, st in p["rows"]])
            out_con.executemany("INSERT INTO timing_detail VALUES (?, ?, ?, ?, ?, ?, ?)",
                                [(new_id, params, *d) for params, d in p["detail"].items()])
            if p["pair"]:
                out_con.execute("INSERT INTO pairs VALUES (?, ?, ?, ?, ?, ?, ?)", (new_id, *p["pair"]))
        out_con.executemany("INSERT INTO kernels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            [kernels[k] for k in sorted(kernels)])
        fill_perf_db(out_con, meta.get("solver"))
    write_atomic(build, out)
    return len(ordered), int(meta["timings_rows"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="timing DBs (.db, .db.gz, .db.xz)")
    ap.add_argument("-o", "--output", required=True, help="merged output (.db, .db.gz, .db.xz)")
    ap.add_argument("--shapes-range", help="LO:HI: only problems of shape indices LO..HI-1")
    ap.add_argument("--meta", action="append", default=[], help="KEY=VALUE added to meta (repeatable)")
    ap.add_argument("--definition", help="a .tcr file: its text becomes meta `definition`")
    args = ap.parse_args(argv)
    for p in args.inputs:
        if not os.path.exists(p):
            ap.error(f"{p}: no such file")
    rng = None
    if args.shapes_range:
        lo, hi = args.shapes_range.split(":")
        rng = (int(lo), int(hi))
    extra = dict(kv.split("=", 1) for kv in args.meta)
    if args.definition:
        with open(args.definition) as f:
            extra["definition"] = f.read()
    n, rows = merge(args.inputs, args.output, rng, extra)
    print(f"timing_db.py: {n} problems, {rows} timings rows -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

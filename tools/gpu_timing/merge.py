#!/usr/bin/env python3
"""Merge the exhaustive harness's part files into one perf-DB-like SQLite file, and summarize it.

Inputs: part files written by triton_gemm1x1.py (SQLite, optionally .gz), and merged files that
this script wrote before (.db or .db.xz; their problems are mapped back to shape indices through
--shapes), so that a new run's parts extend the shipped timings without the old parts. Problems
are numbered by (shape index, precision): a shipped problem keeps its config id when the shapes
file only grows at its end. Output (written atomically; .xz compresses with xz -9): the layout of
a MIOpen perf DB plus the measurements:
  config    MIOpen's columns, one row per (shape, precision): layout NHWC, data_type FP16/FP32,
            direction F, spatial_dim 2, in_channels = c, out_channels = k, in_h = h, in_w = w,
            batchsize = n, 1x1 filter, pad 0, stride 1, dilation 1, bias 0, group_count 1; the
            depth fields as MIOpen writes them for 2-D problems (in_d 1, fil_d 1, pad_d 0,
            conv_stride_d 0, dilation_d 0: what every 2-D row of MIOpen's DBs holds, and what
            tunecast's problem parser defaults to, so keys match);
  perf_db   (id, solver 'TritonGemm1x1', config, params): the fastest valid config, its values
            comma-separated in parameter order (block_m,block_n,block_k,group_m,num_warps,num_stages);
  timings   (config, params, time_us, status): every config of every problem; status 'ok' with
            time_us = median per-launch microseconds, or 'compile_fail', 'out_of_resources',
            'wrong_result', 'launch_fail' with time_us NULL;
  timing_detail (config, params, rel_err, spread_permille, launches, repeats): the check's
            max|Y-ref|/max|ref| (2 significant digits), the spread (max - min) / median of the timed
            replays in 1/1000, the CUDA graph's launches and the timed replays;
  kernels   per (dtype, N class, K class, params): Triton's compile status, shared memory bytes,
            registers, spills, compile seconds;
  meta      (key, value): device, versions, timing method, space, shape rule, coverage.
With --stats, prints the summary statistics of timings/README.md (markdown) to stdout.
Runs on the CPU.
"""
import argparse
import gzip
import lzma
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import timing_db  # noqa: E402
from shapes import problem_row, read_shapes  # noqa: E402
from triton_gemm1x1 import DTYPES, PARAMS, SHORT_BATCH, SOLVER, STATUSES, config_space, params_text  # noqa: E402

OFFSET_KEY = "short_launch_offset_us"

CONFIG_DDL = """
CREATE TABLE `config` (`id` INTEGER PRIMARY KEY ASC,`layout` TEXT NOT NULL,`data_type` TEXT NOT NULL,
`direction` TEXT NOT NULL,`spatial_dim` INT NOT NULL,`in_channels` INT NOT NULL,`in_h` INT NOT NULL,
`in_w` INT NOT NULL,`in_d` INT NOT NULL,`fil_h` INT NOT NULL,`fil_w` INT NOT NULL,`fil_d` INT NOT NULL,
`out_channels` INT NOT NULL, `batchsize` INT NOT NULL,`pad_h` INT NOT NULL,`pad_w` INT NOT NULL,
`pad_d` INT NOT NULL,`conv_stride_h` INT NOT NULL,`conv_stride_w` INT NOT NULL,`conv_stride_d` INT NOT NULL,
`dilation_h` INT NOT NULL,`dilation_w` INT NOT NULL,`dilation_d` INT NOT NULL,`bias` INT NOT NULL,
`group_count` INT NOT NULL);
CREATE TABLE `perf_db` (`id` INTEGER PRIMARY KEY ASC,`solver` TEXT NOT NULL,`config` INTEGER NOT NULL,
`params` TEXT NOT NULL);
CREATE UNIQUE INDEX `idx_config` ON config( layout,data_type,direction,spatial_dim,in_channels,in_h,in_w,in_d,
fil_h,fil_w,fil_d,out_channels,batchsize,pad_h,pad_w,pad_d,conv_stride_h,conv_stride_w,conv_stride_d,dilation_h,
dilation_w,dilation_d,bias,group_count );
CREATE UNIQUE INDEX `idx_perf_db` ON perf_db(solver, config);
CREATE TABLE timings (config INTEGER NOT NULL, params TEXT NOT NULL, time_us REAL, status TEXT NOT NULL);
CREATE INDEX idx_timings ON timings(config);
CREATE TABLE timing_detail (config INTEGER NOT NULL, params TEXT NOT NULL, rel_err REAL, spread_permille INTEGER,
launches INTEGER, repeats INTEGER);
CREATE TABLE kernels (dtype TEXT, n_class TEXT, k_class TEXT, params TEXT, status TEXT, shared INTEGER,
n_regs INTEGER, n_spills INTEGER, compile_s REAL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
"""

DEFAULT_SHAPES = os.path.join(HERE, "shapes.csv")


def shape_rule(n_shapes):
    return ("shapes.py: distinct (n, c, k, h, w) of forward 2-D 1x1 convolutions with stride 1, pad 0, "
            "dilation 1, group 1 (any layout and data type) in ../shared/data/miopen/perfdb/*.db; kept those "
            "with M*N*K <= 2^29 (M = n*h*w, N = k, K = c); ordered by sha256('n,c,k,h,w'); the first "
            f"{n_shapes} in tools/gpu_timing/shapes.csv (which of their pairs were timed: meta timed_pairs)")


def compact_rel_err(rel):
    """The check's relative error to 2 significant digits (the tolerance is 1e-2; more digits are
    noise and cost megabytes compressed)."""
    return None if rel is None else float(f"{rel:.2g}")


def spread_permille(t, t_min, t_max):
    """(max - min) / median of the timed replays, in 1/1000 (rounded): the measurement's noise."""
    if t is None or t_min is None or t_max is None or t <= 0:
        return None
    return int(round(1000.0 * (t_max - t_min) / t))


class Source:
    """One input: a part file of triton_gemm1x1.py, or a merged file (this script's output, the
    current layout or the first one with t_check_us, t_min_us, t_max_us). Gives its meta, kernels,
    problems and each problem's rows as (cfg index, status, time_us, rel_err, spread_permille,
    launches, repeats)."""

    def __init__(self, path, tmpdir, shape_index):
        self.name = os.path.basename(path)
        self.shape_index = shape_index
        for ext, opener in ((".gz", gzip.open), (".xz", lzma.open)):
            if path.endswith(ext):
                plain = os.path.join(tmpdir, f"{len(os.listdir(tmpdir))}_{self.name[:-len(ext)]}")
                with opener(path, "rb") as fi, open(plain, "wb") as fo:
                    shutil.copyfileobj(fi, fo, 1 << 20)
                path = plain
        self.con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as e:
            raise SystemExit(f"merge.py: {self.name}: not an SQLite file ({e})")
        self.texts = {params_text(c): i for i, c in enumerate(config_space())}
        if {"config", "timings", "timing_detail", "kernels", "meta"} <= tables:
            self.kind = "merged"
            self._read_merged()
        elif {"meta", "kernels", "pairs", "results"} <= tables:
            self.kind = "part"
        else:
            raise SystemExit(f"merge.py: {self.name} is neither a triton_gemm1x1.py part file nor a merged file "
                             f"(tables {sorted(tables)})")

    def _read_merged(self):
        cols = [r[1] for r in self.con.execute("PRAGMA table_info(timing_detail)")]
        spread = "spread_permille" if "spread_permille" in cols else "NULL"
        tmin, tmax = ("t_min_us", "t_max_us") if "t_min_us" in cols else ("NULL", "NULL")
        self.detail = {}
        for cid, p, rel, sp, t_min, t_max, b, r in self.con.execute(
                f"SELECT config, params, rel_err, {spread}, {tmin}, {tmax}, launches, repeats FROM timing_detail"):
            self.detail[(cid, p)] = (rel, sp, t_min, t_max, b, r)
        self.config_of = {}
        self.problems = []
        for cid, dtype, n, c, k, h, w in self.con.execute(
                "SELECT id, data_type, batchsize, in_channels, out_channels, in_h, in_w FROM config ORDER BY id"):
            idx = self.shape_index.get((n, c, k, h, w))
            if idx is None:
                raise SystemExit(f"merge.py: {self.name}: problem {cid} (n={n} c={c} k={k} h={h} w={w}) is not in "
                                 "the shapes file (--shapes)")
            self.config_of[(idx, dtype)] = cid
            self.problems.append((idx, dtype, (n, c, k, h, w)))

    def meta(self):
        return self.con.execute("SELECT key, value FROM meta").fetchall()

    def kernels(self):
        return self.con.execute("SELECT dtype, n_class, k_class, params, status, shared, n_regs, n_spills, "
                                "compile_s FROM kernels").fetchall()

    def pairs(self):
        if self.kind == "merged":
            return self.problems
        return [(r[0], r[6], tuple(r[1:6])) for r in self.con.execute(
            "SELECT shape_idx, n, c, k, h, w, dtype FROM pairs")]

    def rows(self, idx, dtype):
        out = []
        if self.kind == "part":
            for cfg, st, t_ns, ppb, tmin, tmax, b, r in self.con.execute(
                    "SELECT cfg, status, time_ns, rel_err_ppb, t_min_ns, t_max_ns, batch, repeats FROM results "
                    "WHERE shape_idx = ? AND dtype = ? ORDER BY cfg", (idx, dtype)):
                t = t_ns / 1000.0 if st == "ok" and t_ns is not None else None
                out.append((cfg, st, t, compact_rel_err(None if ppb is None else ppb / 1e9),
                            spread_permille(t, None if tmin is None else tmin / 1000.0,
                                            None if tmax is None else tmax / 1000.0), b or None, r or None))
            return out
        cid = self.config_of[(idx, dtype)]
        for p, st, t in self.con.execute("SELECT params, status, time_us FROM timings WHERE config = ?", (cid,)):
            rel, sp, t_min, t_max, b, r = self.detail[(cid, p)]
            if sp is None:
                sp = spread_permille(t, t_min, t_max)
            out.append((self.texts[p], st, t, compact_rel_err(rel), sp, b, r))
        return sorted(out)


def short_offset_of(sources, asked):
    """The microseconds taken off every short measurement (a graph of SHORT_BATCH launches) of the
    part files: --short-offset-us, else the offset the merged inputs already carry, else 0. Merged
    inputs keep their rows as they are, so all of them must carry the offset used for the parts."""
    carried = {}
    for src in sources:
        if src.kind == "merged":
            carried[src.name] = float(dict(src.meta()).get(OFFSET_KEY, "0"))
    offset = asked if asked is not None else next(iter(carried.values()), 0.0)
    wrong = {name: v for name, v in carried.items() if v != offset}
    if wrong:
        raise SystemExit(f"merge.py: merged inputs carry another short-measurement offset than {offset:g} us: "
                         + ", ".join(f"{n} ({v:g} us)" for n, v in sorted(wrong.items())))
    return offset


def merge(parts, out_path, extra_meta, shapes_path=DEFAULT_SHAPES, shape_range=None, short_offset_us=None):
    space = config_space()
    texts = [params_text(c) for c in space]
    tmpdir = tempfile.mkdtemp(prefix="merge_gemm1x1_")
    try:
        shapes = read_shapes(shapes_path)
        shape_index = {s: i for i, s in enumerate(shapes)}
        sources = [Source(p, tmpdir, shape_index) for p in parts]
        offset = short_offset_of(sources, short_offset_us)
        meta = {}
        left = set()
        for src in sources:
            for k, v in src.meta():
                if k == "pairs_left":
                    left.update(v.replace("|", " ").split())
                elif k not in meta:
                    meta[k] = v
                elif k in ("pairs_done", "stopped", "finished", "timing_seconds", "started", "shapes_range"):
                    meta[k] = " | ".join(dict.fromkeys(meta[k].split(" | ") + v.split(" | ")))
        pairs = {}
        for ci, src in enumerate(sources):
            for idx, dtype, shape in src.pairs():
                if shape_range and not shape_range[0] <= idx < shape_range[1]:
                    continue
                key = (idx, dtype)
                if key in pairs:
                    print(f"merge.py: warning: pair {idx}:{dtype} in two inputs; keeping the first", file=sys.stderr)
                    continue
                if shape_index.get(shape) != idx:
                    raise SystemExit(f"merge.py: {src.name}: pair {idx}:{dtype} has shape {shape}, which is not "
                                     f"shape {idx} of {shapes_path}")
                pairs[key] = (ci, shape)
        kernels = {}
        for src in sources:
            for row in src.kernels():
                kernels.setdefault(row[:4], row)

        fd, db_path = tempfile.mkstemp(prefix=".merge.", suffix=".db", dir=tmpdir)
        os.close(fd)
        os.unlink(db_path)
        out = sqlite3.connect(db_path)
        out.executescript(CONFIG_DDL)
        order = sorted(pairs, key=lambda kk: (kk[0], DTYPES.index(kk[1])))
        n_rows = 0
        for config_id, (idx, dtype) in enumerate(order, 1):
            ci, (n, c, k, h, w) = pairs[(idx, dtype)]
            row = problem_row((n, c, k, h, w), dtype)
            out.execute(f"INSERT INTO config (id, {', '.join(row)}) VALUES (?{', ?' * len(row)})",
                        (config_id, *row.values()))
            rows = sources[ci].rows(idx, dtype)
            if [r[0] for r in rows] != list(range(len(space))):
                raise SystemExit(f"merge.py: pair {idx}:{dtype} has {len(rows)} results, expected {len(space)}")
            best = None
            times, details = [], []
            for cfg, st, t, rel, spread, b, r in rows:
                if st not in STATUSES:
                    raise SystemExit(f"merge.py: unknown status {st!r}")
                if st != "ok":
                    t = None
                elif offset and b == SHORT_BATCH and sources[ci].kind == "part":
                    t = round(t - offset, 3)
                times.append((config_id, texts[cfg], t, st))
                details.append((config_id, texts[cfg], rel, spread, b, r))
                if t is not None and (best is None or t < best[0]):
                    best = (t, texts[cfg])
            out.executemany("INSERT INTO timings VALUES (?,?,?,?)", times)
            out.executemany("INSERT INTO timing_detail VALUES (?,?,?,?,?,?)", details)
            n_rows += len(rows)
            if best is not None:
                out.execute("INSERT INTO perf_db (solver, config, params) VALUES (?,?,?)",
                            (SOLVER, config_id, best[1]))
        out.executemany("INSERT INTO kernels VALUES (?,?,?,?,?,?,?,?,?)", sorted(kernels.values()))
        shapes_done = {}
        for idx, d in pairs:
            shapes_done.setdefault(idx, set()).add(d)
        meta.update({
            "solver": SOLVER, "params": ",".join(PARAMS), "shape_selection": shape_rule(len(shapes)),
            "pairs_left": " ".join(sorted(left - {f"{i}:{d}" for i, d in pairs},
                                          key=lambda p: (int(p.split(":")[0]), p))),
            "problems": str(len(order)),
            "problems_fp16": str(sum(1 for _, d in order if d == "FP16")),
            "problems_fp32": str(sum(1 for _, d in order if d == "FP32")),
            "shapes_both_precisions": str(sum(1 for v in shapes_done.values() if len(v) == 2)),
            "timings_rows": str(n_rows),
            "merged_from": " ".join(os.path.basename(p) for p in parts),
        })
        if offset:
            meta[OFFSET_KEY] = f"{offset:g}"
        meta.update(extra_meta)
        out.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", sorted(meta.items()))
        out.commit()
        out.execute("VACUUM")
        out.close()
        timing_db.publish(db_path, out_path, ".merge.")
        print(f"merge.py: {len(order)} problems ({meta['problems_fp16']} FP16, {meta['problems_fp32']} FP32; "
              f"{meta['shapes_both_precisions']} shapes with both), {n_rows} timings -> {out_path} "
              f"({os.path.getsize(out_path)} bytes)", file=sys.stderr)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def load(path):
    """Opens a merged file (.db or .db.xz) read-only; returns (connection, temp dir or None)."""
    if path.endswith(".xz"):
        tmpdir = tempfile.mkdtemp(prefix="gemm1x1_db_")
        plain = os.path.join(tmpdir, "timings.db")
        with lzma.open(path, "rb") as fi, open(plain, "wb") as fo:
            shutil.copyfileobj(fi, fo, 1 << 20)
        return sqlite3.connect(plain), tmpdir
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True), None


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def stats(path):
    con, tmpdir = load(path)
    try:
        lines = []
        lines.append("| precision | problems | configs failing (all out_of_resources unless noted) | "
                     "median config / best: median [min, max] | worst / best: median [min, max] | "
                     "configs within 2 % of best: median [min, max] | within 5 %: median [min, max] |")
        lines.append("|---|---|---|---|---|---|---|")
        for dtype in DTYPES:
            ids = [r[0] for r in con.execute("SELECT id FROM config WHERE data_type = ? ORDER BY id", (dtype,))]
            if not ids:
                continue
            fail = {}
            total = 0
            med_ratio, worst_ratio, w2, w5 = [], [], [], []
            for cid in ids:
                rows = con.execute("SELECT time_us, status FROM timings WHERE config = ?", (cid,)).fetchall()
                total += len(rows)
                for _, st in rows:
                    if st != "ok":
                        fail[st] = fail.get(st, 0) + 1
                times = sorted(t for t, st in rows if st == "ok")
                best = times[0]
                med_ratio.append(statistics.median(times) / best)
                worst_ratio.append(times[-1] / best)
                w2.append(sum(1 for t in times if t <= 1.02 * best))
                w5.append(sum(1 for t in times if t <= 1.05 * best))
            nfail = sum(fail.values())
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(fail.items()))

            def fmt(v, f="{:.2f}"):
                return f"{f.format(statistics.median(v))} [{f.format(min(v))}, {f.format(max(v))}]"
            lines.append(f"| {dtype} | {len(ids)} | {100.0 * nfail / total:.1f} % ({kinds}) | {fmt(med_ratio)} | "
                         f"{fmt(worst_ratio, '{:.1f}')} | {fmt(w2, '{:.0f}')} | {fmt(w5, '{:.0f}')} |")
        # noise: spread of the timed replays of full measurements
        spreads = [sp / 1000.0 for (sp,) in con.execute(
            "SELECT spread_permille FROM timing_detail WHERE launches = 10 AND spread_permille IS NOT NULL")]
        lines.append("")
        lines.append(f"Spread (max - min) / median of the 5 timed replays, full measurements: median "
                     f"{100 * statistics.median(spreads):.2f} %, 90th percentile {100 * pct(spreads, 0.9):.2f} %, "
                     f"{len(spreads)} measurements.")
        full = con.execute("SELECT COUNT(*) FROM timing_detail WHERE launches = 10").fetchone()[0]
        short = con.execute("SELECT COUNT(*) FROM timing_detail WHERE launches = 2").fetchone()[0]
        offset = dict(con.execute("SELECT key, value FROM meta")).get(OFFSET_KEY)
        lines.append(f"Measurements: {full} full (graph of 10 launches, 5 replays), {short} short (graph of 2, "
                     f"3 replays; meta timing says which configs)"
                     + (f", each short time less {offset} us (meta {OFFSET_KEY})." if offset else "."))
        bests = {}
        for (params,) in con.execute("SELECT params FROM perf_db"):
            bests[params] = bests.get(params, 0) + 1
        top = sorted(bests.items(), key=lambda kv: -kv[1])[:5]
        lines.append(f"Distinct fastest configs: {len(bests)} over "
                     f"{con.execute('SELECT COUNT(*) FROM perf_db').fetchone()[0]} problems; most frequent: "
                     + ", ".join(f"{p} ({n})" for p, n in top) + ".")
        return "\n".join(lines)
    finally:
        con.close()
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parts", nargs="*", help="part files of triton_gemm1x1.py (.db or .db.gz), or merged files "
                    "(.db or .db.xz) to extend")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="the shapes CSV the parts index (default shapes.csv)")
    ap.add_argument("--shapes-range", metavar="A:B", help="keep only the problems of shapes A..B-1 (a subset)")
    ap.add_argument("-o", "--output", help="merged file (.db, or .db.xz to compress)")
    ap.add_argument("--meta", action="append", default=[], help="KEY=VALUE added to the meta table (repeatable)")
    ap.add_argument("--short-offset-us", type=float, metavar="US",
                    help="take US microseconds off every short measurement (a graph of %d launches) of the part "
                         "files, so that it compares with the full one (timings/README.md, 'Two measurements'); "
                         "recorded in meta %s (default: what the merged inputs carry, else 0)" % (SHORT_BATCH, OFFSET_KEY))
    ap.add_argument("--stats", metavar="DB", help="print summary statistics of a merged file (.db or .db.xz)")
    args = ap.parse_args(argv)
    if not args.parts and not args.stats:
        ap.error("give part files and -o, or --stats DB")
    if args.parts:
        if not args.output:
            ap.error("-o/--output is required with part files")
        for p in args.parts:
            if not os.path.exists(p):
                ap.error(f"{p}: no such file")
        extra = {}
        for kv in args.meta:
            if "=" not in kv:
                ap.error(f"--meta {kv!r}: expected KEY=VALUE")
            k, v = kv.split("=", 1)
            extra[k] = v
        if any(os.path.abspath(p) == os.path.abspath(args.output) for p in args.parts):
            ap.error(f"-o {args.output}: is also an input (write elsewhere, then move it)")
        shape_range = None
        if args.shapes_range:
            try:
                shape_range = tuple(int(v) for v in args.shapes_range.split(":"))
                if len(shape_range) != 2 or not 0 <= shape_range[0] < shape_range[1]:
                    raise ValueError
            except ValueError:
                ap.error(f"--shapes-range {args.shapes_range!r}: expected A:B with 0 <= A < B")
        if args.short_offset_us is not None and not 0 <= args.short_offset_us < 100:
            ap.error("--short-offset-us must be in [0, 100)")
        merge(args.parts, args.output, extra, args.shapes, shape_range, args.short_offset_us)
    if args.stats:
        print(stats(args.stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())

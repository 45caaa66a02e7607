#!/usr/bin/env python3
"""Check a kernel definition's rules (.tcr) against every row of a generic timing DB.

What `tunecast check KERNEL.tcr --timings DB` does (docs/kernels.md), in Python (tcr_eval.py), for
timing DBs of format tunecast-timings/2 (timing_db.py; .db, .db.gz, .db.xz): every recorded
failure whose config the rules accept is a mismatch (the rules too loose), and so is every `ok`
row the rules reject (too strict). With a `kernels` table (the harness's per compiled kernel
facts), also checks each compiled kernel: the rules accept it (for a representative problem of
its N/K specialization class) exactly when it loaded (status ok; Triton's shared memory within
--smem-limit). Prints counts and up to 20 mismatches of each kind; exit 1 if any.

    python3 tools/gpu_timing/check_definition.py weights/rules/TritonGemmSplitK.tcr out/timing/splitk_h100.db
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tcr_eval  # noqa: E402
import timing_db  # noqa: E402

CLASS_VALUE = {"1": 1, "16": 4096, "x": 4104}  # a representative N or K of each specialization class


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("definition", help="the .tcr")
    ap.add_argument("db", help="timing DB (tunecast-timings/2)")
    ap.add_argument("--smem-limit", type=int, default=232448, help="shared memory per block (default H100's)")
    args = ap.parse_args(argv)
    with open(args.definition) as f:
        d = tcr_eval.Definition(f.read(), args.definition)
    con, tmpdir = timing_db.open_db(args.db)
    bad = 0
    try:
        names = [n for n, _ in timing_db.field_types(con)]
        solver = dict(con.execute("SELECT key, value FROM meta")).get("solver")
        if solver and d.kernel and solver != d.kernel:
            print(f"warning: the DB's solver {solver} is not the definition's kernel {d.kernel}")
        problems = {}
        for row in con.execute(f"SELECT id, {', '.join(names)} FROM problems"):
            problems[row[0]] = d.problem(dict(zip(names, row[1:])))
        counts, shown = {}, {"loose": 0, "strict": 0}
        for pid, params, status in con.execute("SELECT problem, params, status FROM timings"):
            cfg = tuple(int(v) for v in params.split(","))
            acc, why = d.accepts(problems[pid], cfg)
            key = (status, "accepted" if acc else "rejected")
            counts[key] = counts.get(key, 0) + 1
            kind = "loose" if (acc and status != "ok") else ("strict" if (not acc and status == "ok") else None)
            if kind:
                bad += 1
                if shown[kind] < 20:
                    shown[kind] += 1
                    text = con.execute("SELECT problem FROM problems WHERE id = ?", (pid,)).fetchone()[0]
                    print(f"MISMATCH ({'a failure accepted' if kind == 'loose' else 'an ok row rejected'}): "
                          f"{text} {params}: {status}" + (f"; rejected by `{why}`" if why else ""))
        print(f"{sum(counts.values())} timings rows over {len(problems)} problems: " + ", ".join(
            f"{st} & {a}: {n}" for (st, a), n in sorted(counts.items())))
        if timing_db.table_exists(con, "kernels"):
            kc = {}
            for dtype, nc, kcl, params, status, shared in con.execute(
                    "SELECT dtype, n_class, k_class, params, status, shared FROM kernels"):
                cfg = tuple(int(v) for v in params.split(","))
                vals = {"dtype": dtype}
                if "m" in names:
                    vals.update(m=1, n=CLASS_VALUE[nc], k=CLASS_VALUE[kcl])
                acc = d.accepts(d.problem(vals), cfg)[0]
                loaded = status == "ok"
                kc[(loaded, acc)] = kc.get((loaded, acc), 0) + 1
                if acc != loaded or (shared is not None and (shared > args.smem_limit) == loaded):
                    bad += 1
                    print(f"MISMATCH kernels: {dtype} N class {nc} K class {kcl} {params}: {status}, Triton shared {shared}")
            print("compiled kernels: " + ", ".join(f"{'loaded' if r else 'refused'} & {'accepted' if a else 'rejected'}: {n}"
                                                   for (r, a), n in sorted(kc.items())))
    finally:
        timing_db.close_db(con, tmpdir)
    print(f"{bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

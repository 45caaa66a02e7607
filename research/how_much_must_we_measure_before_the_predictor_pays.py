#!/usr/bin/python3
"""How much must we measure before the predictor pays? (issue 32, item 5)

Learning from what tuning measures, by replay: tune the training problems with no model at a budget
B (the definition's seeded draws, then coordinate descent; `tunecast tune KERNEL.tcr --replay
EXHAUSTIVE.db --record REC.db`), keep only what that tuning measured, train a predictor on it, score
the predictor-seeded search on the test problems (`tunecast eval-search --split test`); then
iterate: tune the same problems again with the new model, recording into a copy of the record (the
training data is everything measured so far; configs already in the record are answered from it and
cost no new benchmark), retrain, score. Benchmarks spent = measurement rows in the record DB.

Tuned problems: train and val of the trainer's split (data.split_of of the canonical text without
the architecture); the models are fit on both (`--fit-on train+val`: no checkpoint selection, since
val holds no exhaustive data in this setting); test is never tuned, only scored.

References: the model-free search on test (`eval-search KERNEL.tcr --strategies free_search`, mean
of 10 seeds); the predictor trained on the exhaustive data of the same tuned problems with the same
recipe (--fit-on train+val; skipped with --no-reference); and, with `--reference DIR`, a
tunecast-train folder or compiled .tcm trained elsewhere on the exhaustive DB (e.g. out/splitk/gpu/s0.tcm, --fit-on train
with its checkpoint picked on val), scored the same way.

Tuning runs on the CPU (--jobs shards, each recording into its own copy of the record, merged by
problem after: the same rows as one process); training on --device. The whole study at budgets 20
and 10, rounds 0-3, took 121 s on one H100 machine (16 cores, --jobs 6 --parallel).

Usage:
  /usr/bin/python3 research/how_much_must_we_measure_before_the_predictor_pays.py \\
      --kernel weights/rules/TritonGemmSplitK.tcr --timings out/timing/splitk_h100.db \\
      --work out/replay_study/splitk --budgets 20,10 --rounds 3 --epochs 40 \\
      [--device cpu|cuda] [--jobs 6] [--parallel] [--deadline S] [--reference out/splitk/gpu/s0.tcm] \\
      [--results research/data/how_much_must_we_measure_before_the_predictor_pays_TritonGemmSplitK.json]
  /usr/bin/python3 research/how_much_must_we_measure_before_the_predictor_pays.py \\
      --kernel weights/rules/TritonGemm1x1.tcr --timings out/timing/h100_132.db --work out/replay_study/gemm1x1 \\
      --budgets 20 --rounds 1 --precisions FP16,FP32 --no-reference --reference build/weights/TritonGemm1x1.tcm
  /usr/bin/python3 research/how_much_must_we_measure_before_the_predictor_pays.py --plot-only \\
      --results research/data/how_much_must_we_measure_before_the_predictor_pays_TritonGemmSplitK.json,research/data/how_much_must_we_measure_before_the_predictor_pays_TritonGemm1x1.json \\
      --plot research/data/how_much_must_we_measure_before_the_predictor_pays.png

A MIOpen-keyed timing DB (TritonGemm1x1's convolution definition) trains through tools/train.py:
each record is converted to the layout it reads (the exhaustive DB's config rows of the recorded
problems, timings = the recorded rows only, perf_db = the fastest recorded config).

Every step is skipped when its output exists (a killed run resumes). The plot (--plot PNG, default
the results path with .png) draws test geomean speed at budget 10 (solid) and its p10 (dotted)
against the benchmarks spent on training data, per precision, with the model-free search and the
exhaustive-data predictor as horizontal lines.
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
from tunecast_train import data  # noqa: E402

EVAL_BUDGETS = "1,2,5,10,20,50"
SPLIT_SEED = 0


def log(*a):
    print("[study]", *a, flush=True)


def is_miopen(db):
    """A MIOpen-keyed timing DB (docs/search.md: `config`, `perf_db`, `timings(config, ...)`)."""
    con = sqlite3.connect(db)
    found = con.execute("select 1 from sqlite_master where type = 'table' and name = 'config'").fetchone()
    con.close()
    return found is not None


def problems_of(db):
    """[(id, problem text, split)]: a definition's canonical texts (split of the text without the
    architecture), or a MIOpen-keyed DB's config rows (split of the perf-DB descriptor)."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    if is_miopen(db):
        out = []
        for r in con.execute("select * from config order by id"):
            text = (f"dir={r['direction']},dtype={r['data_type']},layout={r['layout']},n={r['batchsize']},"
                    f"c={r['in_channels']},k={r['out_channels']},h={r['in_h']},w={r['in_w']},y={r['fil_h']},x={r['fil_w']},"
                    f"pad_h={r['pad_h']},pad_w={r['pad_w']},stride_h={r['conv_stride_h']},stride_w={r['conv_stride_w']},"
                    f"dil_h={r['dilation_h']},dil_w={r['dilation_w']},g={r['group_count']}")
            out.append((r["id"], text, data.split_of(data.descriptor_text(r), SPLIT_SEED)))
    else:
        out = [(r["id"], r["problem"], data.split_of(split_text(r["problem"]), SPLIT_SEED))
               for r in con.execute("select id, problem from problems order by id")]
    con.close()
    return out


def to_miopen_keyed(rec, exhaustive, folder, name):
    """What tools/train.py reads (timings/README.md): FOLDER/NAME with the exhaustive DB's `config`
    rows of the recorded problems (same ids, so the same split), `timings(config, ...)` = the
    recorded rows only, `perf_db` = the fastest recorded `ok` config of each, and the meta."""
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, name)
    if os.path.exists(out):
        os.remove(out)
    con = sqlite3.connect(out)
    con.execute("attach database ? as ex", (exhaustive,))
    con.execute("attach database ? as rec", (rec,))
    con.execute("create table config as select * from ex.config where 0")
    con.execute("create table meta as select * from ex.meta")
    con.execute("create table perf_db (id INTEGER PRIMARY KEY, solver TEXT, config INTEGER, params TEXT)")
    con.execute("create table timings (config INTEGER, params TEXT, time_us REAL, status TEXT)")
    solver = con.execute("select value from ex.meta where key = 'solver'").fetchone()[0]
    problems = con.execute("select id, dir, dtype, layout, n, c, k, h, w, y, x from rec.problems").fetchall()
    for rid, d, dt, lay, n, c, k, h, w, y, x in problems:
        ids = con.execute("select id from ex.config where direction = ? and data_type = ? and layout = ? and batchsize = ? "
                          "and in_channels = ? and out_channels = ? and in_h = ? and in_w = ? and fil_h = ? and fil_w = ?",
                          (d, dt, lay, n, c, k, h, w, y, x)).fetchall()
        if len(ids) != 1:
            raise SystemExit(f"recorded problem {rid} of {rec} matches {len(ids)} config rows of {exhaustive}")
        cid = ids[0][0]
        con.execute("insert into config select * from ex.config where id = ?", (cid,))
        con.execute("insert into timings select ?, params, time_us, status from rec.timings where problem = ?", (cid, rid))
        best = con.execute("select params from rec.timings where problem = ? and status = 'ok' "
                           "order by time_us, params limit 1", (rid,)).fetchone()
        if best:
            con.execute("insert into perf_db (solver, config, params) values (?, ?, ?)", (solver, cid, best[0]))
    con.execute("create index timings_config on timings(config)")
    con.commit()
    con.close()


def split_text(canonical):
    return ",".join(item for item in canonical.split(",") if not item.startswith("arch="))


def measurement_rows(db):
    con = sqlite3.connect(db)
    n = con.execute("select count(*) from timings").fetchone()[0]
    con.close()
    return n


def copy_db(src, dst):
    """A consistent copy (the recorder uses WAL mode)."""
    s = sqlite3.connect(src)
    d = sqlite3.connect(dst)
    s.backup(d)
    d.close()
    s.close()


def tune_all(args, problems, spec, budget, record, log_path):
    """spec: the .tcr (model-free, seed = problem index) or a .tcm (seeded)."""
    speeds = []
    with open(log_path, "a") as lg:
        for idx, (pid, text) in enumerate(problems):
            cmd = [args.tunecast, "tune", spec, "--problem", text, "--replay", args.timings,
                   "--budget", str(budget), "--seed", str(pid), "--record", record, "--quiet", "--json"]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode not in (0, 3):
                raise SystemExit(f"tune failed (exit {run.returncode}): {' '.join(cmd)}\n{run.stderr}")
            out = json.loads(run.stdout)
            speeds.append(out.get("speed", 0.0))
            lg.write(json.dumps({"problem": text, "speed": out.get("speed"), "benchmarks": out.get("benchmarks"),
                                 "stderr": run.stderr.strip()[-200:]}) + "\n")
    return speeds


def geomean(xs):
    import math
    xs = [max(x, 1e-9) for x in xs]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def train(args, record, out_dir, fit_on="train+val", timings=None):
    """tunecast-train with the study's recipe (the reference's, --fit-on train+val)."""
    if os.path.exists(os.path.join(out_dir, "model.tcir.json")):
        return
    recipe = ["--model", "mlp", "--hidden", "128", "--units", "64", "--emb", "16", "--epochs", str(args.epochs),
              "--near-optimal", "0.03", "--seed", str(args.seed), "--fit-on", fit_on, "--device", args.device,
              "--threads", str(args.threads), "--out", out_dir]
    if args.miopen:
        # tools/train.py reads a folder of MIOpen-keyed DBs named <arch>_<CUs>.db
        folder = out_dir + "_data"
        if record:
            to_miopen_keyed(record, args.timings, folder, args.miopen_db_name)
        else:   # the exhaustive-data reference: the whole DB
            os.makedirs(folder, exist_ok=True)
            link = os.path.join(folder, args.miopen_db_name)
            if not os.path.exists(link):
                os.symlink(os.path.abspath(args.timings), link)
        con = sqlite3.connect(args.timings)
        solver = con.execute("select value from meta where key = 'solver'").fetchone()[0]
        con.close()
        cmd = [sys.executable, os.path.join(ROOT, "tools", "train.py"), "--data", folder, "--solver", solver,
               "--arch", args.miopen_db_name.split("_")[0], "--precision"] + args.precisions + recipe
    else:
        cmd = [sys.executable, os.path.join(ROOT, "tools", "tunecast-train"), "--kernel", args.kernel_json,
               "--timings", timings or record] + recipe
    log("train:", " ".join(cmd))
    t0 = time.time()
    with open(out_dir + ".log", "w") as lg:
        run = subprocess.run(cmd, stdout=lg, stderr=subprocess.STDOUT)
    if run.returncode != 0:
        raise SystemExit(f"training failed (exit {run.returncode}), log {out_dir}.log")
    log(f"trained {out_dir} in {time.time() - t0:.0f} s")


def compile_model(args, out_dir):
    if out_dir.endswith(".tcm"):
        return out_dir
    tcm = os.path.join(out_dir, "model.tcm")
    if not os.path.exists(tcm):
        cmd = [args.tunecast, "compile", os.path.join(out_dir, "model.tcir.json"), "--rules", args.kernel,
               "--encoding", os.path.join(out_dir, "model.tce"), "-o", tcm]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(f"compile failed: {' '.join(cmd)}\n{run.stdout}{run.stderr}")
    return tcm


def eval_search(args, spec, strategies, cache):
    """{'all'|precision: {strategy: {budget: {...}}}} on the test split."""
    if os.path.exists(cache):
        with open(cache) as f:
            return json.load(f)
    res = {}
    for prec in [None] + args.precisions:
        cmd = [args.tunecast, "eval-search", spec, "--timings", args.timings, "--split", "test",
               "--budgets", EVAL_BUDGETS, "--strategies", strategies, "--json"]
        if prec:
            cmd += ["--precision", prec]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(f"eval-search failed: {' '.join(cmd)}\n{run.stdout}{run.stderr}")
        out = json.loads(run.stdout)
        res[prec or "all"] = {"n": out["n"], "strategies": out["strategies"]}
    with open(cache, "w") as f:
        json.dump(res, f)
    return res


def summary(ev, strategy):
    """budget-10 (and 1, 20) geomean and p10 per group."""
    s = {}
    for group, r in ev.items():
        st = r["strategies"][strategy]
        s[group] = {"n": r["n"]}
        for b in ("1", "5", "10", "20"):
            if b in st:
                s[group][f"b{b}"] = round(st[b]["geomean_speed"], 4)
                s[group][f"b{b}_p10"] = round(st[b]["p10_speed"], 4)
    return s


def merge_problems(dst, src, texts):
    """Replace dst's rows of the problems `texts` by src's (problems matched by canonical text)."""
    con = sqlite3.connect(dst)
    con.execute("attach database ? as s", (src,))
    cols = [r[1] for r in con.execute("pragma main.table_info(problems)") if r[1] != "id"]
    qcols = ", ".join(f'"{c}"' for c in cols)
    for text in texts:
        row = con.execute("select id from s.problems where problem = ?", (text,)).fetchone()
        if row is None:
            continue
        sid = row[0]
        row = con.execute("select id from main.problems where problem = ?", (text,)).fetchone()
        if row is None:
            cur = con.execute(f"insert into main.problems ({qcols}) select {qcols} from s.problems where id = ?", (sid,))
            did = cur.lastrowid
        else:
            did = row[0]
        con.execute("delete from main.timings where problem = ?", (did,))
        con.execute("insert into main.timings (problem, params, time_us, status) "
                    "select ?, params, time_us, status from s.timings where problem = ?", (did, sid))
    con.commit()
    con.execute("detach database s")
    con.close()


def tune_round(args, tuned, spec, budget, prev_rec, rec):
    """Tune every problem of `tuned` recording into rec (a copy of prev_rec when given); --jobs
    shards, each recording into its own copy, merged after (the recorder is one writer a file)."""
    from concurrent.futures import ThreadPoolExecutor
    if os.path.exists(rec):
        os.remove(rec)
    jobs = max(1, min(args.jobs, len(tuned)))
    if jobs == 1:
        if prev_rec:
            copy_db(prev_rec, rec)
        return tune_all(args, tuned, spec, budget, rec, rec + ".log")
    shards = [tuned[j::jobs] for j in range(jobs)]
    paths = [f"{rec}.shard{j}" for j in range(jobs)]
    for path in paths:
        for suffix in ("", "-wal", "-shm", ".log"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        if prev_rec:
            copy_db(prev_rec, path)
    with ThreadPoolExecutor(jobs) as pool:
        parts = list(pool.map(lambda j: tune_all(args, shards[j], spec, budget, paths[j], paths[j] + ".log"), range(jobs)))
    if prev_rec:
        copy_db(prev_rec, rec)
        first = 0
    else:
        copy_db(paths[0], rec)
        first = 1
    for j in range(first, jobs):
        merge_problems(rec, paths[j], [t for _, t in shards[j]])
    with open(rec + ".log", "w") as lg:
        for path in paths:
            with open(path + ".log") as f:
                lg.write(f.read())
            for suffix in ("", "-wal", "-shm", ".log"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)
    return [s for part in parts for s in part]


def chain(args, tuned, budget, exhaustive_rows, results, lock, tuned_rows):
    """Rounds 0..R at one budget: tune (model-free, then with the last model), train, score."""
    prev_rec, prev_model = None, None
    for r in range(args.rounds + 1):
        tag = f"B{budget}_r{r}"
        rec = os.path.join(args.work, f"rec_{tag}.db")
        done = rec + ".done"
        if not os.path.exists(done):
            if time.time() > args.deadline_at:
                log(f"{tag}: deadline passed, not started")
                return
            spec = args.kernel if r == 0 else prev_model
            t0 = time.time()
            speeds = tune_round(args, tuned, spec, budget, prev_rec, rec)
            with open(done, "w") as f:
                json.dump({"tune_speed_geomean": geomean(speeds), "seconds": time.time() - t0}, f)
            log(f"{tag}: tuned {len(tuned)} problems in {time.time() - t0:.0f} s, rows {measurement_rows(rec)}")
        with open(done) as f:
            tune_info = json.load(f)
        run = {"budget": budget, "round": r, "record": os.path.relpath(rec, ROOT), "benchmarks": measurement_rows(rec),
               "share_of_exhaustive": round(measurement_rows(rec) / exhaustive_rows, 4),
               "share_of_tuned_problems_exhaustive": round(measurement_rows(rec) / tuned_rows, 4),
               "tuned_speed_geomean": round(tune_info["tune_speed_geomean"], 4),
               "tuned_by": "definition (model-free, seed = problem id)" if r == 0 else f"model_B{budget}_r{r - 1}"}
        if args.stage == "tune":
            with lock:
                results["runs"].append(run)
            return
        model_dir = os.path.join(args.work, f"model_{tag}")
        if not os.path.exists(os.path.join(model_dir, "model.tcir.json")) and time.time() > args.deadline_at:
            log(f"{tag}: deadline passed, not trained")
            return
        train(args, rec, model_dir)
        tcm = compile_model(args, model_dir)
        ev = eval_search(args, tcm, "predictor_search", os.path.join(args.work, f"eval_{tag}.json"))
        run["test"] = summary(ev, "predictor_search")
        with lock:
            results["runs"].append(run)
            write(args, results)
        log(tag, json.dumps(run["test"]))
        prev_rec, prev_model = rec, tcm


def reference(args, tuned_rows, results, lock, given=None):
    """An exhaustive-data predictor, scored like the rounds' models. given=None: trained here on the
    exhaustive DB with the rounds' recipe (--fit-on train+val: it learns every measurement of the
    tuned problems); given=DIR: a tunecast-train folder trained elsewhere (--reference, e.g. the
    --fit-on train run that picks its checkpoint on val)."""
    if given:
        model_dir, key, how = given, "exhaustive_predictor_given", "given (--reference)"
        meta = os.path.join(given, "metrics.json") if os.path.isdir(given) else ""
        if os.path.exists(meta):
            with open(meta) as f:
                m = json.load(f)
            how += ": " + str(m.get("command", ""))[:400]
        if args.reference_note:
            how += ": " + args.reference_note
    else:
        model_dir, key = os.path.join(args.work, "model_exhaustive"), "exhaustive_predictor"
        how = "trained here on the exhaustive DB, the rounds' recipe (--fit-on train+val)"
        if not os.path.exists(os.path.join(model_dir, "model.tcir.json")):
            train(args, None, model_dir, timings=args.timings)
    tcm = compile_model(args, model_dir)
    cache = os.path.join(args.work, "eval_reference.json" if not given else
                         "eval_given_" + os.path.basename(os.path.normpath(given)) + ".json")
    ev = eval_search(args, tcm, "predictor_search", cache)
    with lock:
        results["references"][key] = {"model": os.path.relpath(model_dir, ROOT), "how": how,
                                      "test": summary(ev, "predictor_search"), "benchmarks": tuned_rows}
        write(args, results)
    log(key, json.dumps(results["references"][key]["test"]))


def study(args):
    import threading
    from concurrent.futures import ThreadPoolExecutor
    args.deadline_at = time.time() + args.deadline if args.deadline else float("inf")
    os.makedirs(args.work, exist_ok=True)
    args.kernel_json = os.path.join(args.work, "kernel.json")
    if not os.path.exists(args.kernel_json) and not is_miopen(args.timings):
        with open(args.kernel_json, "w") as f:
            subprocess.run([args.tunecast, "check", args.kernel, "--json"], stdout=f, check=True)
    global SPLIT_SEED
    SPLIT_SEED = args.split_seed
    args.miopen = is_miopen(args.timings)
    allp = problems_of(args.timings)
    tuned = [(pid, t) for pid, t, split in allp if split in ("train", "val")]
    if args.limit:
        tuned = tuned[:args.limit]
    exhaustive_rows = measurement_rows(args.timings)
    con = sqlite3.connect(args.timings)
    ids = {pid for pid, _ in tuned}
    key = "config" if args.miopen else "problem"
    tuned_rows = sum(n for pid, n in con.execute(f"select {key}, count(*) from timings group by {key}") if pid in ids)
    con.close()
    log(f"{len(allp)} problems, {len(tuned)} tuned (train + val), exhaustive rows {exhaustive_rows} "
        f"({tuned_rows} of the tuned problems)")
    results = {"question": "How much must we measure before the predictor pays? (issue 32 item 5)",
               "kernel": args.kernel, "timings": args.timings, "exhaustive_rows": exhaustive_rows,
               "exhaustive_rows_tuned_problems": tuned_rows,
               "problems": len(allp), "tuned_problems": len(tuned), "epochs": args.epochs, "device": args.device,
               "seed": args.seed, "note": args.note,
               "recipe": "tunecast-train --model mlp --hidden 128 --units 64 --emb 16 --near-optimal 0.03 "
                         f"--fit-on train+val --epochs {args.epochs} --seed {args.seed}",
               "eval": f"tunecast eval-search MODEL --split test --budgets {EVAL_BUDGETS} --strategies predictor_search "
                       "(all, --precision FP16, --precision BF16)",
               "runs": [], "references": {}}
    if os.path.exists(args.results):
        with open(args.results) as f:
            old = json.load(f)
        if old.get("kernel") == args.kernel:
            results["references"] = old.get("references", {})
            results["runs"] = [r for r in old.get("runs", []) if "test" in r]
    lock = threading.Lock()

    ev = eval_search(args, args.kernel, "free_search", os.path.join(args.work, "eval_free_search.json"))
    results["references"]["free_search"] = summary(ev, "free_search")

    jobs = [lambda b=b: chain(args, tuned, b, exhaustive_rows, results, lock, tuned_rows) for b in args.budgets]
    if args.stage == "all" and not args.no_reference:
        jobs.append(lambda: reference(args, tuned_rows, results, lock))
    if args.stage == "all" and args.reference:
        jobs.append(lambda: reference(args, tuned_rows, results, lock, given=args.reference))
    with ThreadPoolExecutor(len(jobs) if args.parallel else 1) as pool:
        for fut in [pool.submit(j) for j in jobs]:
            fut.result()
    # keep runs of earlier invocations that this one did not redo
    seen = set()
    runs = []
    for run in sorted(reversed(results["runs"]), key=lambda x: (-x["budget"], x["round"], "test" not in x)):  # newest first
        if (run["budget"], run["round"]) not in seen:
            seen.add((run["budget"], run["round"]))
            runs.append(run)
    results["runs"] = runs
    write(args, results)
    return results


def write(args, results):
    os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
    with open(args.results, "w") as f:
        json.dump(results, f, indent=1)


def plot(results_list, png):
    """One row per kernel (results of several seeds of a kernel overlay in its row), one column per
    group (all, then each precision)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    kernels = []
    for res in results_list:
        if res["kernel"] not in kernels:
            kernels.append(res["kernel"])
    ncol = max(len(res["references"]["free_search"]) for res in results_list)
    fig, axes = plt.subplots(len(kernels), ncol, figsize=(5.2 * ncol, 4.4 * len(kernels)), squeeze=False)
    colors = {20: "tab:blue", 10: "tab:orange"}
    for row, kernel in enumerate(kernels):
        mine = [res for res in results_list if res["kernel"] == kernel]
        groups = list(mine[0]["references"]["free_search"].keys())
        for col, g in enumerate(groups):
            ax = axes[row][col]
            for si, res in enumerate(mine):
                seed = res.get("seed", 0)
                marker, alpha = ("o", 1.0) if si == 0 else ("x", 0.6)
                for budget in sorted({run["budget"] for run in res["runs"]}, reverse=True):
                    runs = sorted([run for run in res["runs"] if run["budget"] == budget and "test" in run],
                                  key=lambda x: x["round"])
                    if not runs:
                        continue
                    xs = [run["benchmarks"] for run in runs]
                    c = colors.get(budget)
                    ax.plot(xs, [run["test"][g]["b10"] for run in runs], marker + "-", color=c, alpha=alpha,
                            label=f"recorded tuning, B={budget}, training seed {seed}")
                    ax.plot(xs, [run["test"][g]["b10_p10"] for run in runs], marker + ":", color=c, alpha=0.6 * alpha)
                    if si == 0:
                        for run in runs:
                            ax.annotate(f"r{run['round']}", (run["benchmarks"], run["test"][g]["b10"]), fontsize=7,
                                        textcoords="offset points", xytext=(3, -10))
                for key, c, what in (("exhaustive_predictor", "tab:green", "same recipe, train+val fit"),
                                     ("exhaustive_predictor_given", "tab:olive", "given model")):
                    ref = res["references"].get(key)
                    if ref and g in ref["test"]:
                        ax.axhline(ref["test"][g]["b10"], color=c, alpha=alpha,
                                   label=f"exhaustive-data predictor, {what}, seed {seed}" if key == "exhaustive_predictor"
                                   else f"exhaustive-data predictor, {os.path.basename(ref['model'])}")
                        ax.axhline(ref["test"][g]["b10_p10"], color=c, ls=":", alpha=0.6 * alpha)
                        ax.plot([ref["benchmarks"]], [ref["test"][g]["b10"]], "s", color=c, alpha=alpha)
            free = mine[0]["references"].get("free_search")
            if free and g in free:
                ax.axhline(free[g]["b10"], color="gray", label="model-free search (no training)")
                ax.axhline(free[g]["b10_p10"], color="gray", ls=":")
            ax.axvline(0.05 * mine[0]["exhaustive_rows"], color="red", alpha=0.3, ls="--", label="5 % of the exhaustive data")
            ax.axhline(0.98, color="red", alpha=0.3, ls="-.")
            ax.set_xscale("log")
            ax.set_xlabel("benchmarks spent on training data (record rows)")
            n = free[g]["n"] if free and g in free else ""
            ax.set_title(f"{os.path.basename(kernel).replace('.tcr', '')} test, {g} ({n} problems)", fontsize=10)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylabel("speed at budget 10 (geomean solid, p10 dotted)")
        axes[row][len(groups) - 1].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    log("wrote", png)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", default="weights/rules/TritonGemmSplitK.tcr")
    ap.add_argument("--timings", default="out/timing/splitk_h100.db")
    ap.add_argument("--work", default="out/replay_study/splitk")
    ap.add_argument("--budgets", default="20,10")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precisions", default="FP16,BF16")
    ap.add_argument("--tunecast", default=os.path.join(ROOT, "build", "codegen", "tunecast"))
    ap.add_argument("--reference", help="also score this tunecast-train folder trained on the exhaustive data elsewhere")
    ap.add_argument("--no-reference", action="store_true", help="do not train the exhaustive-data predictor here")
    ap.add_argument("--reference-note", default="", help="what --reference is (recorded in the results)")
    ap.add_argument("--note", default="", help="a note recorded in the results (where the models were trained)")
    ap.add_argument("--miopen-db-name", default="h100_132.db",
                    help="a MIOpen-keyed timing DB (TritonGemm1x1): the name tools/train.py reads (<arch>_<CUs>.db)")
    ap.add_argument("--jobs", type=int, default=1, help="tune processes at a time (shards merged after)")
    ap.add_argument("--parallel", action="store_true", help="run the budgets' chains and the reference at once")
    ap.add_argument("--deadline", type=float, default=0, help="seconds: start no tune or training after this")
    ap.add_argument("--limit", type=int, default=0, help="tune only the first N problems (a smoke test)")
    ap.add_argument("--stage", choices=["tune", "all"], default="all", help="tune: round 0 records only")
    ap.add_argument("--results", help="default: research/data/how_much_must_we_measure_before_the_predictor_pays_<KERNEL>.json")
    ap.add_argument("--plot", help="PNG (default: results with .png)")
    ap.add_argument("--plot-only", action="store_true", help="draw --results (several, comma-separated) into --plot")
    args = ap.parse_args()
    args.budgets = [int(b) for b in args.budgets.split(",")]
    args.precisions = [p for p in args.precisions.split(",") if p]
    if not args.results:
        args.results = os.path.join(HERE, "data", "how_much_must_we_measure_before_the_predictor_pays_"
                                    + os.path.splitext(os.path.basename(args.kernel))[0] + ".json")
    png = args.plot or os.path.splitext(args.results)[0] + ".png"
    if args.plot_only:
        found = []
        for path in args.results.split(","):
            with open(path) as f:
                found.append(json.load(f))
        plot(found, png)
        return
    results = study(args)
    if any("test" in run for run in results["runs"]):
        plot([results], png)


if __name__ == "__main__":
    main()

"""tunecast_triton: a `prune_configs_by` hook for `@triton.autotune` that keeps the predictor's best
configs of the user's list, so the autotuner benchmarks a handful instead of all (docs/triton.md).

    import tunecast_triton
    @triton.autotune(configs=CONFIGS, key=["M", "N", "K"],
                     prune_configs_by=tunecast_triton.prune_configs_by(
                         "build/weights/TritonGemmSplitK.tcm",
                         problem=lambda a: f"m={a['M']},n={a['N']},k={a['K']},dtype=FP16",
                         params={"block_m": "BLOCK_M", "block_n": "BLOCK_N", "block_k": "BLOCK_K",
                                 "split_k": "SPLIT_K", "num_warps": "num_warps", "num_stages": "num_stages"},
                         keep=4))
    @triton.jit
    def kernel(...): ...

The runtime is reached through the CLI (`tunecast predict MODEL --problem P --among LIST --json`,
once per distinct problem and list, cached): no compiled extension to build against the user's Python.
Needs no Triton itself (any object with `kwargs`, `num_warps`, `num_stages` is a config).
"""
import json
import os
import shutil
import subprocess
import tempfile
import warnings

__all__ = ["prune_configs_by", "Pruner", "TunecastError", "find_tunecast"]

HERE = os.path.dirname(os.path.abspath(__file__))
# Where bin/ is relative to this folder once installed (tools/CMakeLists.txt rewrites it for the
# install's own BINDIR and DATADIR).
INSTALLED_BIN = "../../../../bin"
BEAM = 256   # the widest beam predict allows: lists up to this long are ranked exactly


class TunecastError(RuntimeError):
    """tunecast ran and failed (a bad problem text, a broken model): its own message."""


def find_tunecast(explicit=None):
    """The tunecast binary: `explicit`, else $TUNECAST, else `tunecast` in PATH, else this checkout's
    build trees (build/, build-dev/) or the install's bin/. An explicit path or $TUNECAST that is
    not an executable is an error rather than skipped: the user asked for that one."""
    for origin, path in (("tunecast=", explicit), ("$TUNECAST", os.environ.get("TUNECAST"))):
        if path:
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
            raise FileNotFoundError(f"tunecast_triton: {origin}{path}: no such executable")
    found = shutil.which("tunecast")
    if found:
        return found
    tried = [os.path.normpath(os.path.join(HERE, "..", "..", b, "codegen", "tunecast")) for b in ("build", "build-dev")]
    tried.append(os.path.normpath(os.path.join(HERE, INSTALLED_BIN, "tunecast")))
    for path in tried:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("tunecast_triton: no tunecast binary: pass tunecast=PATH, set $TUNECAST, put it in PATH "
                            f"or build it (cmake --build build --target tunecast); looked in PATH and {', '.join(tried)}")


def _run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    return r.returncode, r.stdout, lines


def _value(config, key, index):
    """A parameter's value in a triton.Config: a kwargs key (BLOCK_M) or an attribute (num_warps)."""
    kwargs = getattr(config, "kwargs", None) or {}
    if key in kwargs:
        return kwargs[key]
    if getattr(config, key, None) is not None:
        return getattr(config, key)
    raise ValueError(f"tunecast_triton: config {index} ({config}) has no {key!r} (neither a kwargs key nor an "
                     "attribute): every config of the list needs each parameter that `params` maps")


class Pruner:
    """The `early_config_prune` callable: Triton 3.x calls it as (configs, named_args, **kwargs),
    Triton 2.x as (configs, named_args); returns the `keep` configs of `configs` the predictor
    ranks best (its score, `predict --among`). Configs it does not rank (the rules reject them, the
    model's vocabulary lacks a value, or past the 256th of a longer list) come after, in the user's
    order: the result is never empty, and keep >= len(configs) returns the whole list (reordered).

    problem(args) -> the problem text `tunecast predict --problem` takes for that model; args is
    named_args with the call's keyword arguments added. params: {model parameter name: where it
    lives in a triton.Config}, a kwargs key ("BLOCK_M") or an attribute ("num_warps")."""

    def __init__(self, model, problem, params, keep=4, tunecast=None, beam=BEAM):
        if not callable(problem):
            raise TypeError("tunecast_triton: problem must be a callable named_args -> problem text")
        if not isinstance(keep, int) or keep < 1:
            raise ValueError(f"tunecast_triton: keep must be a positive integer, got {keep!r}")
        self.tunecast = find_tunecast(tunecast)
        if not os.path.isfile(model):
            raise FileNotFoundError(f"tunecast_triton: model {model}: no such file (the shipped models compile into "
                                    "build/weights/<kernel>.tcm: cmake --build build --target tunecast_weights)")
        self.model, self.problem, self.keep, self.beam = model, problem, keep, beam
        # The model's parameter order, once: a mapping that misses or invents a parameter fails here,
        # at decoration, not inside the first autotuned call.
        rc, out, err = _run([self.tunecast, "inspect", model, "--json"])
        if rc != 0:
            raise TunecastError(f"tunecast_triton: tunecast inspect {model} failed (exit {rc}): {' '.join(err)}")
        self.names = [p["name"] for p in json.loads(out)["parameters"]]
        params = dict(params)
        missing = [n for n in self.names if n not in params]
        extra = [n for n in params if n not in self.names]
        if missing or extra:
            raise ValueError(f"tunecast_triton: params must map each parameter of {model} "
                             f"({', '.join(self.names)}) to a Config key"
                             + (f"; missing {', '.join(missing)}" if missing else "")
                             + (f"; not the model's: {', '.join(extra)}" if extra else ""))
        self.keys = [params[n] for n in self.names]
        self.cache = {}       # (problem text, list) -> the list's value tuples the rules accept, best first
        self.predictions = 0  # tunecast runs (the cache's misses)

    def candidates(self, text, values):
        """The configs of `values` (value tuples, the model's order) that the rules accept, best first
        by the model's score: `tunecast predict --among`, whose beam holds the whole list (up to 256
        configs), so the ranking is exact. Cached per (problem, list)."""
        key = (text, tuple(values))
        if key not in self.cache:
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                f.write("".join(",".join(str(v) for v in config) + "\n" for config in dict.fromkeys(values)))
                among = f.name
            try:
                cmd = [self.tunecast, "predict", self.model, "--problem", text, "--beam",
                       str(min(self.beam, len(set(values)))), "--among", among, "--json"]
                rc, out, err = _run(cmd)
            finally:
                os.unlink(among)
            self.predictions += 1
            if rc == 3:   # no config of the list passes the rules: the user's order alone decides
                warnings.warn(f"tunecast_triton: no config of the list passes the rules for {text!r}; keeping the "
                              "first configs of the list")
                self.cache[key] = []
            elif rc != 0:
                raise TunecastError(f"tunecast_triton: tunecast predict failed for problem {text!r} (exit {rc}): "
                                    + " ".join(err))
            else:
                # predict's warnings, which --json puts in the object: the ranking stands, but it is a guess.
                d = json.loads(out)
                if d.get("applicable") is False:
                    warnings.warn(f"tunecast_triton: {text}: the kernel does not apply (`{d.get('not_applicable')}` "
                                  "fails)")
                if d.get("out_of_range_fields"):
                    warnings.warn(f"tunecast_triton: {text}: {', '.join(d['out_of_range_fields'])} outside what the "
                                  "model learned from (an extrapolation)")
                self.cache[key] = [tuple(c["values"]) for c in d["candidates"]]
        return self.cache[key]

    def rank(self, configs, text):
        """All of configs, those the model ranks first (in its order), then the rest (in the user's order)."""
        values = [tuple(_value(c, k, i) for k in self.keys) for i, c in enumerate(configs)]
        position = {}
        for i, v in enumerate(self.candidates(text, values)):
            position.setdefault(v, i)
        after = len(position)
        order = [position.get(v, after) for v in values]
        return [configs[i] for i in sorted(range(len(configs)), key=lambda i: (order[i], i))]

    def __call__(self, configs, named_args, **kwargs):
        text = self.problem({**named_args, **kwargs})
        if not isinstance(text, str):
            raise TypeError(f"tunecast_triton: problem() must return the problem text, got {type(text).__name__}")
        return self.rank(list(configs), text)[:self.keep]


def prune_configs_by(model, problem, params, keep=4, tunecast=None, beam=BEAM):
    """The dict @triton.autotune(prune_configs_by=...) takes: {"early_config_prune": Pruner(...)}.
    model: a compiled blob (.tcm); problem, params, keep: Pruner's; tunecast: the binary (default:
    find_tunecast's search); beam: predict's --beam."""
    return {"early_config_prune": Pruner(model, problem, params, keep, tunecast, beam)}

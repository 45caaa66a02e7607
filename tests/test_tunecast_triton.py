#!/usr/bin/python3
"""tools/tunecast_triton (the @triton.autotune prune hook) on the shipped models, without Triton or a
GPU: a stand-in Config class, the real CLI (ctest tunecast_triton).
    tests/test_tunecast_triton.py --tunecast build/codegen/tunecast --weights build/weights [unittest args]"""
import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import unittest
import warnings

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))
import tunecast_triton  # noqa: E402

ARGS = None
SPLITK_PARAMS = {"block_m": "BLOCK_M", "block_n": "BLOCK_N", "block_k": "BLOCK_K", "split_k": "SPLIT_K",
                 "num_warps": "num_warps", "num_stages": "num_stages"}
SPLITK_DOMAINS = [(16, 32, 64, 128), (32, 64, 128, 256), (32, 64, 128), (1, 2, 4, 8), (4, 8), (3, 4)]
GEMM1X1_PARAMS = {"block_m": "BLOCK_M", "block_n": "BLOCK_N", "block_k": "BLOCK_K", "group_m": "GROUP_M",
                  "num_warps": "num_warps", "num_stages": "num_stages"}


class Config:
    """What the hook reads of triton.Config."""

    def __init__(self, kwargs, num_warps=4, num_stages=3):
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages

    def __repr__(self):
        return f"Config({self.kwargs}, num_warps={self.num_warps}, num_stages={self.num_stages})"


def splitk_config(v):
    return Config({"BLOCK_M": v[0], "BLOCK_N": v[1], "BLOCK_K": v[2], "SPLIT_K": v[3]}, num_warps=v[4], num_stages=v[5])


def values(cfg):
    return (cfg.kwargs["BLOCK_M"], cfg.kwargs["BLOCK_N"], cfg.kwargs["BLOCK_K"], cfg.kwargs["SPLIT_K"],
            cfg.num_warps, cfg.num_stages)


def splitk_problem(args):
    return f"m={args['M']},n={args['N']},k={args['K']},dtype={args['dtype']}"


def beam(model, problem):
    out = subprocess.run([ARGS.tunecast, "predict", model, "--problem", problem, "--beam", "256", "--json"],
                         check=True, capture_output=True, text=True).stdout
    return [tuple(c["values"]) for c in json.loads(out)["candidates"]]


class PruneHook(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.splitk = os.path.join(ARGS.weights, "TritonGemmSplitK.tcm")
        cls.gemm1x1 = os.path.join(ARGS.weights, "TritonGemm1x1.tcm")
        cls.space = [splitk_config(v) for v in itertools.product(*SPLITK_DOMAINS)]
        cls.args = {"M": 16, "N": 14336, "K": 4096, "dtype": "BF16"}
        cls.expected = beam(cls.splitk, splitk_problem(cls.args))

    def hook(self, keep=4, model=None, params=SPLITK_PARAMS, problem=splitk_problem, **kw):
        d = tunecast_triton.prune_configs_by(model or self.splitk, problem, params, keep=keep,
                                             tunecast=kw.pop("tunecast", ARGS.tunecast), **kw)
        self.assertEqual(list(d), ["early_config_prune"])
        return d["early_config_prune"]

    def test_keeps_the_beams_best_in_beam_order(self):
        for keep in (1, 2, 4, 8):
            kept = self.hook(keep)(self.space, self.args)
            self.assertEqual([values(c) for c in kept], self.expected[:keep])
            self.assertTrue(all(any(c is s for s in self.space) for c in kept))  # the user's own objects

    def test_user_order_does_not_matter_for_the_beams_configs(self):
        shuffled = list(self.space)
        random.Random(1).shuffle(shuffled)
        self.assertEqual([values(c) for c in self.hook(8)(shuffled, self.args)], self.expected[:8])

    def test_configs_outside_the_beam_rank_after_in_user_order(self):
        # Configs the model never proposes: num_stages 5 (outside its vocabulary), and one
        # the beam holds. Together: the beam's first, then the others as the user listed them.
        outside = [splitk_config((64, 64, 32, 1, 4, 5)), splitk_config((32, 32, 32, 1, 4, 5)),
                   splitk_config((16, 32, 32, 2, 8, 5))]
        inside = splitk_config(self.expected[10])
        hook = self.hook(keep=2)
        self.assertEqual(hook(outside + [inside], self.args), [inside, outside[0]])
        self.assertEqual(hook(outside, self.args), outside[:2])  # never empty

    def test_keep_at_least_the_list_keeps_all(self):
        some = [splitk_config(v) for v in (self.expected[40], (16, 32, 32, 2, 8, 5), self.expected[3])]
        kept = self.hook(keep=3)(some, self.args)
        self.assertEqual(len(kept), 3)
        self.assertEqual(kept, [some[2], some[0], some[1]])
        self.assertEqual(len(self.hook(keep=1000)(self.space, self.args)), len(self.space))

    def test_cached_per_problem_and_list(self):
        hook = self.hook(2)
        for _ in range(3):
            hook(self.space, dict(self.args))   # the same problem text and list: one prediction
        self.assertEqual(hook.predictions, 1)
        hook(self.space[:50], self.args)        # another list: ranked on its own
        self.assertEqual(hook.predictions, 2)
        hook(self.space, {**self.args, "M": 4096})
        self.assertEqual(hook.predictions, 3)
        self.assertEqual(sorted({text for text, _ in hook.cache}),
                         sorted({splitk_problem(self.args), splitk_problem({**self.args, "M": 4096})}))

    def test_a_short_list_is_ranked_whole_even_below_the_beam(self):
        # The list's configs the unrestricted beam ranks past 256 are still ranked by the model
        # (predict --among): the kept one is the list's best by score, not its first entry.
        low = [splitk_config(v) for v in self.expected[200:256]]
        beyond = [c for c in self.space if values(c) not in set(self.expected)][:20]
        kept = self.hook(1)(beyond + low, self.args)
        self.assertIn(values(kept[0]), [values(c) for c in beyond + low])
        self.assertEqual(values(kept[0]), self.expected[200])

    def test_triton_2_and_3_call_forms(self):
        hook = self.hook(1)
        # Triton 2.x: (configs, named_args); Triton 3.x adds the call's keyword arguments.
        self.assertEqual(values(hook(self.space, self.args)[0]), self.expected[0])
        positional = {k: v for k, v in self.args.items() if k != "dtype"}
        self.assertEqual(values(hook(self.space, positional, dtype="BF16")[0]), self.expected[0])

    def test_gemm1x1_tutorial_style_configs(self):
        problem = "dir=F,dtype=FP16,layout=NHWC,n=32,c=608,k=96,h=14,w=14,y=1,x=1"
        expected = beam(self.gemm1x1, problem)
        configs = [Config({"BLOCK_M": v[0], "BLOCK_N": v[1], "BLOCK_K": v[2], "GROUP_M": v[3]},
                          num_warps=v[4], num_stages=v[5]) for v in expected[:20]]
        configs.reverse()
        hook = self.hook(4, model=self.gemm1x1, params=GEMM1X1_PARAMS, problem=lambda a: problem)
        kept = hook(configs, {})
        self.assertEqual([(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.kwargs["GROUP_M"],
                           c.num_warps, c.num_stages) for c in kept], expected[:4])

    def test_clear_errors(self):
        def raises(exc, text, fn):
            with self.assertRaises(exc) as ctx:
                fn()
            self.assertIn(text, str(ctx.exception))
        raises(FileNotFoundError, "/nonexistent/tunecast: no such executable",
               lambda: self.hook(tunecast="/nonexistent/tunecast"))
        raises(FileNotFoundError, "tunecast_weights", lambda: self.hook(model="/nonexistent/Model.tcm"))
        raises(ValueError, "missing split_k",
               lambda: self.hook(params={k: v for k, v in SPLITK_PARAMS.items() if k != "split_k"}))
        raises(ValueError, "not the model's: group_m", lambda: self.hook(params={**SPLITK_PARAMS, "group_m": "GROUP_M"}))
        raises(ValueError, "keep must be a positive integer", lambda: self.hook(keep=0))
        lacking = [self.space[0], Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32}, 4, 3)]
        raises(ValueError, "config 1 (Config({'BLOCK_M': 16, 'BLOCK_N': 32, 'BLOCK_K': 32}, num_warps=4, "
               "num_stages=3)) has no 'SPLIT_K'", lambda: self.hook()(lacking, self.args))
        raises(tunecast_triton.TunecastError, "problem field 'dtype' does not take the value 'FP32'",
               lambda: self.hook()(self.space, {**self.args, "dtype": "FP32"}))
        raises(TypeError, "must return the problem text", lambda: self.hook(problem=lambda a: None)(self.space, {}))

    def test_tunecast_from_environment(self):
        saved = os.environ.get("TUNECAST")
        try:
            os.environ["TUNECAST"] = ARGS.tunecast
            self.assertEqual(tunecast_triton.find_tunecast(), ARGS.tunecast)
            os.environ["TUNECAST"] = "/nonexistent/tunecast"
            with self.assertRaisesRegex(FileNotFoundError, r"\$TUNECAST/nonexistent/tunecast"):
                tunecast_triton.find_tunecast()
        finally:
            os.environ.pop("TUNECAST", None)
            if saved is not None:
                os.environ["TUNECAST"] = saved

    def test_tunecast_warnings_pass_on(self):
        # A problem the kernel does not apply to: predict warns (exit 0) and still ranks.
        problem = "dir=F,dtype=FP16,layout=NCHW,n=4,c=608,k=96,h=14,w=14,y=1,x=1"
        hook = self.hook(1, model=self.gemm1x1, params=GEMM1X1_PARAMS, problem=lambda a: problem)
        configs = [Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, 4, 3)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertEqual(hook(configs, {}), configs)
        self.assertTrue(any("does not apply" in str(w.message) for w in caught), [str(w.message) for w in caught])

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tunecast", required=True, help="the tunecast binary")
    ap.add_argument("--weights", required=True, help="the folder of the compiled shipped models (build/weights)")
    ARGS, rest = ap.parse_known_args()
    ARGS.tunecast = os.path.abspath(ARGS.tunecast)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)

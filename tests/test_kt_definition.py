#!/usr/bin/python3
"""tools/kt_definition.py writes only definitions `tunecast check` accepts, or refuses (exit 2, one
line, nothing written): parameter names the rules language cannot take, a kernel name starting with
a digit, an output directory that does not exist, an output that is the input. A single restriction
string is one restriction, as Kernel Tuner takes it; // and % keep exactly the configs Python's
eval keeps, negative values included (the valid set listed through import-timings and check
--timings); the converted definition replays a Kernel Tuner cache with no --problem, as its help says.

  tests/test_kt_definition.py [--tunecast build/codegen/tunecast] [--tool tools/kt_definition.py] [unittest args]"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = argparse.Namespace()


def python_valid(space):
    """The configs Kernel Tuner keeps: every restriction true under Python's eval."""
    params = space["tune_params"]
    restrictions = space.get("restrictions", [])
    restrictions = [restrictions] if isinstance(restrictions, str) else restrictions
    names = list(params)
    return {values for values in itertools.product(*params.values())
            if all(eval(r, {}, dict(zip(names, values))) for r in restrictions)}  # noqa: S307 (the test's own)


class KtDefinition(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.TemporaryDirectory()
        self.dir = self.work.name
        self.calls = itertools.count()

    def tearDown(self):
        self.work.cleanup()

    def convert(self, space, *extra, stem=None, output=None):
        stem = stem or f"space{next(self.calls)}"  # each conversion its own files
        path = os.path.join(self.dir, stem + ".json")
        with open(path, "w") as f:
            json.dump(space, f)
        output = output or os.path.join(self.dir, stem + ".tcr")
        r = subprocess.run([sys.executable, ARGS.tool, path, "-o", output] + list(extra), capture_output=True, text=True)
        return r, path, output

    def tunecast(self, *argv):
        return subprocess.run([ARGS.tunecast] + list(argv), capture_output=True, text=True)

    def converted(self, space, *extra, stem=None):
        """The definition's path and text, after checking that tunecast accepts it."""
        r, _, output = self.convert(space, *extra, stem=stem)
        self.assertEqual(r.returncode, 0, r.stderr)
        check = self.tunecast("check", output)
        self.assertEqual(check.returncode, 0, f"tunecast check refuses what kt_definition wrote:\n{check.stderr}")
        with open(output) as f:
            return output, f.read()

    def refused(self, space, fragments, *extra, output=None):
        r, _, output = self.convert(space, *extra, output=output)
        self.assertEqual(r.returncode, 2, f"exit {r.returncode}, stderr {r.stderr!r}")
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        for fragment in fragments:
            self.assertIn(fragment, r.stderr)
        self.assertFalse(os.path.exists(output), "a refusal wrote the output")
        return r.stderr

    def valid_configs(self, tcr, space):
        """The configs the definition's rules accept: every config recorded as failed, then those
        `check --timings` lists as failures the rules accept."""
        names = list(space["tune_params"])
        csv, db = tcr + ".csv", tcr + ".db"
        with open(csv, "w") as f:
            f.write(",".join(names) + ",time_us,status\n")
            for values in itertools.product(*space["tune_params"].values()):
                f.write(",".join(map(str, values)) + ",,fail\n")
        r = self.tunecast("import-timings", tcr, csv, "-o", db)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.tunecast("check", tcr, "--timings", db, "--limit", "1000000")
        lines = r.stdout.splitlines()
        start = next(i for i, line in enumerate(lines) if "recorded failures the rules accept" in line)
        self.assertTrue(lines[start].split()[0].isdigit(), lines[start])
        valid = set()
        for line in lines[start + 1:]:
            if not line.startswith("    "):
                break
            problem, config, kind = line.split()
            valid.add(tuple(int(v) for v in config.split(",")))
        self.assertEqual(len(valid), int(lines[start].split()[0]))
        return valid

    def cache(self, space):
        """A Kernel Tuner cache file of the space: every config Python keeps, timed."""
        names = list(space["tune_params"])
        entries = {}
        for i, values in enumerate(sorted(python_valid(space))):
            entries[",".join(map(str, values))] = dict(zip(names, values), time=1.0 + i % 7)
        path = os.path.join(self.dir, f"cache{next(self.calls)}.json")
        with open(path, "w") as f:
            json.dump({"device_name": "test", "kernel_name": "k", "problem_size": 1, "tune_params_keys": names,
                       "tune_params": space["tune_params"], "objective": "time", "cache": entries}, f)
        return path

    # 1. names
    def test_parameter_names_the_rules_language_cannot_take_are_refused(self):
        for name, why in [("kernel", "keyword"), ("in", "keyword"), ("default", "keyword"), ("block-size", "not a name"),
                          ("2d", "not a name"), ("blöck", "not a name"), ("min", "builtin"), ("ceil_div", "builtin")]:
            with self.subTest(name=name):
                space = {"kernel": "k", "tune_params": {name: [1, 2], "b": [1, 2]}, "restrictions": []}
                message = self.refused(space, [f"parameter '{name}'", why])
                self.assertIn("by name", message)  # why it is not renamed

    def test_a_parameter_named_size_keeps_its_name_and_replays(self):
        space = {"kernel": "k", "tune_params": {"size": [1, 2, 4], "b": [1, 2]}, "restrictions": ["size * b <= 4"]}
        tcr, text = self.converted(space)
        self.assertIn("param size in {1, 2, 4}", text)
        self.assertIn("field size_ in [0..0] default 0", text)
        self.assertEqual(self.valid_configs(tcr, space), python_valid(space))
        r = self.tunecast("tune", tcr, "--replay", self.cache(space), "--budget", "3", "--seed", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("best:", r.stdout)

    def test_kernel_names(self):
        _, text = self.converted({"kernel": "2dconv", "tune_params": {"a": [1]}})
        self.assertIn("kernel _2dconv\n", text)
        _, text = self.converted({"tune_params": {"a": [1]}}, stem="3d-stencil")
        self.assertIn("kernel _3d_stencil\n", text)
        _, text = self.converted({"kernel": "in", "tune_params": {"a": [1]}})
        self.assertIn("kernel _in\n", text)
        _, text = self.converted({"kernel": "kernel", "tune_params": {"a": [1]}})  # a keyword, yet a valid kernel name
        self.assertIn("kernel kernel\n", text)
        self.refused({"tune_params": {"a": [1]}}, ["--kernel '2dconv'"], "--kernel", "2dconv")

    def test_other_spaces_tunecast_refuses_are_refused(self):
        self.refused({"tune_params": {}}, ["empty"])
        self.refused({"tune_params": {f"p{i}": [1] for i in range(17)}}, ["17 parameters", "16"])
        self.refused({"tune_params": {"a": list(range(4097))}}, ["parameter 'a'", "4096"])
        self.refused({"tune_params": {"a": [-2**63, 1]}}, ["parameter 'a'", "outside"])
        self.refused({"tune_params": {"a": [1, 2]}, "restrictions": ["a % 0 == 1"]}, ["divides by 0"])
        self.refused({"tune_params": {"a": [1, 2]}, "restrictions": ["1 > 2"]}, ["always false"])

    # 2. the output
    def test_a_missing_directory_is_one_line_and_exit_2(self):
        missing = os.path.join(self.dir, "no", "such", "dir", "k.tcr")
        message = self.refused({"tune_params": {"a": [1, 2]}}, ["cannot write", missing], output=missing)
        self.assertNotIn(".tmp", message)

    def test_the_input_is_never_overwritten(self):
        path, link = os.path.join(self.dir, "space.json"), os.path.join(self.dir, "link.tcr")
        before = json.dumps({"tune_params": {"a": [1, 2]}})
        with open(path, "w") as f:
            f.write(before)
        os.symlink(path, link)
        for output in (path, link):
            with self.subTest(output=output):
                r = subprocess.run([sys.executable, ARGS.tool, path, "-o", output], capture_output=True, text=True)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("would replace the input", r.stderr)
                with open(path) as f:
                    self.assertEqual(f.read(), before)
        tmp = os.path.join(self.dir, "k.tcr.tmp")  # an input named as the output's temporary file once was
        os.rename(path, tmp)
        r = subprocess.run([sys.executable, ARGS.tool, tmp, "-o", os.path.join(self.dir, "k.tcr")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(tmp) as f:
            self.assertEqual(f.read(), before)

    def test_the_write_leaves_no_temporary_file(self):
        self.converted({"tune_params": {"a": [1, 2]}})
        self.assertEqual(sorted(f for f in os.listdir(self.dir) if f.endswith(".tmp")), [])

    # 3. restrictions as one string
    def test_a_single_restriction_string_is_one_restriction(self):
        space = {"tune_params": {"a": [1, 2, 3, 4], "b": [1, 2, 4]}, "restrictions": "a*b <= 4"}
        tcr, text = self.converted(space)
        self.assertEqual(text.count("require "), 1, text)
        self.assertEqual(self.valid_configs(tcr, space), python_valid(space))

    # 4. Python's // and %
    def test_floor_division_and_modulo_keep_pythons_configs(self):
        a = list(range(-5, 6))
        cases = [
            ({"a": a}, ["a % 3 == 1"]),
            ({"a": a}, ["a // 2 == -1"]),
            ({"a": list(range(-7, 8)), "b": [-3, -2, -1, 1, 2, 3]},
             ["a % b == 1 or a // b >= 2", "(a - 4) % 3 != 2"]),
            ({"a": list(range(-7, 8)), "b": [-3, -2, -1, 1, 2, 3]},
             ["-a // b == 2 or a % -4 == -1", "(a // b) % 3 == 1 or max(a, b) % 3 == 2"]),
            ({"a": list(range(-7, 8)), "b": [-4, -1, 2, 5]}, ["(a * b) // 4 < -2 or abs(a) // b == 1", "a ** 3 % 5 < 3"]),
            ({"x": [-6, -3, 3, 7], "y": [-2, 3]}, ["x % y == 1 or y // x == -1"]),  # the lets' own argument names
            ({"py_mod": [-3, -1, 2], "b": [2, -2]}, ["py_mod % b == 1", "b // 2 == -1"]),  # a let's name taken
            ({"a": list(range(0, 17)), "b": [1, 2, 4]}, ["a % b == 0 and a // b <= 4"]),  # no negative value
        ]
        for params, restrictions in cases:
            with self.subTest(params=params, restrictions=restrictions):
                space = {"kernel": "k", "tune_params": params, "restrictions": restrictions}
                tcr, text = self.converted(space)
                self.assertEqual(self.valid_configs(tcr, space), python_valid(space), text)
        self.assertEqual(sorted(c[0] for c in python_valid({"tune_params": {"a": a}, "restrictions": ["a % 3 == 1"]})),
                         [-5, -2, 1, 4])  # the review's numbers
        self.assertNotIn("py_", text, "operands that are never negative keep C's operators")

    # 5. forms whose Python meaning the rules language could change: refused, or kept exactly
    def test_and_or_used_as_values_are_refused(self):
        # Python's `unroll or 1` is unroll (or 1), the rules language's `||` 0 or 1: 16 configs against 12.
        self.refused({"tune_params": {"unroll": [0, 1, 2, 4], "tile": [1, 2, 4, 8]},
                      "restrictions": ["tile % (unroll or 1) == 0"]}, ["'or' used as a value", "unroll or 1"])
        self.refused({"tune_params": {"t": [0, 1, 2], "bx": [16, 32, 64]}, "restrictions": ["(t and bx) >= 32"]},
                     ["'and' used as a value"])
        space = {"tune_params": {"a": [0, 1, 2], "b": [0, 1]}, "restrictions": ["not (a and b) or a > 1"]}
        tcr, _ = self.converted(space)  # as true or false they keep Python's meaning
        self.assertEqual(self.valid_configs(tcr, space), python_valid(space))

    def test_in_and_not_in_a_constant_list(self):
        space = {"tune_params": {"bx": [16, 32, 48, 64], "t": [1, 2, 3]},
                 "restrictions": ["bx in [32, 64]", "t not in (3,)", "bx * t in {32, 64, 128, -1}"]}
        tcr, text = self.converted(space)
        self.assertIn("(bx in {32, 64})", text)
        self.assertEqual(self.valid_configs(tcr, space), python_valid(space))
        self.refused({"tune_params": {"a": [1, 2]}, "restrictions": ["a in [b for b in (1,)]"]}, ["constant list"])
        space = {"tune_params": {"a": [1, 2, 3]}, "restrictions": ["a not in []", "a in [] or a > 1"]}
        tcr, _ = self.converted(space)  # the empty list was refused; Python keeps a = 2, 3
        self.assertEqual(self.valid_configs(tcr, space), python_valid(space))

    def test_unsupported_forms_are_named_in_python_words(self):
        params = {"a": [1, 2], "b": [1, 2]}
        self.refused({"tune_params": params, "restrictions": ["(a & 1) == 0"]}, ["operator '&'"])
        self.refused({"tune_params": params, "restrictions": ["(a if b > 1 else 2) == 2"]}, ["conditional expression"])
        self.refused({"tune_params": params, "restrictions": ["a * 1.5 > 2"]}, ["a float (1.5)"])

    def test_kernel_tuners_own_thread_limit_is_added(self):
        # Kernel Tuner's examples/cuda/matmul.py: it adds block_size_x * block_size_y <= max_threads
        # itself, so 64 x 32 never runs; without that rule, 4 of 44 configs were never in its caches.
        params = {"block_size_x": [16, 32, 64], "block_size_y": [1, 2, 4, 8, 16, 32],
                  "tile_size_x": [1, 2, 4, 8], "tile_size_y": [1, 2, 4, 8]}
        space = {"kernel": "matmul", "tune_params": params, "restrictions": ["block_size_x==block_size_y*tile_size_y"]}
        tcr, text = self.converted(space)
        self.assertIn("require (block_size_x * block_size_y) <= 1024", text)
        limited = dict(space, restrictions=space["restrictions"] + ["block_size_x * block_size_y <= 1024"])
        self.assertEqual(len(python_valid(limited)), 40)
        self.assertEqual(self.valid_configs(tcr, space), python_valid(limited))
        tcr, text = self.converted(space, "--max-threads", "0")
        self.assertEqual(len(self.valid_configs(tcr, space)), 44)
        tcr, text = self.converted(dict(space, block_size_names=["tile_size_x"]), "--max-threads", "16")
        self.assertIn("require (tile_size_x * block_size_y) <= 16", text)  # names given, defaults after them

    def test_the_benchmark_hubs_t1_description(self):
        t1 = {"General": {"BenchmarkName": "conv_t1"},
              "ConfigurationSpace": {
                  "TuningParameters": [{"Name": "block_size_x", "Type": "int", "Values": "[16] + list(range(32, 65, 32))"},
                                       {"Name": "tile", "Type": "int", "Values": "[1, 2, 3]"}],
                  "Conditions": [{"Expression": "block_size_x * tile <= 96", "Parameters": ["block_size_x", "tile"]}]}}
        tcr, text = self.converted(t1)
        self.assertIn("kernel conv_t1", text)
        self.assertIn("param block_size_x in {16, 32, 64}", text)
        space = {"tune_params": {"block_size_x": [16, 32, 64], "tile": [1, 2, 3]}, "restrictions": ["block_size_x * tile <= 96"]}
        self.assertEqual(self.valid_configs(tcr, space), python_valid(space))

    # 6. --help and --problem
    def test_help_matches_what_tune_needs(self):
        r = subprocess.run([sys.executable, ARGS.tool, "--help"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertNotIn("no problem fields", r.stdout)
        self.assertNotIn("--problem size=0", r.stdout)
        self.assertIn("no --problem is needed", r.stdout)
        space = {"kernel": "k", "tune_params": {"a": [1, 2, 4, 8], "b": [1, 2, 3]}, "restrictions": ["a * b <= 16"]}
        tcr, _ = self.converted(space)
        r = self.tunecast("tune", tcr, "--replay", self.cache(space), "--budget", "4", "--seed", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("best:", r.stdout)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tunecast", default=os.path.join(ROOT, "build", "codegen", "tunecast"), help="the tunecast binary")
    ap.add_argument("--tool", default=os.path.join(ROOT, "tools", "kt_definition.py"), help="the converter under test")
    ARGS, rest = ap.parse_known_args(namespace=ARGS)
    ARGS.tunecast, ARGS.tool = os.path.abspath(ARGS.tunecast), os.path.abspath(ARGS.tool)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)

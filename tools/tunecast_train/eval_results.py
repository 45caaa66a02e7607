"""Reading `tunecast eval --json` results (tools/eval_table.py, tools/plot_eval.py)."""
import json
import os
import sys


def read(path, tool, keys=("n", "perfect")):
    """The result in `path`, or a one-line exit prefixed by `tool` naming what is wrong with it."""
    try:
        with open(path) as f:
            result = json.load(f)
    except OSError as e:
        sys.exit(f"{tool}: cannot read {path}: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        sys.exit(f"{tool}: {path} is not JSON ({e})")
    missing = [key for key in keys if not isinstance(result, dict) or key not in result]
    if missing:
        sys.exit(f"{tool}: {path} is not a `tunecast eval --json` result (no {', '.join(missing)})")
    return result


def arch_of(result):
    """The evaluated problems' arch: eval's `archs` (file name or --arch), else the DB file name's."""
    if result.get("archs"):
        return ",".join(result["archs"])
    return os.path.basename(result.get("perfdb", "")).split("_")[0]

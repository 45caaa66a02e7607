"""What the shape scripts of tools/gpu_timing share (shapes.py: the 1x1 convolutions of
TritonGemm1x1; gemm_shapes.py: the GEMMs of TritonGemmSplitK): the order key of a shape, the
atomic write of a list, and the reader of a shapes CSV that the exhaustive runs call.

Each script keeps what is its own: its candidates, its selection rule and its CSV columns.
Pure Python: no GPU, no torch.
"""
import hashlib
import os
import tempfile


def shape_hash(shape):
    """sha256 of 'v1,v2,...' (hex digest): the order of a shapes list, so that any prefix of it is
    a uniform sample."""
    return hashlib.sha256(",".join(str(v) for v in shape).encode()).hexdigest()


def write_atomic(path, text, prefix):
    """Writes text to path through a temporary file (named prefix..., beside path), mode 0644,
    replaced in one step: a reader sees the old file or the whole new one."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read_shapes(path, columns, comments=False):
    """A shapes CSV -> list of tuples of len(columns) positive ints (its first columns), in file
    order. The header must start with `columns`; blank lines are skipped. comments=False: the
    header is the first line; comments=True: lines starting '#' are skipped (before the header
    too)."""
    width, columns = len(columns), list(columns)
    out = []
    with open(path) as f:
        header, first = None, 1
        if not comments:
            header, first = f.readline().strip().split(","), 2
            if header[:width] != columns:
                raise ValueError(f"{path}: expected a header starting {','.join(columns)}, got {header}")
        for line_no, line in enumerate(f, first):
            line = line.strip()
            if not line or (comments and line.startswith("#")):
                continue
            if header is None:
                header = line.split(",")
                if header[:width] != columns:
                    raise ValueError(f"{path}:{line_no}: expected a header starting {','.join(columns)}, "
                                     f"got {header}")
                continue
            vals = line.split(",")
            try:
                shape = tuple(int(v) for v in vals[:width])
            except ValueError:
                raise ValueError(f"{path}:{line_no}: not integers: {line}")
            if len(shape) != width or min(shape) < 1:
                raise ValueError(f"{path}:{line_no}: need {width} positive integers: {line}")
            out.append(shape)
    return out

#!/usr/bin/env python3
"""Select the GEMM problem shapes (m, n, k) that the exhaustive TritonGemmSplitK timing covers.

The problem is a linear layer, Y[m, n] = X[m, k] @ W[n, k]^T (torch.nn.Linear's weight layout):
m = tokens, n = out_features, k = in_features. The (n, k) pairs are the linear layers of public
LLM architectures, from the hidden size, intermediate size, attention heads, key-value heads,
head dimension and vocabulary of their published configuration files (Hugging Face `config.json`
of the repository named in ARCHS; the numbers are copied below, nothing is downloaded):

  layer        n (out_features)                      k (in_features)
  q            heads * head_dim                      hidden
  k, v         kv_heads * head_dim                   hidden
  qkv (fused)  (heads + 2 * kv_heads) * head_dim     hidden          (vLLM, Phi-3)
  o            hidden                                heads * head_dim
  gate, up     intermediate                          hidden
  gate_up      2 * intermediate                      hidden          (fused: vLLM, Phi-3)
  down         hidden                                intermediate
  lm_head      vocab                                 hidden

Selection rule (deterministic; timings/README.md):
  1. candidates: every distinct (n, k) above, times every token count m of M_VALUES
     (1..8 each; 12, 16, 24, 32, ... : 2^i and 3 * 2^(i-1) up to 8192; and six non-round counts);
  2. keep those with n * k <= --max-nk (default 2^26: a weight of at most 128 MiB in 16 bits)
     and m * n * k <= --max-mnk (default 2^31), so that the slowest configs stay timeable;
  3. order them by sha256("m,n,k") (hex digest, ascending): any prefix of the list is a uniform
     sample of step 2, and a later session can time a disjoint held-out sample from further on.

Writes CSV (header m,n,k,mnk,layers,sha; `layers` names the architectures and layers of (n, k))
atomically. Runs on the CPU.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import shape_lists  # noqa: E402  (what this script shares with shapes.py)
from shape_lists import shape_hash  # noqa: E402  (the order key; gemm_shapes.shape_hash as before)

# name: (source repository of config.json, hidden, intermediate, heads, kv_heads, head_dim, vocab)
# Mixture-of-experts models: the expert MLP's intermediate size (moe_intermediate_size for Qwen2-MoE).
ARCHS = {
    "Llama-2-7B": ("meta-llama/Llama-2-7b-hf", 4096, 11008, 32, 32, 128, 32000),
    "Llama-2-13B": ("meta-llama/Llama-2-13b-hf", 5120, 13824, 40, 40, 128, 32000),
    "Llama-2-70B": ("meta-llama/Llama-2-70b-hf", 8192, 28672, 64, 8, 128, 32000),
    "Llama-3-8B": ("meta-llama/Meta-Llama-3-8B", 4096, 14336, 32, 8, 128, 128256),
    "Llama-3-70B": ("meta-llama/Meta-Llama-3-70B", 8192, 28672, 64, 8, 128, 128256),
    "Llama-3.2-1B": ("meta-llama/Llama-3.2-1B", 2048, 8192, 32, 8, 64, 128256),
    "Llama-3.2-3B": ("meta-llama/Llama-3.2-3B", 3072, 8192, 24, 8, 128, 128256),
    "Mistral-7B": ("mistralai/Mistral-7B-v0.1", 4096, 14336, 32, 8, 128, 32000),
    "Mixtral-8x7B": ("mistralai/Mixtral-8x7B-v0.1", 4096, 14336, 32, 8, 128, 32000),
    "Mixtral-8x22B": ("mistralai/Mixtral-8x22B-v0.1", 6144, 16384, 48, 8, 128, 32768),
    "Qwen2-0.5B": ("Qwen/Qwen2-0.5B", 896, 4864, 14, 2, 64, 151936),
    "Qwen2-1.5B": ("Qwen/Qwen2-1.5B", 1536, 8960, 12, 2, 128, 151936),
    "Qwen2-7B": ("Qwen/Qwen2-7B", 3584, 18944, 28, 4, 128, 152064),
    "Qwen2-57B-A14B": ("Qwen/Qwen2-57B-A14B", 3584, 2560, 28, 4, 128, 151936),
    "Qwen2-72B": ("Qwen/Qwen2-72B", 8192, 29568, 64, 8, 128, 152064),
    "Gemma-2B": ("google/gemma-2b", 2048, 16384, 8, 1, 256, 256000),
    "Gemma-7B": ("google/gemma-7b", 3072, 24576, 16, 16, 256, 256000),
    "Gemma-2-2B": ("google/gemma-2-2b", 2304, 9216, 8, 4, 256, 256000),
    "Gemma-2-9B": ("google/gemma-2-9b", 3584, 14336, 16, 8, 256, 256000),
    "Phi-3-mini": ("microsoft/Phi-3-mini-4k-instruct", 3072, 8192, 32, 32, 96, 32064),
    "Phi-3-medium": ("microsoft/Phi-3-medium-4k-instruct", 5120, 17920, 40, 10, 128, 32064),
}

M_VALUES = sorted(set(list(range(1, 9)) + [2 ** i for i in range(4, 14)] + [3 * 2 ** i for i in range(2, 12)]
                      + [13, 100, 333, 1000, 3000, 5000]))


def layers(arch):
    _, hidden, inter, heads, kv, hd, vocab = ARCHS[arch]
    return {
        "q": (heads * hd, hidden), "k/v": (kv * hd, hidden), "qkv": ((heads + 2 * kv) * hd, hidden),
        "o": (hidden, heads * hd), "gate/up": (inter, hidden), "gate_up": (2 * inter, hidden),
        "down": (hidden, inter), "lm_head": (vocab, hidden),
    }


def nk_pairs():
    """{(n, k): ['Arch:layer', ...]} over every architecture."""
    out = {}
    for arch in ARCHS:
        for name, nk in layers(arch).items():
            out.setdefault(nk, []).append(f"{arch}:{name}")
    return out


def select(max_nk, max_mnk):
    pairs = nk_pairs()
    kept = []
    for (n, k), names in pairs.items():
        if n * k > max_nk:
            continue
        for m in M_VALUES:
            if m * n * k <= max_mnk:
                kept.append(((m, n, k), names))
    kept.sort(key=lambda s: shape_hash(s[0]))
    return pairs, kept


def write_csv_atomic(path, kept, header_lines):
    lines = [f"# {line}\n" for line in header_lines] + ["m,n,k,mnk,layers,sha\n"]
    for (m, n, k), names in kept:
        lines.append(f"{m},{n},{k},{m * n * k},{' '.join(names)},{shape_hash((m, n, k))[:16]}\n")
    shape_lists.write_atomic(path, "".join(lines), ".gemm_shapes.")


def read_shapes(path):
    """The harness's reader: list of (m, n, k) in file order ('#' lines are comments)."""
    return shape_lists.read_shapes(path, ("m", "n", "k"), comments=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-nk", type=int, default=2 ** 26, help="keep (n, k) with n*k <= this (default 2^26)")
    ap.add_argument("--max-mnk", type=int, default=2 ** 31, help="keep shapes with m*n*k <= this (default 2^31)")
    ap.add_argument("-o", "--output", default=os.path.join(HERE, "gemm_shapes.csv"),
                    help="output CSV (default tools/gpu_timing/gemm_shapes.csv)")
    args = ap.parse_args(argv)
    pairs, kept = select(args.max_nk, args.max_mnk)
    header = ["TritonGemmSplitK problem shapes: tools/gpu_timing/gemm_shapes.py (rule in its docstring).",
              f"Y[m,n] = X[m,k] @ W[n,k]^T; (n, k) from the linear layers of {len(ARCHS)} architectures, "
              f"config.json of: " + ", ".join(f"{a} ({v[0]})" for a, v in ARCHS.items()) + ".",
              "architecture: hidden, intermediate, heads, kv_heads, head_dim, vocab: "
              + "; ".join(f"{a}: {', '.join(str(x) for x in v[1:])}" for a, v in ARCHS.items()) + ".",
              f"m in {{{', '.join(map(str, M_VALUES))}}}; kept n*k <= {args.max_nk} and m*n*k <= {args.max_mnk}; "
              f"ordered by sha256('m,n,k'): a prefix is a uniform sample.",
              f"{len(pairs)} distinct (n, k); {sum(1 for nk in pairs if nk[0] * nk[1] <= args.max_nk)} within n*k; "
              f"{len(kept)} shapes."]
    write_csv_atomic(args.output, kept, header)
    print(f"gemm_shapes.py: {len(pairs)} distinct (n, k) over {len(ARCHS)} architectures; {len(kept)} shapes "
          f"(n*k <= {args.max_nk}, m*n*k <= {args.max_mnk}) -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

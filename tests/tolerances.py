"""Per-dtype tolerances, the one place tests take them from.

A result computed with fp32 accumulation and rounded once to the output format
is within half an ulp of the exact value; a chain of a few such roundings (a
message op, then the reduction, then the output cast) stays within a few ulp.
Relative tolerances are therefore a small multiple of the format's machine
epsilon (spacing of numbers near 1):

* float64: eps = 2**-52.  Reference and fast paths differ only by summation order.
* float32: eps = 2**-23 ~ 1.2e-7.  Sums over up to ~1e3 terms: a few 1e-6.
* float16: 11 significant bits, eps = 2**-10 ~ 9.8e-4.  Inputs are themselves
  rounded, so we allow ~4 ulp relative: 4e-3.
* bfloat16: 8 significant bits, eps = 2**-7 = 7.8e-3.  ~2 ulp relative: 1.6e-2.

``atol`` covers results that cancel to near zero; it is scaled to the same
number of ulp at unit magnitude (features in tests are O(1)).
"""

import torch

EPS = {
    torch.float64: 2.0 ** -52,
    torch.float32: 2.0 ** -23,
    torch.float16: 2.0 ** -10,
    torch.bfloat16: 2.0 ** -7,
}

# (rtol, atol) for comparing an op's output in `dtype` against a float64 reference.
TOL = {
    torch.float64: (1e-10, 1e-10),
    torch.float32: (2e-5, 2e-5),
    torch.float16: (4e-3, 4e-3),
    torch.bfloat16: (1.6e-2, 1.6e-2),
}

# Looser bounds for multi-layer models (a layer = matmul + message passing + bias,
# each rounding once in the output format): errors compound over a handful of ops.
MODEL_TOL = {
    torch.float64: (1e-8, 1e-8),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (2e-2, 2e-2),
    torch.bfloat16: (6e-2, 6e-2),
}


def tol(dtype):
    """(rtol, atol) for one op in ``dtype`` against a float64 reference."""
    return TOL[dtype]


def assert_close(actual, expected, dtype=None, model=False):
    """Compare ``actual`` (any dtype) with ``expected`` at the tolerance of ``dtype``."""
    dtype = dtype or actual.dtype
    rtol, atol = (MODEL_TOL if model else TOL)[dtype]
    torch.testing.assert_close(actual.double(), expected.double(), rtol=rtol, atol=atol)

# Gradients through recurrent cells (the LSTM of nn.Set2Set: 2 layers x 2 iterations) in a
# 16-bit format: the backward pass chains one rounded sigmoid/tanh derivative product per gate
# and step, so the error grows with the unrolled depth (~8 chained cells here) on top of the
# forward rounding. bfloat16 (eps 2**-7) measured ~6e-2 norm-wise in torch's own LSTM
# backward, the same whether the graph readout runs in mpgraph or in plain torch; allow ~15 eps.
RECURRENT_GRAD_TOL = {
    torch.float64: MODEL_TOL[torch.float64],
    torch.float32: MODEL_TOL[torch.float32],
    torch.float16: (4e-2, 4e-2),
    torch.bfloat16: (1.2e-1, 1.2e-1),
}

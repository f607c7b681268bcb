"""Token bitmasks: allocation and reset (the kernels are C++).

A bitmask is an int32 array of shape (batch, ceil(vocab_size / 32)); token i
of row r is allowed iff bit i % 32 of word i // 32 is set. int32 rather than
uint32 because old torch versions have no uint32 (XGrammar's and vLLM's
choice too); the bits are the same. A fresh or reset bitmask is all ones
(-1: everything allowed).

``allocate_token_bitmask`` returns a torch CPU tensor, as XGrammar does, when
torch is installed, else a numpy array; ``backend="numpy"`` or ``"torch"``
chooses. ``apply_token_bitmask_inplace`` (C++, python/src/tensor_view.cc)
takes either kind for both arguments.

Tests: tests/python/test_bitmask.py.
"""

import math
from typing import Optional, Tuple


def get_bitmask_shape(batch_size: int, vocab_size: int) -> Tuple[int, int]:
    """(batch_size, ceil(vocab_size / 32))."""
    return (batch_size, math.ceil(vocab_size / 32))


def allocate_token_bitmask(batch_size: int, vocab_size: int, *, backend: Optional[str] = None):
    """An all-ones int32 bitmask: torch (the default when installed) or numpy."""
    shape = get_bitmask_shape(batch_size, vocab_size)
    if backend not in (None, "torch", "numpy"):
        raise ValueError(f"backend must be None, 'torch' or 'numpy', got {backend!r}")
    if backend != "numpy":
        try:
            import torch
        except ImportError:
            if backend == "torch":
                raise
        else:
            return torch.full(shape, -1, dtype=torch.int32)
    import numpy

    return numpy.full(shape, -1, dtype=numpy.int32)


def reset_token_bitmask(bitmask) -> None:
    """Sets every bit (everything allowed)."""
    if hasattr(bitmask, "fill_"):
        bitmask.fill_(-1)
    else:
        bitmask.fill(-1)

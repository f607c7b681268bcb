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

Sizes must be ints (batch_size >= 0, vocab_size >= 1), and a bitmask to
reset a torch tensor or numpy array of int32: else TypeError / ValueError.

Tests: tests/python/test_bitmask.py, test_bad_input.py.
"""

from typing import Optional, Tuple

from . import _core


def get_bitmask_shape(batch_size: int, vocab_size: int) -> Tuple[int, int]:
    """(batch_size, ceil(vocab_size / 32))."""
    batch_size = _core._int_arg(batch_size, "batch_size", 0)
    vocab_size = _core._int_arg(vocab_size, "vocab_size", 1)
    return (batch_size, (vocab_size + 31) // 32)


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
    if not (hasattr(bitmask, "fill_") or hasattr(bitmask, "fill")) or not hasattr(bitmask, "dtype"):
        raise TypeError(f"bitmask must be a torch.Tensor or a numpy.ndarray, got {type(bitmask).__name__}")
    if str(bitmask.dtype) not in ("int32", "torch.int32"):
        raise TypeError(f"bitmask must have dtype int32, got {bitmask.dtype}")
    if hasattr(bitmask, "fill_"):
        bitmask.fill_(-1)
    else:
        bitmask.fill(-1)

"""LogitsProcessor: grammar masks for a Hugging Face-style generate loop.

A generate loop calls ``processor(input_ids, scores)`` once per step with the
token ids so far (batch, length) and the next-token logits (batch, vocab) and
samples from what it returns. The processor keeps one GrammarMatcher per row:
from the second call on it first feeds each row's last id (the token sampled
at the previous step) to that row's matcher, then fills all rows' bitmasks in
one batch (BatchGrammarMatcher, GIL released, a persistent thread pool) and
sets the disallowed logits to -inf in place.

A row whose matcher has terminated (it accepted a stop token) is left
unmasked: the loop pads it. A sampled token the grammar refuses raises
ValueError naming the row and the id (the loop did not sample from the
masked scores). Logits wider than the bitmask (a model's padded output) are
masked past vocab_size too, and logits on another device are masked on CPU
and copied back. One processor serves one generate call, as XGrammar's;
``reset()`` makes it reusable.

It needs torch, not transformers: subclassing transformers.LogitsProcessor is
not required by generate(), which only calls it. ``scores`` must be a float
torch tensor of shape (batch, vocab) and ``input_ids`` an integer tensor of
shape (batch, length) with as many rows; else TypeError / ValueError naming
which and why, as for a sampled id outside [0, vocab_size).

Tests: tests/python/test_logits_processor.py, test_bad_input.py.
"""

import sys
from typing import List, Sequence, Union

from . import _core
from .bitmask import allocate_token_bitmask


class LogitsProcessor:
    """Masks scores with one grammar (or one per row) over a batch."""

    def __init__(
        self,
        compiled_grammar: Union[_core.CompiledGrammar, Sequence[_core.CompiledGrammar]],
        *,
        max_threads: Union[int, str] = "auto",
    ) -> None:
        if isinstance(compiled_grammar, _core.CompiledGrammar):
            compiled_grammar = [compiled_grammar]
        if not isinstance(compiled_grammar, (list, tuple)):
            raise TypeError("compiled_grammar must be a CompiledGrammar or a list of them (one per row), got "
                            f"{type(compiled_grammar).__name__}")
        self._grammars = list(compiled_grammar)
        if not self._grammars:
            raise ValueError("LogitsProcessor needs at least one compiled grammar")
        for k, g in enumerate(self._grammars):
            if not isinstance(g, _core.CompiledGrammar):
                raise TypeError(f"compiled_grammar[{k}] must be a CompiledGrammar, got {type(g).__name__}")
        self._vocab_size = self._grammars[0].vocabulary.padded_size
        if any(g.vocabulary.padded_size != self._vocab_size for g in self._grammars):
            raise ValueError("the compiled grammars have different vocabulary sizes")
        self._batch = _core.BatchGrammarMatcher(max_threads)
        self.reset()

    def reset(self) -> None:
        """Forgets the sequences: the next call starts a new generation."""
        self.matchers: List[_core.GrammarMatcher] = []
        self._bitmask = None
        self._started = False

    def __call__(self, input_ids, scores):
        batch = self._check_inputs(input_ids, scores)
        if not self.matchers:
            if len(self._grammars) not in (1, batch):
                raise ValueError(f"{len(self._grammars)} compiled grammars for a batch of {batch}")
            grammars = self._grammars * batch if len(self._grammars) == 1 else self._grammars
            self.matchers = [_core.GrammarMatcher(g) for g in grammars]
            self._bitmask = allocate_token_bitmask(batch, self._vocab_size, backend="torch")
        elif batch != len(self.matchers):
            raise ValueError(f"batch size changed from {len(self.matchers)} to {batch}: call reset() first")
        if self._started:
            if input_ids.shape[1] == 0:
                raise ValueError("input_ids has no columns: from the second call on, each row's last id is the "
                                 "token sampled at the previous step")
            last = input_ids[:, -1].tolist()
            for row, (matcher, token) in enumerate(zip(self.matchers, last)):
                if matcher.is_terminated():
                    continue
                if not 0 <= token < self._vocab_size:
                    raise ValueError(f"row {row}: the sampled token {token} is not a token id "
                                     f"(0 <= id < {self._vocab_size})")
                if not matcher.accept_token(token):
                    raise ValueError(f"row {row}: the sampled token {token} is not allowed by the grammar")
        self._started = True
        live = [i for i, m in enumerate(self.matchers) if not m.is_terminated()]
        self._bitmask.fill_(-1)
        if live:
            self._batch.batch_fill_next_token_bitmask([self.matchers[i] for i in live], self._bitmask, live)
        target = scores if scores.device.type == "cpu" else scores.to("cpu")
        width = target.shape[-1]
        if width > self._vocab_size and live:
            # Ids past the vocabulary (the model's padding) are never allowed.
            target[live, self._vocab_size:] = float("-inf")
        _core.apply_token_bitmask_inplace(target, self._bitmask, vocab_size=min(width, self._vocab_size))
        if target is not scores:
            scores.copy_(target.to(scores.device))
        return scores

    @staticmethod
    def _check_inputs(input_ids, scores) -> int:
        """The batch size, once input_ids and scores are tensors of the shapes generate() passes."""
        torch = sys.modules.get("torch")
        for name, value in (("input_ids", input_ids), ("scores", scores)):
            if torch is None or not isinstance(value, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, length), got {tuple(input_ids.shape)}")
        if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
            raise TypeError(f"input_ids must hold integer token ids, got dtype {input_ids.dtype}")
        if scores.dim() not in (1, 2):
            raise ValueError(f"scores must have shape (batch, vocab_size), got {tuple(scores.shape)}")
        if not scores.is_floating_point():
            raise TypeError(f"scores must be floating-point logits, got dtype {scores.dtype}")
        batch = input_ids.shape[0]
        rows = scores.shape[0] if scores.dim() == 2 else 1
        if rows != batch:
            raise ValueError(f"scores has {rows} rows but input_ids has {batch}: one row of logits per sequence")
        return batch

"""A bigram language model over real token ids, and a generate() loop.

No model weights can be fetched here, so the examples sample from an n-gram
model instead: token-bigram counts from a trace of real documents tokenized
with the same tokenizer (../shared/data/traces/<tokenizer>/<set>.jsonl),
interpolated with unigram counts, so every id keeps some probability. Each
training document ends with the stop token, so the model learns to stop.
The model is far from the grammar (it wanders, repeats, forgets to close
strings): the logits processor is what keeps its samples valid.

setup() holds what both examples share: the options --samples,
--max-tokens, --seed, --data; Llama 3's TokenizerInfo; the bigram model of a
trace set; a seeded torch generator.

generate() is the loop a Hugging Face-style generate() runs: model logits ->
logits processors -> softmax -> sample -> append; rows that emitted a stop
token are padded until all have (or max_tokens is reached).
"""

import argparse
import json
import pathlib

import torch

import zapgram

REPO = pathlib.Path(__file__).resolve().parents[1]


class BigramModel:
    """logits(prev ids) -> (batch, vocab_size) float32 log-probabilities."""

    def __init__(self, trace_path, vocab_size, stop_id, weight=0.9, limit=None):
        unigram = torch.full((vocab_size,), 0.1)
        self._next = {}
        with open(trace_path, encoding="utf-8") as f:
            for n, line in enumerate(f):
                if limit is not None and n >= limit:
                    break
                tokens = json.loads(line)["tokens"] + [stop_id]
                for prev, nxt in zip(tokens, tokens[1:]):
                    self._next.setdefault(prev, {}).setdefault(nxt, 0)
                    self._next[prev][nxt] += 1
                for t in tokens:
                    unigram[t] += 1
        self._base = torch.log((1 - weight) * unigram / unigram.sum())
        self._weight = weight
        self._rows = {}

    def _row(self, prev):
        row = self._rows.get(prev)
        if row is None:
            following = self._next.get(prev)
            if not following:
                row = self._base
            else:
                ids = torch.tensor(list(following.keys()))
                counts = torch.tensor(list(following.values()), dtype=torch.float32)
                probs = self._base.exp()
                probs[ids] += self._weight * counts / counts.sum()
                row = torch.log(probs)
            self._rows[prev] = row
        return row

    def __call__(self, input_ids):
        return torch.stack([self._row(int(p)) for p in input_ids[:, -1]])


def generate(model, processor, batch, stop_ids, max_tokens, generator, start_id):
    """Samples `batch` sequences; returns (token lists without the stop token,
    whether each row stopped)."""
    input_ids = torch.full((batch, 1), start_id, dtype=torch.long)
    finished = [False] * batch
    for _ in range(max_tokens):
        scores = processor(input_ids, model(input_ids))
        next_ids = torch.multinomial(torch.softmax(scores, dim=-1), 1, generator=generator).squeeze(1)
        for r in range(batch):
            if finished[r]:
                next_ids[r] = stop_ids[0]
            elif int(next_ids[r]) in stop_ids:
                finished[r] = True
        input_ids = torch.cat([input_ids, next_ids.unsqueeze(1)], dim=1)
        if all(finished):
            break
    rows = []
    for row in input_ids[:, 1:].tolist():
        cut = next((i for i, t in enumerate(row) if t in stop_ids), len(row))
        rows.append(row[:cut])
    return rows, finished


def text_of(ids, decoded_vocab):
    return b"".join(decoded_vocab[i] for i in ids).decode("utf-8", errors="replace")


def summary(name, counts):
    """One line: name, then each count out of the total."""
    total = counts["samples"]
    parts = [f"{k} {v}/{total}" for k, v in counts.items() if k != "samples"]
    return f"{name}: " + ", ".join(parts)


def setup(doc, trace_set, samples, max_tokens, more_options=()):
    """Parses the options ((flag, default) pairs in more_options, ints), loads
    Llama 3 and the bigram model of traces/llama3/<trace_set>.jsonl."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--samples", type=int, default=samples)
    parser.add_argument("--max-tokens", type=int, default=max_tokens)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=pathlib.Path, default=REPO.parent / "shared" / "data")
    for flag, default in more_options:
        parser.add_argument(flag, type=int, default=default)
    args = parser.parse_args()
    tokenizer = zapgram.TokenizerInfo.from_huggingface(str(args.data / "tokenizers" / "llama3.tokenizer.json"))
    model = BigramModel(args.data / "traces" / "llama3" / f"{trace_set}.jsonl", tokenizer.vocab_size,
                        tokenizer.stop_token_ids[0])
    return args, tokenizer, model, torch.Generator().manual_seed(args.seed)

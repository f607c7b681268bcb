"""LogitsProcessor in a Hugging Face-style generate loop (torch, batch > 1).

The loop below is what transformers' generate does with a logits processor:
call it with (input_ids, scores), sample from the returned scores, append,
pad rows that have finished. With random logits every sampled row must be a
document the schema accepts, ended by a stop token; a token the grammar refuses raises; logits wider than the
vocabulary (a padded output layer) never allow the padding ids.
"""

import json

import pytest

import zapgram

torch = pytest.importorskip("torch")

SCHEMA = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "size": {"enum": ["small", "large"]},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3},
    },
    "required": ["ok", "size"],
    "additionalProperties": False,
}


def generate(processor, batch, vocab_size, stop_ids, steps, seed, width=None):
    """A minimal generate(): random logits, sampling, padding finished rows."""
    gen = torch.Generator().manual_seed(seed)
    input_ids = torch.zeros((batch, 1), dtype=torch.long)  # a one-token "prompt"
    finished = [False] * batch
    for _ in range(steps):
        scores = torch.randn((batch, width or vocab_size), generator=gen)
        scores = processor(input_ids, scores)
        probs = torch.softmax(scores, dim=-1)
        next_ids = torch.multinomial(probs, 1, generator=gen).squeeze(1)
        for r in range(batch):
            if finished[r]:
                next_ids[r] = stop_ids[0]  # padding, as generate() does
            elif int(next_ids[r]) in stop_ids:
                finished[r] = True
        input_ids = torch.cat([input_ids, next_ids.unsqueeze(1)], dim=1)
        if all(finished):
            break
    return input_ids[:, 1:], finished


def decode(ids, decoded_vocab, stop_ids):
    out = b""
    for i in ids:
        if i in stop_ids:
            break
        out += decoded_vocab[i]
    return out.decode("utf-8")


def test_generate_batch_of_valid_documents(llama3, llama3_compiler):
    compiled = llama3_compiler.compile_json_schema(SCHEMA, any_whitespace=False)
    processor = zapgram.LogitsProcessor(compiled, max_threads=2)
    stop_ids = llama3.stop_token_ids
    ids, finished = generate(processor, 4, llama3.vocab_size, stop_ids, steps=80, seed=1)
    assert all(finished)
    vocab = llama3.decoded_vocab
    for row in ids.tolist():
        doc = json.loads(decode(row, vocab, stop_ids))
        assert set(doc) <= {"ok", "size", "tags"} and {"ok", "size"} <= set(doc)
        assert isinstance(doc["ok"], bool) and doc["size"] in ("small", "large")
        assert all(t in ("a", "b") for t in doc.get("tags", [])) and len(doc.get("tags", [])) <= 3
    # generate() stops before feeding the final stop token back: the matchers
    # hold complete documents.
    assert all(m.is_completed() for m in processor.matchers)


def test_one_grammar_per_row_and_padded_logits(small, small_compiler):
    grammars = [small_compiler.compile_regex("(ab)+"), small_compiler.compile_regex("1+2")]
    processor = zapgram.LogitsProcessor(grammars)
    ids, finished = generate(processor, 2, 40, [0], steps=30, seed=3, width=48)
    assert all(finished)
    texts = [decode(row, small.decoded_vocab, [0]) for row in ids.tolist()]
    assert texts[0].startswith("ab") and set(texts[0]) <= {"a", "b"} and len(texts[0]) % 2 == 0
    assert texts[1].endswith("2") and set(texts[1][:-1]) <= {"1"}
    # The padding columns (ids 40..47) are -inf for live rows.
    processor.reset()
    scores = processor(torch.zeros((2, 1), dtype=torch.long), torch.zeros((2, 48)))
    assert bool(torch.isinf(scores[:, 40:]).all())
    with pytest.raises(ValueError, match="2 compiled grammars for a batch of 3"):
        zapgram.LogitsProcessor(grammars)(torch.zeros((3, 1), dtype=torch.long), torch.zeros((3, 40)))


def test_refused_token_raises(small_compiler):
    processor = zapgram.LogitsProcessor(small_compiler.compile_regex("ab"))
    processor(torch.zeros((1, 1), dtype=torch.long), torch.zeros((1, 40)))
    with pytest.raises(ValueError, match="row 0: the sampled token 10 is not allowed"):
        processor(torch.tensor([[0, 10]]), torch.zeros((1, 40)))  # "b" before "a"
    with pytest.raises(ValueError, match="batch size changed"):
        processor(torch.zeros((2, 2), dtype=torch.long), torch.zeros((2, 40)))

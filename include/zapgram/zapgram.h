/* zapgram C API: token masks for grammar-constrained decoding.
 *
 * Objects are opaque and created/freed in pairs. A compiled grammar is
 * immutable and may be shared by threads; a matcher belongs to one sequence.
 * Functions that can fail return NULL (or 0) and, when `error` is not NULL,
 * store a message in *error, to be released with zapgram_free_string.
 *
 * Mask layout: zapgram_grammar_mask_words() uint32 words; token i is allowed
 * iff bit i % 32 of word i / 32 is set. EOS is allowed exactly when the text
 * so far is a sentence of the grammar.
 *
 * Grammar arguments are those of the C++ API (zapgram/grammar.h): a .gbnf,
 * .ebnf or .lark path, builtin:json, regex:PATTERN; relative paths resolve
 * against `data_root` when it is not NULL.
 */
#ifndef ZAPGRAM_ZAPGRAM_H_
#define ZAPGRAM_ZAPGRAM_H_

#include <stddef.h>
#include <stdint.h>

#include "zapgram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zapgram_vocab zapgram_vocab;
typedef struct zapgram_grammar zapgram_grammar;
typedef struct zapgram_matcher zapgram_matcher;

/* A Hugging Face tokenizer.json. */
ZAPGRAM_EXPORT zapgram_vocab* zapgram_vocab_load(const char* tokenizer_json_path, char** error);
ZAPGRAM_EXPORT void zapgram_vocab_free(zapgram_vocab* vocab);
ZAPGRAM_EXPORT int32_t zapgram_vocab_size(const zapgram_vocab* vocab); /* ids of a mask */
/* Writes up to `capacity` EOS ids into `ids`; returns how many there are. */
ZAPGRAM_EXPORT size_t zapgram_vocab_eos_ids(const zapgram_vocab* vocab, int32_t* ids, size_t capacity);

/* Reads and compiles a grammar for `vocab` (which may be freed afterwards),
 * with the default options (a schema:PATH grammar for generation). */
ZAPGRAM_EXPORT zapgram_grammar* zapgram_grammar_compile(const char* spec, const char* data_root,
                                                        const zapgram_vocab* vocab, char** error);

/* How a grammar is read; zapgram_grammar_options_init sets the defaults. */
typedef struct zapgram_grammar_options {
  /* schema:PATH grammars. 0 (default): for generation, what masks and
   * sampling should use (at most 2 whitespace bytes between tokens, members
   * in `properties` order, canonical string spellings). 1: for validation,
   * JSON text as RFC 8259 reads it (any whitespace, any member order where
   * the grammar stays exact, every escape spelling), as `zapgram parse`
   * reads documents (zapgram/grammar.h, SchemaPurpose). */
  int schema_validation;
  /* schema:PATH: 1 = drop keywords a grammar cannot enforce (the grammar
   * then accepts more than the schema) instead of failing. Default 0. */
  int schema_lenient;
  /* Lark grammars: Lark's Indenter post-lexer (Python's _INDENT/_DEDENT,
   * zapgram/grammar.h IndenterOptions): 0 auto (default: on when the grammar
   * %declares _INDENT and _DEDENT and uses _NL or _NEWLINE), 1 on, 2 off. */
  int lark_indenter;
} zapgram_grammar_options;

ZAPGRAM_EXPORT void zapgram_grammar_options_init(zapgram_grammar_options* options);
/* zapgram_grammar_compile with `options` (NULL = the defaults). */
ZAPGRAM_EXPORT zapgram_grammar* zapgram_grammar_compile_with_options(const char* spec, const char* data_root,
                                                                     const zapgram_vocab* vocab,
                                                                     const zapgram_grammar_options* options,
                                                                     char** error);
/* Structural tags given as JSON text (`json[0 .. length)`, UTF-8): free text
 * with constrained tool calls, as a structural:PATH file holds them
 * (docs/structural_tags.md): {"tags": [{"begin", "schema" or "grammar",
 * "end"}], "triggers": [...]} or {"format": "llama3" | "qwen2_5" | "hermes",
 * "tools": [...]}. A begin, an end or a trigger may name one token of the
 * vocabulary as {"token": ID} or {"token": "TEXT"}; trigger tokens make the
 * free part free tokens (XGrammar's TokenTagDispatch). `options` may be NULL
 * (schemas for generation). Errors name the JSON member ("<structural
 * tags>: /tags/0/begin: ...") or the token ("unknown token ..."). */
ZAPGRAM_EXPORT zapgram_grammar* zapgram_grammar_compile_structural_tags(const char* json, size_t length,
                                                                        const zapgram_vocab* vocab,
                                                                        const zapgram_grammar_options* options,
                                                                        char** error);
ZAPGRAM_EXPORT void zapgram_grammar_free(zapgram_grammar* grammar);

/* Persistent compiled grammars (C++: zapgram::CompiledGrammar::Serialize /
 * Deserialize; format: api/grammar_serializer.cc). zapgram_grammar_serialize
 * returns the grammar's bytes (a versioned, checksummed form tied to its
 * vocabulary's fingerprint), *length of them, in a buffer to be released
 * with zapgram_free_string; NULL only when out of memory.
 * zapgram_grammar_deserialize reads bytes[0 .. length) back for `vocab`
 * (which may be freed afterwards): NULL with *error set when they are not
 * a compiled grammar, of another format version, compiled for another
 * vocabulary, truncated or corrupt (the message says which, and the byte
 * offset), never a crash. Masks of the loaded grammar equal the original's. */
ZAPGRAM_EXPORT char* zapgram_grammar_serialize(const zapgram_grammar* grammar, size_t* length);
ZAPGRAM_EXPORT zapgram_grammar* zapgram_grammar_deserialize(const char* bytes, size_t length,
                                                            const zapgram_vocab* vocab, char** error);
/* A 64-bit hash of the vocabulary's ids, kinds, EOS flags and bytes: what a
 * serialized grammar is tied to (a cache key's part). */
ZAPGRAM_EXPORT uint64_t zapgram_vocab_fingerprint(const zapgram_vocab* vocab);

/* The process-wide store of determinized regex DFAs that every grammar read
 * consults before it determinizes a terminal, and fills (a new JSON Schema
 * then pays only for the patterns no earlier grammar had; C++:
 * zapgram::Grammar::SetSharedRegexCacheBytes). Its byte budget: 16 MiB by
 * default, least recently used out first, 0 empties it and turns it off.
 * Compiled grammars are the same either way. Thread-safe. */
ZAPGRAM_EXPORT void zapgram_set_regex_cache_bytes(size_t bytes);
/* What the store holds and has served since the process began; any
 * pointer may be NULL. */
ZAPGRAM_EXPORT void zapgram_regex_cache_stats(uint64_t* hits, uint64_t* misses, size_t* bytes);
ZAPGRAM_EXPORT size_t zapgram_grammar_mask_words(const zapgram_grammar* grammar);

ZAPGRAM_EXPORT zapgram_matcher* zapgram_matcher_new(const zapgram_grammar* grammar);
/* The same with a default temperature (XGrammar's default_temperature; C++:
 * zapgram::MatcherOptions::default_temperature): what
 * zapgram_matcher_get_temperature gives where no rule's `temperature` is in
 * effect. Negative: none (as zapgram_matcher_new). */
ZAPGRAM_EXPORT zapgram_matcher* zapgram_matcher_new_with_temperature(const zapgram_grammar* grammar,
                                                                     float default_temperature);
ZAPGRAM_EXPORT void zapgram_matcher_free(zapgram_matcher* matcher);
/* A new matcher in `matcher`'s state (text, rollback window, finished or
 * not) sharing its compiled grammar; the two then go their own ways. Free
 * it with zapgram_matcher_free. */
ZAPGRAM_EXPORT zapgram_matcher* zapgram_matcher_fork(const zapgram_matcher* matcher);
/* Fills the mask; returns the number of allowed ids. */
ZAPGRAM_EXPORT size_t zapgram_matcher_compute_mask(zapgram_matcher* matcher, uint32_t* words);
/* Budget-aware mask: allows a token only if, after it, the text can still be
 * finished within tokens_left - 1 more tokens (EOS counted, as the model
 * emits it); EOS iff the text is a sentence and tokens_left >= 1; nothing
 * when tokens_left <= 0. Sound (allowed tokens really finish in budget);
 * tokens not proven within the search budgets are masked. Returns the
 * number of allowed ids. */
ZAPGRAM_EXPORT size_t zapgram_matcher_compute_mask_budget(zapgram_matcher* matcher, uint32_t* words,
                                                          int64_t tokens_left);
/* Draft-tree masks for speculative decoding (XGrammar's
 * traverse_draft_tree; C++: zapgram::Matcher::TraverseDraftTree). The tree
 * has num_nodes nodes in first-child / next-sibling form:
 * retrieve_next_token[i] is node i's first child or -1,
 * retrieve_next_sibling[i] its next sibling or -1, draft_tokens[i] its token;
 * node 0, the root, is the current state (its token is not read) and has no
 * sibling. Row i of `bitmask` (num_nodes rows of zapgram_grammar_mask_words()
 * words) gets the mask after the path to node i when the node is visited
 * (the root, unless the matcher has terminated; any node whose token its
 * parent's row allows and that the matcher accepts without terminating);
 * every other row is zeroed. `temperatures` (NULL or num_nodes floats) gets
 * each visited node's temperature after its path
 * (zapgram_matcher_get_temperature), -1 for a node without one and for
 * every node not visited. time_threshold: seconds,
 * <= 0 for no limit. The matcher is not changed. Returns 1 when complete, 0
 * when the time threshold stopped the walk (rows not reached are zero), -1
 * on error (a malformed tree, a budget that ran out; *error set). */
ZAPGRAM_EXPORT int zapgram_matcher_traverse_draft_tree(const zapgram_matcher* matcher,
                                                       const int64_t* retrieve_next_token,
                                                       const int64_t* retrieve_next_sibling,
                                                       const int64_t* draft_tokens, size_t num_nodes,
                                                       uint32_t* bitmask, float* temperatures,
                                                       double time_threshold, char** error);
/* Canonical fast-forward tokens (C++: zapgram::Matcher::ComputeFastForwardTokens):
 * the ids every continuation the grammar allows begins with in the
 * tokenizer's own encoding, stopping before any token the following text
 * could respell; their bytes are a prefix of the forced bytes. Writes up to
 * `capacity` of them into `ids` (NULL when capacity is 0) and returns how
 * many there are: call again with a larger buffer when that exceeds
 * capacity. The matcher is unchanged. -1 on error (*error set): the
 * vocabulary was not loaded from a tokenizer.json file, or its tokenizer's
 * pipeline is not supported. The first call on a vocabulary reads the
 * tokenizer's merges (~1-3 s). */
ZAPGRAM_EXPORT int64_t zapgram_matcher_compute_ff_tokens(zapgram_matcher* matcher, int32_t* ids, size_t capacity,
                                                         char** error);
/* 1 when accepted, 0 when not allowed (the state is unchanged). */
ZAPGRAM_EXPORT int zapgram_matcher_accept_token(zapgram_matcher* matcher, int32_t id);
ZAPGRAM_EXPORT int zapgram_matcher_accept_bytes(zapgram_matcher* matcher, const char* bytes, size_t length);
/* Undoes the last n accepted tokens; 0 beyond the rollback budget. */
ZAPGRAM_EXPORT int zapgram_matcher_rollback(zapgram_matcher* matcher, size_t n);
ZAPGRAM_EXPORT void zapgram_matcher_reset(zapgram_matcher* matcher);
ZAPGRAM_EXPORT int zapgram_matcher_is_accepting(const zapgram_matcher* matcher);
ZAPGRAM_EXPORT int zapgram_matcher_is_finished(const zapgram_matcher* matcher);
/* The matcher's error (a budget ran out), or NULL when there is none. */
ZAPGRAM_EXPORT char* zapgram_matcher_error(const zapgram_matcher* matcher);

/* Captures (XGrammar's get_captures; C++: zapgram::Matcher::GetCaptures):
 * (capture name, bytes) for each completion of a rule written
 * `name[capture] ::= ...` or `name[capture="x"] ::= ...` by the text
 * accepted so far, in completion order; masks and draft trees record none,
 * rollback removes those of the undone tokens. deduplicate != 0 keeps only
 * the longest completion of each occurrence (a rule at one start). The
 * list is a copy: free it with zapgram_captures_free. */
typedef struct zapgram_captures zapgram_captures;
ZAPGRAM_EXPORT zapgram_captures* zapgram_matcher_get_captures(const zapgram_matcher* matcher, int deduplicate);
ZAPGRAM_EXPORT size_t zapgram_captures_count(const zapgram_captures* captures);
/* Capture i's name (NUL-terminated), and its bytes (*length of them, which
 * may hold NUL); valid until zapgram_captures_free. */
ZAPGRAM_EXPORT const char* zapgram_captures_name(const zapgram_captures* captures, size_t i);
ZAPGRAM_EXPORT const char* zapgram_captures_bytes(const zapgram_captures* captures, size_t i, size_t* length);
ZAPGRAM_EXPORT void zapgram_captures_free(zapgram_captures* captures);
/* The sampling temperature in effect (rules written `name[temperature=x]`;
 * C++: zapgram::Matcher::GetTemperature): 1 with *temperature set when the
 * current position is inside such a rule (the innermost one's; the largest
 * when parses differ) or the matcher has a default temperature
 * (zapgram_matcher_new_with_temperature), 0 otherwise. */
ZAPGRAM_EXPORT int zapgram_matcher_get_temperature(const zapgram_matcher* matcher, float* temperature);

ZAPGRAM_EXPORT void zapgram_free_string(char* s);

/* A vocabulary given directly (toy models, tests): id i has the bytes
 * tokens[i][0 .. lengths[i]); the ids in eos_ids are special EOS tokens. */
ZAPGRAM_EXPORT zapgram_vocab* zapgram_vocab_from_tokens(const char* const* tokens, const size_t* lengths, size_t count,
                                         const int32_t* eos_ids, size_t eos_count, char** error);

/* ---- Exact constrained sampling (CARS, ARS, RSFT, RS; GCD for comparison) ----
 *
 * A language model as a C function: fill logprobs[0 .. vocab_size) with the
 * natural-log probabilities of the token after prefix[0 .. prefix_length)
 * (summing to 1 within 1e-3; -INFINITY for impossible tokens) and return 0,
 * or return non-zero on failure (the sampling call then fails). vocab_size
 * is zapgram_vocab_size() of the grammar's vocabulary. */
typedef int (*zapgram_lm_callback)(void* user_data, const int32_t* prefix, size_t prefix_length,
                                   float* logprobs, int32_t vocab_size);

typedef struct zapgram_sample_options {
  int32_t max_tokens;   /* tokens before EOS (longer sequences are outside the target) */
  uint64_t seed;
  int64_t max_draws;    /* 0: no limit */
  int64_t max_lm_calls; /* 0: no limit */
} zapgram_sample_options;
/* Defaults: max_tokens 256, seed 0, no limits. */
ZAPGRAM_EXPORT void zapgram_sample_options_init(zapgram_sample_options* options);

typedef struct zapgram_samples zapgram_samples;
/* Draws n samples of the model restricted to the grammar with `method`
 * ("cars", "ars", "rsft", "rs" or "gcd"; options NULL = defaults). Fewer
 * than n when a budget stopped the run. NULL on error (*error set). */
ZAPGRAM_EXPORT zapgram_samples* zapgram_sample(const zapgram_grammar* grammar, zapgram_lm_callback lm, void* user_data,
                                const char* method, size_t n, const zapgram_sample_options* options,
                                char** error);
ZAPGRAM_EXPORT size_t zapgram_samples_count(const zapgram_samples* samples);
/* Sample i's token ids (ending with its EOS id); *length gets their count. */
ZAPGRAM_EXPORT const int32_t* zapgram_samples_tokens(const zapgram_samples* samples, size_t i, size_t* length);
/* The run's statistics as a JSON object (free with zapgram_free_string):
 * method, draws, lm_calls, valid, trie_nodes, trie_bytes, trie_reuse, ... */
ZAPGRAM_EXPORT char* zapgram_samples_stats_json(const zapgram_samples* samples);
ZAPGRAM_EXPORT void zapgram_samples_free(zapgram_samples* samples);

#ifdef __cplusplus
}
#endif

#endif /* ZAPGRAM_ZAPGRAM_H_ */

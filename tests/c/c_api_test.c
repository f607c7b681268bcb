/* The C API end to end, from C: load a real tokenizer, compile builtin:json
 * and a broken grammar, walk a document byte run by byte run, check masks,
 * EOS, rollback and errors; a schema for generation and for validation;
 * draft-tree masks on a toy vocabulary; captures and temperatures.
 * Usage: c_api_test TOKENIZER.json SCHEMA.json; exit 0 = pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "zapgram/zapgram.h"

static int failures = 0;
#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

static int allowed(const uint32_t* words, int32_t id) { return (words[id / 32] >> (id % 32)) & 1; }

/* A toy model over {a, b, c, EOS}: after c it favours EOS, elsewhere letters. */
static int toy_lm(void* user_data, const int32_t* prefix, size_t prefix_length, float* logprobs,
                  int32_t vocab_size) {
  int* calls = (int*)user_data;
  ++*calls;
  if (vocab_size != 4) return 1;
  const int after_c = prefix_length > 0 && prefix[prefix_length - 1] == 2;
  const float p[4] = {0.4f, 0.2f, 0.2f, 0.2f};
  const float q[4] = {0.1f, 0.1f, 0.1f, 0.7f};
  for (int i = 0; i < 4; ++i) logprobs[i] = logf(after_c ? q[i] : p[i]);
  return 0;
}

static int failing_lm(void* user_data, const int32_t* prefix, size_t prefix_length, float* logprobs,
                      int32_t vocab_size) {
  (void)user_data, (void)prefix, (void)prefix_length, (void)logprobs, (void)vocab_size;
  return 7;
}

/* Draft-tree masks: a tree over a toy vocabulary, each row against a
 * matcher fed the node's path; refused and terminated rows zero; the
 * matcher unchanged; a malformed tree is an error. */
static void check_draft_tree(void) {
  const char* tokens[5] = {"[", "1", "]", ",", ""};
  const size_t lengths[5] = {1, 1, 1, 1, 0};
  const int32_t eos_id = 4;
  char* error = NULL;
  zapgram_vocab* vocab = zapgram_vocab_from_tokens(tokens, lengths, 5, &eos_id, 1, &error);
  CHECK(vocab != NULL);
  if (vocab == NULL) return;
  zapgram_grammar* grammar = zapgram_grammar_compile("regex:\\[1(,1)*\\]", NULL, vocab, &error);
  zapgram_vocab_free(vocab);
  CHECK(grammar != NULL);
  if (grammar == NULL) return;
  const size_t words = zapgram_grammar_mask_words(grammar);
  CHECK(words == 1);
  /* 0 -> 1 "[" -> 2 "1" -> 3 "]" -> 4 EOS
   *                      -> 5 ","
   *            -> 6 "]" (refused after "[") */
  const int64_t first_child[7] = {1, 2, 3, 4, -1, -1, -1};
  const int64_t next_sibling[7] = {-1, -1, 6, 5, -1, -1, -1};
  const int64_t draft[7] = {0, 0, 1, 2, 4, 3, 2};
  const int32_t paths[7][4] = {{-1}, {0, -1}, {0, 1, -1}, {0, 1, 2, -1}, {0, 1, 2, 4}, {0, 1, 3, -1}, {0, 2, -1}};
  uint32_t rows[7];
  float temperatures[7];
  memset(rows, 0xA5, sizeof(rows));
  zapgram_matcher* m = zapgram_matcher_new(grammar);
  uint32_t before = 0, after = 0;
  zapgram_matcher_compute_mask(m, &before);
  CHECK(zapgram_matcher_traverse_draft_tree(m, first_child, next_sibling, draft, 7, rows, temperatures, -1.0, &error) ==
        1);
  CHECK(error == NULL);
  for (int i = 0; i < 4; ++i) {
    zapgram_matcher* fed = zapgram_matcher_new(grammar);
    for (int k = 0; k < 4 && paths[i][k] >= 0; ++k) CHECK(zapgram_matcher_accept_token(fed, paths[i][k]) == 1);
    uint32_t expected = 0;
    zapgram_matcher_compute_mask(fed, &expected);
    CHECK(rows[i] == expected);
    CHECK(expected != 0);
    zapgram_matcher_free(fed);
  }
  CHECK(rows[3] == (1u << 4)); /* after "[1]": EOS only */
  CHECK(rows[4] == 0);         /* EOS terminates */
  CHECK(rows[5] == (1u << 1)); /* after "[1,": "1" */
  CHECK(rows[6] == 0);         /* "]" refused after "[" */
  for (int i = 0; i < 7; ++i) CHECK(temperatures[i] == -1.0f);
  zapgram_matcher_compute_mask(m, &after);
  CHECK(after == before);
  /* Malformed: node 1 reached twice. */
  const int64_t cycle[7] = {1, 2, 1, -1, -1, -1, -1};
  CHECK(zapgram_matcher_traverse_draft_tree(m, cycle, next_sibling, draft, 7, rows, NULL, -1.0, &error) == -1);
  CHECK(error != NULL && strstr(error, "reached twice") != NULL);
  zapgram_free_string(error);
  zapgram_matcher_free(m);
  zapgram_grammar_free(grammar);
}

/* Samples of "a" [bc]* "c" with at most 6 tokens before EOS, by every method. */
static void check_sampling(void) {
  const char* tokens[4] = {"a", "b", "c", ""};
  const size_t lengths[4] = {1, 1, 1, 0};
  const int32_t eos_id = 3;
  char* error = NULL;
  zapgram_vocab* vocab = zapgram_vocab_from_tokens(tokens, lengths, 4, &eos_id, 1, &error);
  CHECK(vocab != NULL);
  if (vocab == NULL) return;
  CHECK(zapgram_vocab_size(vocab) == 4);
  zapgram_grammar* grammar = zapgram_grammar_compile("regex:a[bc]*c", NULL, vocab, &error);
  CHECK(grammar != NULL);
  zapgram_vocab_free(vocab);
  if (grammar == NULL) return;
  zapgram_sample_options options;
  zapgram_sample_options_init(&options);
  CHECK(options.max_tokens == 256);
  options.max_tokens = 6;
  options.seed = 5;
  const char* methods[5] = {"cars", "ars", "rsft", "rs", "gcd"};
  for (int m = 0; m < 5; ++m) {
    int calls = 0;
    zapgram_samples* samples = zapgram_sample(grammar, toy_lm, &calls, methods[m], 40, &options, &error);
    CHECK(samples != NULL);
    if (samples == NULL) {
      fprintf(stderr, "%s: %s\n", methods[m], error);
      zapgram_free_string(error);
      continue;
    }
    CHECK(zapgram_samples_count(samples) == 40);
    for (size_t i = 0; i < zapgram_samples_count(samples); ++i) {
      size_t length = 0;
      const int32_t* ids = zapgram_samples_tokens(samples, i, &length);
      CHECK(length >= 3 && length <= 7);
      CHECK(ids[0] == 0 && ids[length - 2] == 2 && ids[length - 1] == eos_id);
      for (size_t k = 1; k + 2 < length; ++k) CHECK(ids[k] == 1 || ids[k] == 2);
    }
    size_t none = 99;
    CHECK(zapgram_samples_tokens(samples, 40, &none) == NULL && none == 0);
    char* stats = zapgram_samples_stats_json(samples);
    char expected[32];
    snprintf(expected, sizeof expected, "\"method\":\"%s\"", methods[m]);
    CHECK(stats != NULL && strstr(stats, expected) != NULL && strstr(stats, "\"trie_reuse\"") != NULL);
    zapgram_free_string(stats);
    CHECK(calls > 0);
    zapgram_samples_free(samples);
  }
  CHECK(zapgram_sample(grammar, failing_lm, NULL, "cars", 3, NULL, &error) == NULL);
  CHECK(error != NULL && strstr(error, "returned 7") != NULL);
  zapgram_free_string(error);
  CHECK(zapgram_sample(grammar, toy_lm, NULL, "mcmc", 3, NULL, &error) == NULL);
  CHECK(error != NULL && strstr(error, "mcmc") != NULL);
  zapgram_free_string(error);
  zapgram_grammar_free(grammar);
}

/* A document |doc| under schema:SCHEMA, fed as bytes: 1 when accepted whole. */
static int schema_accepts(const char* spec, const zapgram_vocab* vocab,
                          const zapgram_grammar_options* options, const char* doc) {
  char* error = NULL;
  zapgram_grammar* grammar =
      zapgram_grammar_compile_with_options(spec, NULL, vocab, options, &error);
  CHECK(grammar != NULL);
  if (grammar == NULL) {
    fprintf(stderr, "%s\n", error);
    zapgram_free_string(error);
    return -1;
  }
  zapgram_matcher* m = zapgram_matcher_new(grammar);
  const int accepted = zapgram_matcher_accept_bytes(m, doc, strlen(doc)) == 1 &&
                       zapgram_matcher_is_accepting(m) == 1;
  zapgram_matcher_free(m);
  zapgram_grammar_free(grammar);
  return accepted;
}

/* Generation (default) and validation grammars of one schema: a pretty,
 * reordered, escaped document is only a validation sentence. */
static void check_schema_purpose(const zapgram_vocab* vocab, const char* schema_path) {
  char spec[4096];
  snprintf(spec, sizeof spec, "schema:%s", schema_path);
  zapgram_grammar_options options;
  zapgram_grammar_options_init(&options);
  CHECK(options.schema_validation == 0 && options.schema_lenient == 0 && options.lark_indenter == 0);
  const char* canonical = "{\"id\": 1, \"name\": \"ab\"}";
  const char* pretty = "\n{\n    \"name\": \"a\\u00e9\",\n    \"id\": 1\n}\n";
  const char* invalid = "{\n    \"name\": \"A\",\n    \"id\": 1\n}";
  CHECK(schema_accepts(spec, vocab, &options, canonical) == 1);
  CHECK(schema_accepts(spec, vocab, NULL, canonical) == 1);
  CHECK(schema_accepts(spec, vocab, &options, pretty) == 0);
  options.schema_validation = 1;
  CHECK(schema_accepts(spec, vocab, &options, canonical) == 1);
  CHECK(schema_accepts(spec, vocab, &options, pretty) == 1);
  CHECK(schema_accepts(spec, vocab, &options, invalid) == 0);
}

/* Canonical fast-forward tokens: after `{"id": 1, "` the schema forces
 * `name"` (spaces may come before the colon); Llama 3 spells it `name` `"`
 * and the quote is open to what follows (`":` is one token), so one token
 * is forced. After `name": "` the quote piece is open again: none. A
 * vocabulary without a tokenizer.json has no encoder: -1 and an error. */
static void check_ff_tokens(const zapgram_vocab* vocab, const char* schema_path) {
  char spec[4096];
  snprintf(spec, sizeof spec, "schema:%s", schema_path);
  char* error = NULL;
  zapgram_grammar* g = zapgram_grammar_compile(spec, NULL, vocab, &error);
  CHECK(g != NULL);
  if (g == NULL) return;
  zapgram_matcher* m = zapgram_matcher_new(g);
  CHECK(zapgram_matcher_accept_bytes(m, "{\"id\": 1, \"", 11) == 1);
  int32_t ids[4] = {-1, -1, -1, -1};
  CHECK(zapgram_matcher_compute_ff_tokens(m, NULL, 0, &error) == 1); /* count only */
  CHECK(error == NULL);
  CHECK(zapgram_matcher_compute_ff_tokens(m, ids, 4, &error) == 1);
  CHECK(ids[0] >= 0 && ids[1] == -1);
  CHECK(zapgram_matcher_accept_token(m, ids[0]) == 1);
  CHECK(zapgram_matcher_compute_ff_tokens(m, ids, 4, &error) == 0); /* `"` stays open */
  CHECK(zapgram_matcher_accept_bytes(m, "\": \"", 4) == 1);
  CHECK(zapgram_matcher_compute_ff_tokens(m, ids, 4, &error) == 0); /* nothing forced */
  CHECK(zapgram_matcher_accept_bytes(m, "ab\"}", 4) == 1);
  CHECK(zapgram_matcher_is_accepting(m) == 1);
  zapgram_matcher_free(m);
  zapgram_grammar_free(g);

  const char* toy[] = {"a", "b", ""};
  const size_t lengths[3] = {1, 1, 0};
  const int32_t eos = 2;
  zapgram_vocab* small = zapgram_vocab_from_tokens(toy, lengths, 3, &eos, 1, &error);
  CHECK(small != NULL);
  if (small == NULL) return;
  g = zapgram_grammar_compile("regex:ab", NULL, small, &error);
  zapgram_vocab_free(small);
  CHECK(g != NULL);
  if (g == NULL) return;
  m = zapgram_matcher_new(g);
  CHECK(zapgram_matcher_compute_ff_tokens(m, ids, 8, &error) == -1);
  CHECK(error != NULL && strstr(error, "tokenizer.json") != NULL);
  zapgram_free_string(error);
  zapgram_matcher_free(m);
  zapgram_grammar_free(g);
}

/* Structural tags as JSON text: string triggers on the real vocabulary,
 * trigger and end tokens on a toy one. */
static void check_structural_tags(const zapgram_vocab* vocab) {
  char* error = NULL;
  const char* text_spec =
      "{\"tags\": [{\"begin\": \"<f>\", \"grammar\": \"root ::= [0-9]+\", \"end\": \"</f>\"}],"
      " \"triggers\": [\"<f>\"]}";
  zapgram_grammar* g = zapgram_grammar_compile_structural_tags(text_spec, strlen(text_spec), vocab, NULL, &error);
  CHECK(g != NULL);
  if (g != NULL) {
    zapgram_matcher* m = zapgram_matcher_new(g);
    CHECK(zapgram_matcher_accept_bytes(m, "hi <f>12", 8) == 1);
    CHECK(zapgram_matcher_accept_bytes(m, "x", 1) == 0); /* inside the tag: digits only */
    CHECK(zapgram_matcher_is_accepting(m) == 0);
    /* A fork goes on from "hi <f>12" alone: the original closing the tag
     * does not close the fork's, nor does the fork's digit move the original. */
    zapgram_matcher* fork = zapgram_matcher_fork(m);
    CHECK(fork != NULL);
    CHECK(zapgram_matcher_accept_bytes(m, "</f> bye", 8) == 1);
    CHECK(zapgram_matcher_is_accepting(m) == 1);
    CHECK(zapgram_matcher_is_accepting(fork) == 0);
    CHECK(zapgram_matcher_accept_bytes(fork, "3", 1) == 1);
    CHECK(zapgram_matcher_accept_bytes(m, "3", 1) == 1); /* free text after the tag */
    CHECK(zapgram_matcher_accept_bytes(fork, "x", 1) == 0);
    CHECK(zapgram_matcher_accept_bytes(fork, "</f>", 4) == 1);
    CHECK(zapgram_matcher_is_accepting(fork) == 1);
    zapgram_matcher_free(fork);
    zapgram_matcher_free(m);
    zapgram_grammar_free(g);
  }

  const char* toy[] = {"<s>", "</s>", "<call>", "ab", "1", "2", "</call>"};
  size_t lengths[7];
  for (size_t k = 0; k < 7; ++k) lengths[k] = strlen(toy[k]);
  const int32_t eos = 1;
  zapgram_vocab* small = zapgram_vocab_from_tokens(toy, lengths, 7, &eos, 1, &error);
  CHECK(small != NULL);
  if (small == NULL) return;
  const char* token_spec =
      "{\"tags\": [{\"begin\": {\"token\": \"<call>\"}, \"grammar\": \"root ::= [0-9]+\","
      " \"end\": {\"token\": 6}}], \"triggers\": [{\"token\": \"<call>\"}]}";
  g = zapgram_grammar_compile_structural_tags(token_spec, strlen(token_spec), small, NULL, &error);
  CHECK(g != NULL);
  if (g != NULL) {
    uint32_t words[1] = {0};
    CHECK(zapgram_grammar_mask_words(g) == 1);
    zapgram_matcher* m = zapgram_matcher_new(g);
    zapgram_matcher_compute_mask(m, words);
    CHECK(words[0] == 0x7Fu); /* free tokens, the trigger, EOS */
    CHECK(zapgram_matcher_accept_token(m, 2) == 1);
    zapgram_matcher_compute_mask(m, words);
    CHECK(words[0] == ((1u << 4) | (1u << 5))); /* the body: digits */
    CHECK(zapgram_matcher_accept_token(m, 4) == 1);
    zapgram_matcher_compute_mask(m, words);
    CHECK(words[0] == ((1u << 4) | (1u << 5) | (1u << 6)));
    CHECK(zapgram_matcher_accept_bytes(m, "</call>", 7) == 0); /* text is not the end token */
    CHECK(zapgram_matcher_accept_token(m, 6) == 1);
    CHECK(zapgram_matcher_is_accepting(m) == 1);
    zapgram_matcher_free(m);
    zapgram_grammar_free(g);
  }
  const char* unknown =
      "{\"tags\": [{\"begin\": {\"token\": \"<nope>\"}, \"grammar\": \"root ::= \\\"x\\\"\", \"end\": \"\"}],"
      " \"triggers\": [{\"token\": \"<nope>\"}]}";
  CHECK(zapgram_grammar_compile_structural_tags(unknown, strlen(unknown), small, NULL, &error) == NULL);
  CHECK(error != NULL && strstr(error, "unknown token \"<nope>\"") != NULL);
  zapgram_free_string(error);
  CHECK(zapgram_grammar_compile_structural_tags("{\"tags\": 3}", 12, small, NULL, &error) == NULL);
  CHECK(error != NULL && strstr(error, "<structural tags>: /tags") != NULL);
  zapgram_free_string(error);
  zapgram_vocab_free(small);
}

/* The shared regex store: off, nothing kept; on, a second read of the same
 * pattern is served by it. */
static void check_regex_cache(const zapgram_vocab* vocab) {
  char* error = NULL;
  uint64_t hits = 0, misses = 0, hits_after = 0;
  size_t bytes = 1;
  zapgram_set_regex_cache_bytes(0);
  zapgram_regex_cache_stats(&hits, &misses, &bytes);
  CHECK(bytes == 0);
  zapgram_grammar* off = zapgram_grammar_compile("regex:[a-f]{3,9}x", NULL, vocab, &error);
  CHECK(off != NULL);
  zapgram_regex_cache_stats(NULL, NULL, &bytes);
  CHECK(bytes == 0);
  zapgram_set_regex_cache_bytes((size_t)1 << 20);
  zapgram_grammar* first = zapgram_grammar_compile("regex:[a-f]{3,9}x", NULL, vocab, &error);
  zapgram_grammar* second = zapgram_grammar_compile("regex:[a-f]{3,9}x", NULL, vocab, &error);
  CHECK(first != NULL && second != NULL);
  zapgram_regex_cache_stats(&hits_after, NULL, &bytes);
  CHECK(bytes > 0);
  CHECK(hits_after > hits);
  zapgram_grammar_free(off);
  zapgram_grammar_free(first);
  zapgram_grammar_free(second);
  zapgram_set_regex_cache_bytes((size_t)16 << 20); /* the default again */
}

/* Persistent compiled grammars: a round trip gives the same masks; another
 * vocabulary, a truncation and a corrupt byte are errors. */
static void check_serialize(zapgram_vocab* vocab) {
  char* error = NULL;
  zapgram_grammar* grammar = zapgram_grammar_compile("builtin:json", NULL, vocab, &error);
  CHECK(grammar != NULL);
  if (grammar == NULL) return;
  size_t length = 0;
  char* bytes = zapgram_grammar_serialize(grammar, &length);
  CHECK(bytes != NULL && length > 40);
  zapgram_grammar* loaded = zapgram_grammar_deserialize(bytes, length, vocab, &error);
  CHECK(loaded != NULL && error == NULL);
  if (loaded != NULL) {
    const size_t words = zapgram_grammar_mask_words(grammar);
    uint32_t* a = calloc(words, sizeof(uint32_t));
    uint32_t* b = calloc(words, sizeof(uint32_t));
    zapgram_matcher* ma = zapgram_matcher_new(grammar);
    zapgram_matcher* mb = zapgram_matcher_new(loaded);
    CHECK(zapgram_matcher_accept_bytes(ma, "{\"k\": [tr", 9) == 1);
    CHECK(zapgram_matcher_accept_bytes(mb, "{\"k\": [tr", 9) == 1);
    zapgram_matcher_compute_mask(ma, a);
    zapgram_matcher_compute_mask(mb, b);
    CHECK(memcmp(a, b, words * sizeof(uint32_t)) == 0);
    zapgram_matcher_free(ma);
    zapgram_matcher_free(mb);
    free(a);
    free(b);
    zapgram_grammar_free(loaded);
  }
  CHECK(zapgram_grammar_deserialize(bytes, length - 1, vocab, &error) == NULL);
  CHECK(error != NULL && strstr(error, "truncated") != NULL);
  zapgram_free_string(error);
  error = NULL;
  bytes[length - 3] ^= 0x20;
  CHECK(zapgram_grammar_deserialize(bytes, length, vocab, &error) == NULL);
  CHECK(error != NULL && strstr(error, "checksum") != NULL);
  zapgram_free_string(error);
  error = NULL;
  bytes[length - 3] ^= 0x20;
  const char* tokens[3] = {"{", "}", ""};
  const size_t lengths[3] = {1, 1, 0};
  const int32_t eos_id = 2;
  zapgram_vocab* other = zapgram_vocab_from_tokens(tokens, lengths, 3, &eos_id, 1, &error);
  CHECK(other != NULL && zapgram_vocab_fingerprint(other) != zapgram_vocab_fingerprint(vocab));
  CHECK(zapgram_grammar_deserialize(bytes, length, other, &error) == NULL);
  CHECK(error != NULL && strstr(error, "another vocabulary") != NULL);
  zapgram_free_string(error);
  zapgram_vocab_free(other);
  zapgram_free_string(bytes);
  zapgram_grammar_free(grammar);
}

/* Captures and temperatures: rule attributes in a grammar given through
 * structural tags (free text "x", then <...> with the grammar inside). */
static void check_captures(void) {
  const char* tokens[8] = {"<", ">", "1", "2", ",", "x", "22", ""};
  const size_t lengths[8] = {1, 1, 1, 1, 1, 1, 2, 0};
  const int32_t eos_id = 7;
  char* error = NULL;
  zapgram_vocab* vocab = zapgram_vocab_from_tokens(tokens, lengths, 8, &eos_id, 1, &error);
  CHECK(vocab != NULL);
  if (vocab == NULL) return;
  const char* tags =
      "{\"tags\": [{\"begin\": \"<\", \"end\": \">\", \"grammar\": "
      "\"root ::= item (\\\",\\\" item)*\\nitem[capture=\\\"n\\\", temperature=0.5] ::= [0-9]+\"}], "
      "\"triggers\": [\"<\"]}";
  zapgram_grammar* grammar = zapgram_grammar_compile_structural_tags(tags, strlen(tags), vocab, NULL, &error);
  zapgram_vocab_free(vocab);
  CHECK(grammar != NULL);
  if (grammar == NULL) {
    fprintf(stderr, "%s\n", error);
    zapgram_free_string(error);
    return;
  }
  zapgram_matcher* m = zapgram_matcher_new(grammar);
  float t = 0;
  CHECK(zapgram_matcher_get_temperature(m, &t) == 0); /* free text: no rule with one */
  CHECK(zapgram_matcher_accept_token(m, 5) == 1);     /* x */
  CHECK(zapgram_matcher_accept_token(m, 0) == 1);     /* < */
  CHECK(zapgram_matcher_get_temperature(m, &t) == 1 && t == 0.5f);
  /* A default temperature answers outside the rule, the rule's inside it. */
  zapgram_matcher* d = zapgram_matcher_new_with_temperature(grammar, 0.7f);
  CHECK(zapgram_matcher_get_temperature(d, &t) == 1 && t == 0.7f);
  CHECK(zapgram_matcher_accept_token(d, 5) == 1 && zapgram_matcher_accept_token(d, 0) == 1); /* x < */
  CHECK(zapgram_matcher_get_temperature(d, &t) == 1 && t == 0.5f);
  zapgram_matcher_free(d);
  d = zapgram_matcher_new_with_temperature(grammar, -1.0f);
  CHECK(zapgram_matcher_get_temperature(d, &t) == 0);
  zapgram_matcher_free(d);
  CHECK(zapgram_matcher_accept_token(m, 2) == 1); /* 1 */
  CHECK(zapgram_matcher_accept_token(m, 4) == 1); /* , */
  CHECK(zapgram_matcher_accept_token(m, 6) == 1); /* 22 */
  CHECK(zapgram_matcher_accept_token(m, 2) == 1); /* 1 */
  zapgram_captures* c = zapgram_matcher_get_captures(m, 1);
  CHECK(zapgram_captures_count(c) == 2);
  if (zapgram_captures_count(c) == 2) {
    size_t length = 0;
    const char* bytes = zapgram_captures_bytes(c, 1, &length);
    CHECK(strcmp(zapgram_captures_name(c, 0), "n") == 0);
    CHECK(length == 3 && memcmp(bytes, "221", 3) == 0);
  }
  zapgram_captures_free(c);
  c = zapgram_matcher_get_captures(m, 0); /* 1, 2, 22, 221 */
  CHECK(zapgram_captures_count(c) == 4);
  zapgram_captures_free(c);
  CHECK(zapgram_matcher_rollback(m, 1) == 1);
  c = zapgram_matcher_get_captures(m, 1);
  CHECK(zapgram_captures_count(c) == 2);
  if (zapgram_captures_count(c) == 2) {
    size_t length = 0;
    const char* bytes = zapgram_captures_bytes(c, 1, &length);
    CHECK(length == 2 && memcmp(bytes, "22", 2) == 0);
  }
  zapgram_captures_free(c);
  /* A fork keeps them. */
  zapgram_matcher* f = zapgram_matcher_fork(m);
  c = zapgram_matcher_get_captures(f, 0); /* 1, 2, 22 */
  CHECK(zapgram_captures_count(c) == 3);
  zapgram_captures_free(c);
  zapgram_matcher_free(f);
  zapgram_matcher_free(m);
  zapgram_grammar_free(grammar);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: c_api_test TOKENIZER.json SCHEMA.json\n");
    return 2;
  }
  char* error = NULL;
  zapgram_vocab* bad = zapgram_vocab_load("/nonexistent/tokenizer.json", &error);
  CHECK(bad == NULL);
  CHECK(error != NULL && strstr(error, "/nonexistent/tokenizer.json") != NULL);
  zapgram_free_string(error);

  zapgram_vocab* vocab = zapgram_vocab_load(argv[1], &error);
  CHECK(vocab != NULL);
  if (vocab == NULL) {
    fprintf(stderr, "%s\n", error);
    return 1;
  }
  CHECK(zapgram_vocab_size(vocab) > 1000);
  int32_t eos[8];
  size_t n_eos = zapgram_vocab_eos_ids(vocab, eos, 8);
  CHECK(n_eos >= 1);

  check_schema_purpose(vocab, argv[2]);
  check_ff_tokens(vocab, argv[2]);
  check_structural_tags(vocab);
  check_regex_cache(vocab);
  check_serialize(vocab);
  check_captures();

  zapgram_grammar* broken = zapgram_grammar_compile("regex:(ab", NULL, vocab, &error);
  CHECK(broken == NULL);
  CHECK(error != NULL && strlen(error) > 0);
  zapgram_free_string(error);

  zapgram_grammar* grammar = zapgram_grammar_compile("builtin:json", NULL, vocab, &error);
  CHECK(grammar != NULL);
  if (grammar == NULL) return 1;
  zapgram_vocab_free(vocab); /* the compiled grammar keeps what it needs */

  size_t words_count = zapgram_grammar_mask_words(grammar);
  uint32_t* words = calloc(words_count, sizeof(uint32_t));
  zapgram_matcher* m = zapgram_matcher_new(grammar);
  size_t n = zapgram_matcher_compute_mask(m, words);
  CHECK(n > 100);
  CHECK(!allowed(words, eos[0]));
  CHECK(zapgram_matcher_accept_bytes(m, "{\"a\": [1, 2", 11) == 1);
  CHECK(zapgram_matcher_accept_bytes(m, "}", 1) == 0); /* not allowed, unchanged */
  CHECK(zapgram_matcher_accept_bytes(m, "]", 1) == 1);
  CHECK(zapgram_matcher_is_accepting(m) == 0);
  CHECK(zapgram_matcher_accept_bytes(m, "}", 1) == 1);
  CHECK(zapgram_matcher_is_accepting(m) == 1);
  zapgram_matcher_compute_mask(m, words);
  CHECK(allowed(words, eos[0]));
  CHECK(zapgram_matcher_accept_token(m, eos[0]) == 1);
  CHECK(zapgram_matcher_is_finished(m) == 1);
  CHECK(zapgram_matcher_rollback(m, 2) == 1); /* EOS and "}" */
  CHECK(zapgram_matcher_is_finished(m) == 0);
  CHECK(zapgram_matcher_is_accepting(m) == 0);
  /* Budget-aware: after {"a": [1, 2] one token ("}") and EOS fit in 2; nothing
     (not even EOS) fits in 1; and the state is unchanged. */
  CHECK(zapgram_matcher_compute_mask_budget(m, words, 1) == 0);
  CHECK(zapgram_matcher_compute_mask_budget(m, words, 2) >= 1);
  CHECK(!allowed(words, eos[0]));
  CHECK(zapgram_matcher_compute_mask_budget(m, words, 0) == 0);
  CHECK(zapgram_matcher_is_accepting(m) == 0);
  CHECK(zapgram_matcher_accept_bytes(m, "}", 1) == 1);
  CHECK(zapgram_matcher_compute_mask_budget(m, words, 1) >= 1); /* the EOS ids */
  CHECK(allowed(words, eos[0]));
  CHECK(zapgram_matcher_rollback(m, 1) == 1);
  CHECK(zapgram_matcher_error(m) == NULL);
  zapgram_matcher_reset(m);
  CHECK(zapgram_matcher_compute_mask(m, words) == n);

  zapgram_matcher_free(m);
  zapgram_grammar_free(grammar);
  free(words);
  check_sampling();
  check_draft_tree();
  if (failures == 0) printf("c_api_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}

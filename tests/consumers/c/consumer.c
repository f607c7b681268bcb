/* A C program that embeds an installed zapgram through pkg-config (see the
 * Makefile beside it): it loads a tokenizer, compiles a grammar for it, and
 * decodes with a stand-in for a model that always picks the highest allowed
 * token id (EOS as soon as the grammar allows it), filling the token mask
 * before every step and accepting the chosen token. It prints what it did and
 * exits 0 only when the matcher reached EOS within the step budget.
 * Built and run by scripts/test_install.sh against a temporary install.
 * Usage: consumer TOKENIZER.json [GRAMMAR] (default regex:(yes|no|maybe)) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <zapgram/zapgram.h>

static int is_allowed(const uint32_t* words, int32_t id) { return (words[id / 32] >> (id % 32)) & 1; }

static int fail(const char* what, char* error) {
  fprintf(stderr, "consumer: %s: %s\n", what, error != NULL ? error : "(no message)");
  zapgram_free_string(error);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s TOKENIZER.json [GRAMMAR]\n", argv[0]);
    return 2;
  }
  const char* spec = argc == 3 ? argv[2] : "regex:(yes|no|maybe)";
  char* error = NULL;
  zapgram_vocab* vocab = zapgram_vocab_load(argv[1], &error);
  if (vocab == NULL) return fail("loading the tokenizer", error);
  int32_t eos_ids[8];
  const size_t eos_count = zapgram_vocab_eos_ids(vocab, eos_ids, 8);
  printf("vocabulary: %d ids, %zu EOS ids\n", zapgram_vocab_size(vocab), eos_count);

  zapgram_grammar* grammar = zapgram_grammar_compile(spec, NULL, vocab, &error);
  if (grammar == NULL) {
    zapgram_vocab_free(vocab);
    return fail("compiling the grammar", error);
  }
  const int32_t vocab_size = zapgram_vocab_size(vocab);
  zapgram_vocab_free(vocab); /* the grammar keeps what it needs */
  const size_t words_count = zapgram_grammar_mask_words(grammar);
  printf("grammar %s: mask of %zu words\n", spec, words_count);

  uint32_t* words = malloc(words_count * sizeof *words);
  zapgram_matcher* matcher = zapgram_matcher_new(grammar);
  int steps = 0;
  for (; steps < 16 && !zapgram_matcher_is_finished(matcher); ++steps) {
    const size_t allowed = zapgram_matcher_compute_mask(matcher, words);
    int32_t chosen = -1;
    for (size_t e = 0; e < eos_count && chosen < 0; ++e) {
      if (is_allowed(words, eos_ids[e])) chosen = eos_ids[e];
    }
    for (int32_t id = vocab_size - 1; id >= 0 && chosen < 0; --id) {
      if (is_allowed(words, id)) chosen = id;
    }
    if (chosen < 0) break;
    const int accepted = zapgram_matcher_accept_token(matcher, chosen);
    printf("step %d: %zu tokens allowed, took id %d (%s)%s\n", steps, allowed, chosen,
           accepted ? "accepted" : "REFUSED", zapgram_matcher_is_finished(matcher) ? ", EOS" : "");
    if (!accepted) break;
  }
  const int finished = zapgram_matcher_is_finished(matcher);
  printf("%s after %d steps\n", finished ? "finished" : "NOT finished", steps);
  zapgram_matcher_free(matcher);
  zapgram_grammar_free(grammar);
  free(words);
  return finished ? 0 : 1;
}

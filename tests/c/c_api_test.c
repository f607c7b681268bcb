/* The C API end to end, from C: load a real tokenizer, compile builtin:json
 * and a broken grammar, walk a document byte run by byte run, check masks,
 * EOS, rollback and errors. Usage: c_api_test TOKENIZER.json; exit 0 = pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_test TOKENIZER.json\n");
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
  CHECK(zapgram_matcher_error(m) == NULL);
  zapgram_matcher_reset(m);
  CHECK(zapgram_matcher_compute_mask(m, words) == n);

  zapgram_matcher_free(m);
  zapgram_grammar_free(grammar);
  free(words);
  if (failures == 0) printf("c_api_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}

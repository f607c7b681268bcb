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

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zapgram_vocab zapgram_vocab;
typedef struct zapgram_grammar zapgram_grammar;
typedef struct zapgram_matcher zapgram_matcher;

/* A Hugging Face tokenizer.json. */
zapgram_vocab* zapgram_vocab_load(const char* tokenizer_json_path, char** error);
void zapgram_vocab_free(zapgram_vocab* vocab);
int32_t zapgram_vocab_size(const zapgram_vocab* vocab); /* ids of a mask */
/* Writes up to `capacity` EOS ids into `ids`; returns how many there are. */
size_t zapgram_vocab_eos_ids(const zapgram_vocab* vocab, int32_t* ids, size_t capacity);

/* Reads and compiles a grammar for `vocab` (which may be freed afterwards). */
zapgram_grammar* zapgram_grammar_compile(const char* spec, const char* data_root,
                                         const zapgram_vocab* vocab, char** error);
void zapgram_grammar_free(zapgram_grammar* grammar);
size_t zapgram_grammar_mask_words(const zapgram_grammar* grammar);

zapgram_matcher* zapgram_matcher_new(const zapgram_grammar* grammar);
void zapgram_matcher_free(zapgram_matcher* matcher);
/* Fills the mask; returns the number of allowed ids. */
size_t zapgram_matcher_compute_mask(zapgram_matcher* matcher, uint32_t* words);
/* 1 when accepted, 0 when not allowed (the state is unchanged). */
int zapgram_matcher_accept_token(zapgram_matcher* matcher, int32_t id);
int zapgram_matcher_accept_bytes(zapgram_matcher* matcher, const char* bytes, size_t length);
/* Undoes the last n accepted tokens; 0 beyond the rollback budget. */
int zapgram_matcher_rollback(zapgram_matcher* matcher, size_t n);
void zapgram_matcher_reset(zapgram_matcher* matcher);
int zapgram_matcher_is_accepting(const zapgram_matcher* matcher);
int zapgram_matcher_is_finished(const zapgram_matcher* matcher);
/* The matcher's error (a budget ran out), or NULL when there is none. */
char* zapgram_matcher_error(const zapgram_matcher* matcher);

void zapgram_free_string(char* s);

#ifdef __cplusplus
}
#endif

#endif /* ZAPGRAM_ZAPGRAM_H_ */

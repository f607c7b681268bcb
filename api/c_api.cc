// The C API (include/zapgram/zapgram.h) over the C++ one: each opaque C
// object owns the C++ object; errors become malloc'ed strings.
#include "zapgram/zapgram.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

struct zapgram_vocab {
  zapgram::Vocabulary vocab;
};
struct zapgram_grammar {
  zapgram::CompiledGrammar grammar;
};
struct zapgram_matcher {
  zapgram::Matcher matcher;
};

namespace {

char* CopyString(std::string_view s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out == nullptr) return nullptr;
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  return out;
}

void SetError(char** error, const absl::Status& status) {
  if (error != nullptr) *error = CopyString(std::string(status.message()));
}

}  // namespace

extern "C" {

zapgram_vocab* zapgram_vocab_load(const char* path, char** error) {
  if (error != nullptr) *error = nullptr;
  absl::StatusOr<zapgram::Vocabulary> v = zapgram::Vocabulary::Load(path == nullptr ? "" : path);
  if (!v.ok()) {
    SetError(error, v.status());
    return nullptr;
  }
  return new zapgram_vocab{*std::move(v)};
}

void zapgram_vocab_free(zapgram_vocab* vocab) { delete vocab; }

int32_t zapgram_vocab_size(const zapgram_vocab* vocab) { return vocab->vocab.padded_size(); }

size_t zapgram_vocab_eos_ids(const zapgram_vocab* vocab, int32_t* ids, size_t capacity) {
  const std::vector<int32_t> eos = vocab->vocab.eos_ids();
  for (size_t i = 0; i < eos.size() && i < capacity; ++i) ids[i] = eos[i];
  return eos.size();
}

zapgram_grammar* zapgram_grammar_compile(const char* spec, const char* data_root,
                                         const zapgram_vocab* vocab, char** error) {
  if (error != nullptr) *error = nullptr;
  absl::StatusOr<zapgram::Grammar> g =
      zapgram::Grammar::Load(spec == nullptr ? "" : spec, data_root == nullptr ? "" : data_root);
  if (!g.ok()) {
    SetError(error, g.status());
    return nullptr;
  }
  absl::StatusOr<zapgram::CompiledGrammar> c = zapgram::CompiledGrammar::Compile(*g, vocab->vocab);
  if (!c.ok()) {
    SetError(error, c.status());
    return nullptr;
  }
  return new zapgram_grammar{*std::move(c)};
}

void zapgram_grammar_free(zapgram_grammar* grammar) { delete grammar; }

size_t zapgram_grammar_mask_words(const zapgram_grammar* grammar) {
  return grammar->grammar.mask_words();
}

zapgram_matcher* zapgram_matcher_new(const zapgram_grammar* grammar) {
  return new zapgram_matcher{zapgram::Matcher(grammar->grammar)};
}

void zapgram_matcher_free(zapgram_matcher* matcher) { delete matcher; }

size_t zapgram_matcher_compute_mask(zapgram_matcher* matcher, uint32_t* words) {
  return matcher->matcher.ComputeMask(words);
}

int zapgram_matcher_accept_token(zapgram_matcher* matcher, int32_t id) {
  return matcher->matcher.AcceptToken(id) ? 1 : 0;
}

int zapgram_matcher_accept_bytes(zapgram_matcher* matcher, const char* bytes, size_t length) {
  return matcher->matcher.AcceptBytes(std::string_view(bytes, length)) ? 1 : 0;
}

int zapgram_matcher_rollback(zapgram_matcher* matcher, size_t n) {
  return matcher->matcher.Rollback(n) ? 1 : 0;
}

void zapgram_matcher_reset(zapgram_matcher* matcher) { matcher->matcher.Reset(); }

int zapgram_matcher_is_accepting(const zapgram_matcher* matcher) {
  return matcher->matcher.IsAccepting() ? 1 : 0;
}

int zapgram_matcher_is_finished(const zapgram_matcher* matcher) {
  return matcher->matcher.IsFinished() ? 1 : 0;
}

char* zapgram_matcher_error(const zapgram_matcher* matcher) {
  const absl::Status status = matcher->matcher.status();
  return status.ok() ? nullptr : CopyString(std::string(status.message()));
}

void zapgram_free_string(char* s) { std::free(s); }

}  // extern "C"

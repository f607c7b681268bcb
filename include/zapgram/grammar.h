// zapgram public API: compiled grammars and byte-level recognition.
//
// A grammar argument (`spec`) is one of
//   PATH.gbnf | PATH.ebnf   GBNF / XGrammar EBNF text
//   builtin:NAME            a bundled grammar (builtin:json = RFC 8259 JSON)
//   regex:PATTERN           texts matching PATTERN as a whole (Python `re` syntax)
// Relative paths are resolved against `data_root` when given.
//
// zapgram::Grammar is immutable after Load and safe to share across threads
// (copies share one compiled form). A Recognizer is per input sequence.
#ifndef ZAPGRAM_GRAMMAR_H_
#define ZAPGRAM_GRAMMAR_H_

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "zapgram/limits.h"

namespace zapgram {

namespace internal {
struct CompiledGrammarData;
struct RecognizerState;
}  // namespace internal

struct GrammarStats {
  size_t rules = 0;          // rules as read
  size_t nonterminals = 0;   // after lowering
  size_t productions = 0;
  size_t rhs_symbols = 0;
  size_t terminals = 0;
  size_t terminal_states = 0;
};

class Grammar {
 public:
  static absl::StatusOr<Grammar> Load(std::string_view spec, std::string_view data_root = {},
                                      const CompileLimits& limits = {});
  // GBNF text; `source_name` prefixes error messages.
  static absl::StatusOr<Grammar> FromGbnf(std::string_view text,
                                          std::string_view source_name = "<text>",
                                          const CompileLimits& limits = {});

  GrammarStats stats() const;
  const internal::CompiledGrammarData& data() const { return *data_; }
  const std::shared_ptr<const internal::CompiledGrammarData>& shared_data() const { return data_; }

 private:
  explicit Grammar(std::shared_ptr<const internal::CompiledGrammarData> data)
      : data_(std::move(data)) {}
  std::shared_ptr<const internal::CompiledGrammarData> data_;
};

class Recognizer {
 public:
  explicit Recognizer(const Grammar& grammar, const RecognizerOptions& options = {});
  ~Recognizer();
  Recognizer(Recognizer&&) noexcept;
  Recognizer& operator=(Recognizer&&) noexcept;

  // true: byte accepted. false: rejected (state unchanged) or a budget ran out
  // (status() is then not ok).
  bool Feed(uint8_t byte);
  size_t FeedBytes(std::string_view bytes);  // bytes accepted before the first rejection
  bool Rollback(size_t n);
  void Reset();

  bool IsAccepting() const;
  bool CanContinue() const;
  std::bitset<256> NextBytes() const;
  size_t Position() const;
  size_t RetainedItems() const;
  absl::Status status() const;

 private:
  Grammar grammar_;
  std::unique_ptr<internal::RecognizerState> state_;
};

}  // namespace zapgram

#endif  // ZAPGRAM_GRAMMAR_H_

// XGrammar's rule attributes: `name[attribute, ...] ::= body`.
//
// What each one means in XGrammar and what zapgram does with it:
//   lazy          the occurrence ends at the first place its body can end.
//                 Its language is then the body's strings that have no
//                 proper prefix in the body's language. For a regular body
//                 that is regular too, and zapgram replaces the body with
//                 that regex, (?&:B|(?~:(?:B)[\s\S]+)) in its own set
//                 operations (grammar/regex_compiler.h): exact. A body that
//                 is not regular (recursive, or with token-level elements)
//                 is refused.
//   capture, capture="name", temperature=x
//                 a name for the text the rule matched (XGrammar's
//                 GetCaptures) and a sampling temperature inside the rule:
//                 neither changes what the grammar matches, so masks are
//                 exact without them; zapgram reads and drops them (it has
//                 no captures API).
//   max_tokens=n, max_chars=n
//                 a budget per occurrence, in model tokens or code points,
//                 that forces the rule to end once spent and that XGrammar
//                 relaxes (with a warning) when the rule cannot end there:
//                 refused, as are the hidden-capture attributes that go with
//                 them (stop_capture, capture_hidden_*).
// An attribute given twice, an unknown one or a malformed value is an error.
//
// Tests: tests/grammar/gbnf_reader_test.cc (RuleAttributes*).
#ifndef ZAPGRAM_GRAMMAR_RULE_ATTRIBUTES_H_
#define ZAPGRAM_GRAMMAR_RULE_ATTRIBUTES_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "grammar/grammar.h"

namespace zapgram::grammar {

struct RuleAttributes {
  bool lazy = false;
};

// Reads the text between the brackets. On error returns false with
// *error_offset (into `text`) and *error the message.
bool ParseRuleAttributes(std::string_view text, RuleAttributes* out, size_t* error_offset,
                         std::string* error);

// Replaces the body of `rule` with the regex of its lazy language (above).
// An error (a body that is not regular) names the rule, without a place.
absl::Status MakeRuleLazy(Grammar& g, RuleId rule);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_RULE_ATTRIBUTES_H_

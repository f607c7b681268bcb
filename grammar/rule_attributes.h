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
//   capture, capture="name"
//                 each completion of an occurrence of the rule while the
//                 matcher accepts text is recorded with the bytes the
//                 occurrence matched, under the rule's name or the name
//                 given (letters, digits, '_', '-', '.'); read back with the
//                 matcher's GetCaptures (masks/captures.h).
//   temperature=x the sampling temperature while inside the rule, a finite
//                 number >= 0: the matcher's GetTemperature
//                 (parser/active_rules.h) gives the innermost one around the
//                 current position.
//                 Neither changes what the grammar matches: masks are those
//                 of the grammar without them. Both are kept on the rule
//                 (grammar::Rule::capture, temperature), which then stays a
//                 rule through the transforms.
//   max_tokens=n, max_chars=n
//                 a budget per occurrence, in model tokens or code points,
//                 that forces the rule to end once spent and that XGrammar
//                 relaxes (with a warning) when the rule cannot end there:
//                 refused, as are the hidden-capture attributes that go with
//                 them (stop_capture, capture_hidden_*).
//   suffix=..., stop=...
//                 (XGrammar's Lark) a lazy rule that ends at a marker:
//                 refused.
// An attribute given twice, an unknown one or a malformed value is an error.
// GBNF/EBNF (`name[...] ::= body`) and Lark (`name[...]: body`, rules only)
// read them with this one parser and give them to ApplyRuleAttributes.
//
// Tests: tests/grammar/gbnf_reader_test.cc (RuleAttributes*),
// tests/grammar/lark_reader_test.cc (LarkRuleAttributes*),
// tests/masks/captures_test.cc.
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
  bool capture = false;
  std::string capture_name;  // empty: the rule's own name
  float temperature = -1.0f;  // negative: none
};

// Reads the text between the brackets. On error returns false with
// *error_offset (into `text`) and *error the message.
bool ParseRuleAttributes(std::string_view text, RuleAttributes* out, size_t* error_offset,
                         std::string* error);

// Gives `rule` the observed attributes (capture, temperature). The caller
// makes a lazy rule lazy (MakeRuleLazy) once the grammar is resolved.
void ApplyRuleAttributes(const RuleAttributes& attributes, Rule& rule);

// Replaces the body of `rule` with the regex of its lazy language (above).
// An error (a body that is not regular) names the rule, without a place.
absl::Status MakeRuleLazy(Grammar& g, RuleId rule);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_RULE_ATTRIBUTES_H_

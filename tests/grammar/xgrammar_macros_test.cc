// XGrammar's macros (grammar/xgrammar_macros.h) read through the GBNF reader:
// TagDispatch and Substring languages against brute-force references over
// every short string of a small alphabet, Regex's dialect case by case
// (XGrammar's meaning of \d \w \s, case folding, `.`, json_string, escapes),
// and the errors for bad macro arguments (each with its place).
#include "grammar/xgrammar_macros.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grammar/byte_automaton.h"
#include "grammar/regex_compiler.h"
#include "gtest/gtest.h"
#include "zapgram/grammar.h"

namespace zapgram::grammar {
namespace {

// Every string over `alphabet` of length 0..max_length.
std::vector<std::string> AllStrings(std::string_view alphabet, size_t max_length) {
  std::vector<std::string> out = {""};
  size_t begin = 0;
  for (size_t length = 1; length <= max_length; ++length) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i) {
      for (char c : alphabet) out.push_back(out[i] + c);
    }
    begin = end;
  }
  return out;
}

bool Accepts(const zapgram::Grammar& grammar, std::string_view text) {
  zapgram::Recognizer recognizer(grammar);
  return recognizer.FeedBytes(text) == text.size() && recognizer.IsAccepting();
}

zapgram::Grammar Load(const std::string& text) {
  absl::StatusOr<zapgram::Grammar> grammar = zapgram::Grammar::FromGbnf(text, "t.gbnf");
  EXPECT_TRUE(grammar.ok()) << grammar.status() << "\n" << text;
  return *std::move(grammar);
}

// ---------------------------------------------------------------- TagDispatch

// A tag dispatch whose bodies are finite sets of strings.
struct DispatchCase {
  std::vector<std::pair<std::string, std::vector<std::string>>> tags;
  std::vector<std::string> excludes;
};

// The reference: free text from `start` runs until the first place where a
// tag or an excluded string ends (the longest one ending there); an excluded
// string kills the branch, a tag continues with one of its bodies.
bool ReferenceAccepts(const DispatchCase& c, bool loop, std::string_view text) {
  std::set<size_t> starts = {0};
  std::set<size_t> done;
  while (!starts.empty()) {
    const size_t start = *starts.begin();
    starts.erase(starts.begin());
    if (!done.insert(start).second) continue;
    size_t end = start;
    std::string_view winner;
    bool winner_is_tag = false;
    while (end < text.size() && winner.empty()) {
      ++end;
      const std::string_view seen = text.substr(start, end - start);
      auto consider = [&](std::string_view pattern, bool is_tag) {
        if (seen.ends_with(pattern) && pattern.size() > winner.size()) {
          winner = pattern;
          winner_is_tag = is_tag;
        }
      };
      for (const auto& [tag, bodies] : c.tags) consider(tag, true);
      for (const std::string& exclude : c.excludes) consider(exclude, false);
    }
    if (winner.empty()) return true;  // free text up to the end
    if (!winner_is_tag) continue;
    for (const auto& [tag, bodies] : c.tags) {
      if (tag != winner) continue;
      for (const std::string& body : bodies) {
        if (text.substr(end).starts_with(body)) {
          const size_t after = end + body.size();
          if (loop) {
            starts.insert(after);
          } else if (after == text.size()) {
            return true;
          }
        }
      }
    }
  }
  return false;
}

std::string DispatchGrammar(const DispatchCase& c, bool loop) {
  std::string text = "root ::= TagDispatch(";
  std::string rules;
  for (size_t i = 0; i < c.tags.size(); ++i) {
    text += "(\"" + c.tags[i].first + "\", body" + std::to_string(i) + "), ";
    rules += "body" + std::to_string(i) + " ::= ";
    for (size_t k = 0; k < c.tags[i].second.size(); ++k) {
      rules += (k ? " | \"" : "\"") + c.tags[i].second[k] + "\"";
    }
    rules += "\n";
  }
  text += "excludes=(";
  for (const std::string& exclude : c.excludes) text += "\"" + exclude + "\", ";
  text += std::string("), loop_after_dispatch=") + (loop ? "true" : "false") + ")\n";
  return text + rules;
}

TEST(XGrammarTagDispatch, LanguageEqualsReferenceOnEveryShortString) {
  const DispatchCase cases[] = {
      {{{"ab", {"c", "cc"}}, {"b", {"x"}}}, {}},                     // "b" ends inside "ab"
      {{{"ab", {"x"}}, {"abc", {"a"}}}, {"ca"}},                     // a tag a prefix of another
      {{{"a", {"b", ""}}}, {"bb"}},                                  // an empty body
      {{{"aba", {"c"}}, {"ba", {"x"}}}, {"xx", "cb"}},               // overlapping tags
      {{}, {"ab", "bc"}},                                            // excludes only
  };
  const std::vector<std::string> texts = AllStrings("abcx", 7);
  for (const DispatchCase& c : cases) {
    for (bool loop : {true, false}) {
      const std::string text = DispatchGrammar(c, loop);
      SCOPED_TRACE(text);
      const zapgram::Grammar grammar = Load(text);
      int mismatches = 0;
      for (const std::string& s : texts) {
        const bool want = ReferenceAccepts(c, loop, s);
        if (Accepts(grammar, s) != want && ++mismatches <= 5) {
          ADD_FAILURE() << "\"" << s << "\": reference " << want;
        }
      }
      EXPECT_EQ(mismatches, 0);
    }
  }
}

TEST(XGrammarTagDispatch, XGrammarsOwnExamples) {
  // test_grammar_matcher_macro.py: test_simple and test_excluded_str.
  const zapgram::Grammar simple = Load(
      "root ::= TagDispatch((\"tag1\", rule1), (\"tag2\", rule2))\n"
      "rule1 ::= \"abcd\"\nrule2 ::= \"efg\"");
  EXPECT_TRUE(Accepts(simple, "tag1abcd"));
  EXPECT_TRUE(Accepts(simple, "tag1abcdtag2efg"));
  EXPECT_TRUE(Accepts(simple, "tag1abcdqqqqtag2efg"));
  EXPECT_TRUE(Accepts(simple, "any text, a partial tag at the end: tag"));
  EXPECT_FALSE(Accepts(simple, "tag1abce"));
  EXPECT_FALSE(Accepts(simple, "ttag1abd"));
  const zapgram::Grammar excluded = Load(
      "root ::= root_dispatch end_tag\n"
      "root_dispatch ::= TagDispatch((\"start\", rule1), excludes=(\"</think>\", \"</conclude>\"))\n"
      "rule1 ::= \"12345\"\nend_tag ::= \"</think>\"");
  EXPECT_TRUE(Accepts(excluded, "start12345</think>"));
  EXPECT_TRUE(Accepts(excluded, "start12345abc</think>"));
  EXPECT_FALSE(Accepts(excluded, "start12345</conclude>"));
  EXPECT_FALSE(Accepts(excluded, "start12345</think>abc"));
}

TEST(XGrammarTagDispatch, OldStopStringArguments) {
  // stop_str: excluded from free text, then one of them (or, with stop_eos,
  // the default, nothing).
  const zapgram::Grammar eos = Load(
      "root ::= TagDispatch((\"<t>\", body), stop_str=(\"END\"))\nbody ::= \"x\"");
  EXPECT_TRUE(Accepts(eos, "a<t>xbEND"));
  EXPECT_TRUE(Accepts(eos, "a<t>xb"));
  EXPECT_FALSE(Accepts(eos, "aENDb"));
  const zapgram::Grammar no_eos = Load(
      "root ::= TagDispatch((\"<t>\", body), stop_eos=false, stop_str=(\"END\", \"FIN\"))\n"
      "body ::= \"x\"");
  EXPECT_TRUE(Accepts(no_eos, "a<t>xbFIN"));
  EXPECT_FALSE(Accepts(no_eos, "a<t>xb"));
}

// ---------------------------------------------------------------- Substring

TEST(XGrammarSubstring, LanguageEqualsReferenceOnEveryShortString) {
  const std::vector<std::vector<std::string>> cases = {
      {"abc", "de", "fg"}, {"a", "", "b", "a", "b"}, {}, {"ab"}, {"a", "a", "a"}};
  for (const std::vector<std::string>& chunks : cases) {
    std::string text = "root ::= Substring(";
    std::set<std::string> language = {""};
    for (size_t i = 0; i < chunks.size(); ++i) {
      text += (i ? ", \"" : "\"") + chunks[i] + "\"";
      std::string s;
      for (size_t j = i; j < chunks.size(); ++j) language.insert(s += chunks[j]);
    }
    text += ")";
    SCOPED_TRACE(text);
    const zapgram::Grammar grammar = Load(text);
    for (const std::string& s : AllStrings("abcdefg", 5)) {
      EXPECT_EQ(Accepts(grammar, s), language.count(s) > 0) << "\"" << s << "\"";
    }
    for (const std::string& s : language) EXPECT_TRUE(Accepts(grammar, s)) << s;
  }
}

// ---------------------------------------------------------------- Regex

struct RegexCase {
  const char* macro;  // the call, as written in a grammar
  std::string text;
  bool accepted;
};

TEST(XGrammarRegex, XGrammarsDialect) {
  const RegexCase cases[] = {
      // \d \w \s are ASCII in XGrammar.
      {R"(Regex("\\d+"))", "123", true},
      {R"(Regex("\\d+"))", "\xD9\xA3", false},  // ARABIC-INDIC DIGIT THREE
      {R"(Regex("\\w+"))", "a_1", true},
      {R"(Regex("\\w+"))", "\xC3\xA9", false},  // é
      {R"(Regex("a\\sb"))", "a\x0B" "b", true},
      {R"(Regex("a\\sb"))", "a\xC2\xA0" "b", false},  // no-break space
      {R"(Regex("\\S"))", "\xC2\xA0", true},
      // Case folding is ASCII only.
      {R"(Regex("(?i)abc"))", "aBC", true},
      {R"(Regex("Σ", flags="i"))", "σ", false},
      {R"(Regex("(?i)[^k]"))", "K", false},
      // `.`: every code point without flags, not \n with flags unless s.
      {R"(Regex("a.b"))", "a\nb", true},
      {R"(Regex("a.b", flags=""))", "a\nb", false},
      {R"(Regex("a.b", flags="u"))", "a\nb", false},
      {R"(Regex("a.b", flags="s"))", "a\nb", true},
      {R"(Regex("a[.]b", flags=""))", "acb", false},
      // Escapes XGrammar has and Python lacks (or reads otherwise).
      {R"(Regex("x\\cAy"))", "x\x01y", true},
      {R"(Regex("x\\ey"))", "x\x1By", true},
      {R"(Regex("\\01"))", std::string("\0" "1", 2), true},
      {R"(Regex("\\u{1F600}"))", "\xF0\x9F\x98\x80", true},
      {R"(Regex("\\q"))", "q", true},  // an escaped letter without a meaning is the letter
      {R"(Regex("[\\b]"))", "\x08", true},
      // json_string: no ", \ or control character anywhere.
      {R"(Regex(".+", json_string=true))", "a\"b", false},
      {R"(Regex(".+", json_string=true))", "a\tb", false},
      {R"(Regex(".+", json_string=true))", "\xE4\xBD\xA0", true},
      {R"(Regex("a|b", json_string=true))", "b", true},
      // Groups.
      {R"(Regex("(?P<n>ab)c"))", "abc", true},
      {R"(Regex("(?<n>ab)+"))", "abab", true},
      {R"(Regex("^[0-9]+$"))", "12", true},
  };
  for (const RegexCase& c : cases) {
    const zapgram::Grammar grammar = Load(std::string("root ::= ") + c.macro);
    EXPECT_EQ(Accepts(grammar, c.text), c.accepted) << c.macro << " on \"" << c.text << "\"";
  }
}

// ---------------------------------------------------------------- errors

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<zapgram::Grammar> grammar = zapgram::Grammar::FromGbnf(text, "t.gbnf");
  return grammar.ok() ? "OK" : std::string(grammar.status().message());
}

// A lookahead at the top level, A(?=X)B or A(?!X)B, read exactly: the
// oracle splits each string into u v with u in A and v in B (each compiled
// on its own) and asks whether v starts (or does not start) with a string of
// X. Every string of up to 5 letters of {a, b, c} is checked.
TEST(XGrammarRegex, LookaheadsAreExactWhereTheMatchDecidesThem) {
  struct Case {
    const char* a;
    const char* x;
    const char* b;
    bool negative;
  };
  const Case cases[] = {
      {"a", "b", "c", false},          // empty: "c" cannot start with "b"
      {"a", "b", "c", true},           // "ac"
      {"a", "b", "[a-c]", false},      // "ab"
      {"", "[ab]", "[a-c]+", false},   // starts with a or b
      {"a", "bc", "[a-c]{2}", true},   // a then two letters, not "bc"
      {"[ab]*", "c", "c[ab]*", false}, // any split works: X decided by B's first byte
      {"a+", "ab|b", "[ab]{2,}", true},
  };
  std::vector<std::string> texts = {""};
  for (size_t k = 0; k < texts.size() && texts[k].size() < 5; ++k) {
    for (char c : std::string("abc")) texts.push_back(texts[k] + c);
  }
  for (const Case& c : cases) {
    const std::string pattern =
        absl::StrCat(c.a, "(?", c.negative ? "!" : "=", c.x, ")", c.b);
    SCOPED_TRACE(pattern);
    absl::StatusOr<TranslatedRegex> translated = TranslateXGrammarRegex(pattern, std::nullopt, false);
    ASSERT_TRUE(translated.ok()) << translated.status();
    absl::StatusOr<ByteDfa> dfa = CompileRegex(translated->pattern, translated->flags, RegexLimits{});
    ASSERT_TRUE(dfa.ok()) << dfa.status();
    absl::StatusOr<ByteDfa> a = CompileRegex(absl::StrCat("(?:", c.a, ")"), 0, RegexLimits{});
    absl::StatusOr<ByteDfa> x = CompileRegex(absl::StrCat("(?:", c.x, ")"), 0, RegexLimits{});
    absl::StatusOr<ByteDfa> b = CompileRegex(absl::StrCat("(?:", c.b, ")"), 0, RegexLimits{});
    ASSERT_TRUE(a.ok() && x.ok() && b.ok());
    int matches = 0;
    for (const std::string& text : texts) {
      bool expected = false;
      for (size_t split = 0; split <= text.size() && !expected; ++split) {
        const std::string u = text.substr(0, split), v = text.substr(split);
        if (!a->Matches(u) || !b->Matches(v)) continue;
        bool starts_with_x = false;
        for (size_t k = 0; k <= v.size(); ++k) starts_with_x = starts_with_x || x->Matches(v.substr(0, k));
        expected = starts_with_x != c.negative;
      }
      EXPECT_EQ(dfa->Matches(text), expected) << "'" << text << "'";
      matches += expected;
    }
    if (std::string_view(c.b) == "c" && !c.negative) {
      EXPECT_EQ(matches, 0);
    } else {
      EXPECT_GT(matches, 0);
    }
  }
}

TEST(XGrammarMacroErrors, BadArgumentsAreReportedWhereTheyAre) {
  const std::pair<const char*, const char*> cases[] = {
      {"root ::= Regex()", "t.gbnf:1:10: Regex(...) takes exactly one pattern, not 0 arguments"},
      {"root ::= Regex(1)",
       "t.gbnf:1:16: Regex(...): the pattern must be a string, not an integer"},
      {"root ::= Regex(\"a\", flags=\"q\")",
       "t.gbnf:1:27: Regex(...): flag 'q' is not supported (flags: i s u)"},
      {"root ::= Regex(\"a\", json_string=1)",
       "t.gbnf:1:33: Regex(...): json_string must be true or false, not an integer"},
      {"root ::= Regex(\"a\", bogus=true)",
       "t.gbnf:1:21: Regex(...) has no argument named 'bogus' (it takes flags, json_string)"},
      {"root ::= Regex(\"a(?=bc)b\")",
       "t.gbnf:1:16: Regex(...): lookahead '(?=' looks past the end of the pattern's match (what "
       "follows the Regex would decide it): not supported at pattern offset 1"},
      {"root ::= Regex(\"(a(?=b))b\")",
       "t.gbnf:1:16: Regex(...): a lookaround inside a group is not supported (only at the top "
       "level of the pattern) at pattern offset 2"},
      {"root ::= Regex(\"a(?<=a)\")",
       "t.gbnf:1:16: Regex(...): lookbehind is not supported at pattern offset 1"},
      {"root ::= Regex(\"a(?=b)b(?=c)c\")",
       "t.gbnf:1:16: Regex(...): only one lookaround per pattern is supported at pattern offset 7"},
      {"root ::= Regex(\"x|a(?=b)b\")",
       "t.gbnf:1:16: Regex(...): a lookaround in a pattern with a top-level '|' is not supported "
       "at pattern offset 3"},
      {"root ::= Regex(\"a\\\\bc\")",
       "t.gbnf:1:16: Regex(...): word boundary '\\b' is not supported at pattern offset 1"},
      {"root ::= Regex(\"a^b\")",
       "t.gbnf:1:16: Regex(...): regex /(?a:a^b)/: anchor ^ or \\A is only supported where "
       "nothing can precede it at offset 5"},
      {"root ::= Regex(\"a\"", "t.gbnf:1:15: unterminated macro call (expected ')')"},
      {"root ::= Regex(\"a\",)", "t.gbnf:1:20: a macro call must not end with ','"},
      {"root ::= Regex(\"a\" \"b\")",
       "t.gbnf:1:20: expected ',' or ')' in the arguments of Regex(...) but found '\"'"},
      {"root ::= Substring(\"a\", b)",
       "t.gbnf:1:25: Substring(...): each chunk must be a string, not a rule name"},
      {"root ::= TagDispatch((\"a\", r), bogus=1)\nr ::= \"x\"",
       "t.gbnf:1:32: TagDispatch(...) has no argument named 'bogus' (it takes "
       "loop_after_dispatch, excludes, stop_eos, stop_str)"},
      {"root ::= TagDispatch((\"\", r))\nr ::= \"x\"",
       "t.gbnf:1:23: TagDispatch(...): a tag must not be empty"},
      {"root ::= TagDispatch((\"a\", \"r\"))",
       "t.gbnf:1:28: TagDispatch(...): the second element of a pair must be a rule name, not a "
       "string"},
      {"root ::= TagDispatch(\"a\")",
       "t.gbnf:1:22: TagDispatch(...): each positional argument must be a pair (\"tag\", rule)"},
      {"root ::= TagDispatch((\"ab\", r), excludes=(\"a\",))\nr ::= \"x\"",
       "t.gbnf:1:10: TagDispatch(...): the excluded string \"a\" is a prefix of the tag \"ab\", "
       "which could then never dispatch"},
      {"root ::= TagDispatch((\"a\", r), excludes=(\"\",))\nr ::= \"x\"",
       "t.gbnf:1:42: TagDispatch(...): excludes must not hold an empty string"},
      {"root ::= TagDispatch((\"a\", r), loop_after_dispatch=1)\nr ::= \"x\"",
       "t.gbnf:1:52: TagDispatch(...): loop_after_dispatch must be true or false, not an "
       "integer"},
      {"root ::= TagDispatch((\"a\", nosuch))", "t.gbnf:1:28: undefined symbol 'nosuch'"},
      {"root ::= TagDispatch((\"a\", r), stop_eos=false)\nr ::= \"x\"",
       "t.gbnf:1:10: TagDispatch(...) with stop_eos=false needs stop strings (stop_str)"},
      {"root ::= Token(-1)",
       "t.gbnf:1:16: Token(...): a token id must not be negative"},
      {"root ::= Token()", "t.gbnf:1:10: Token(...) needs at least one token id"},
      {"root ::= TokenTagDispatch((1, r), excludes=(r,))\nr ::= \"x\"",
       "t.gbnf:1:45: TokenTagDispatch(...): a token must be an id or its text (a string), not a "
       "rule name"},
      {"root ::= TokenTagDispatch((\"<a>\", r), excludes=(\"<a>\",))\nr ::= \"x\"",
       "t.gbnf:1:49: TokenTagDispatch(...): token \"<a>\" is both a trigger and excluded"},
      {"root ::= Token(\"\")", "t.gbnf:1:16: Token(...): a token name must not be empty"},
  };
  for (const auto& [text, message] : cases) {
    EXPECT_EQ(ErrorOf(text), message) << text;
  }
}

TEST(XGrammarMacroErrors, DeepTuplesAreBoundedWithoutRecursion) {
  const std::string text = "root ::= Substring(" + std::string(20000, '(') + "\"a\"" +
                           std::string(20000, ')') + ")";
  EXPECT_EQ(ErrorOf(text),
            "t.gbnf:1:10020: nesting deeper than max_nesting = 10000 (parentheses plus stacked "
            "repetitions)");
}

}  // namespace
}  // namespace zapgram::grammar

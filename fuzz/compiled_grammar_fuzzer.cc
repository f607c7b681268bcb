// libFuzzer target for api/grammar_serializer.cc: CompiledGrammar::
// Deserialize on arbitrary bytes, against a small fixed vocabulary.
//
// Each input is read twice: as it is (the header's checks: magic, version,
// vocabulary fingerprint, length, checksum), and, when it is long enough to
// have a header, with the header's length and checksum rewritten to match
// the payload, so that mutations reach the structural checks (a checksum
// alone is no defence against forged input; the structure must be). Either
// read must give a grammar or a clear status: never a crash, a leak, a
// sanitizer report or an allocation the input's size does not pay for. A
// grammar that loads is then used: a mask, a few tokens from it, some bytes,
// a rollback, so that every table a matcher reads is read.
//
// Seeds: fuzz/seeds/compiled_grammar_fuzzer/ holds the serialized forms of
// the grammars of SeedGrammars() below (recursion, a Lark lexer, a counted
// terminal, a lazy terminal, a JSON Schema, token terminals, builtin:json)
// compiled on FuzzVocabulary(). They were written by this file built as a
// program (it then has a main that writes them, see the end of the file):
//   g++ -std=c++20 -O1 -DZAPGRAM_WRITE_SEEDS -I. -Iinclude fuzz/compiled_grammar_fuzzer.cc \
//     build/libzapgram.a $(pkg-config --libs ...) -o /tmp/seeds && /tmp/seeds fuzz/seeds/compiled_grammar_fuzzer
// (scripts/fuzz_seeds.py documents it; the seeds change with the format
// version or the vocabulary below).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "grammar/checksum.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::fuzz {
namespace {

const Vocabulary& FuzzVocabulary() {
  static const Vocabulary* vocabulary = [] {
    std::vector<std::string> tokens = {"</s>"};
    for (const char* t : {"a", "b", "ab", "ba", "\"", "{", "}", ":", ",", " ", "x", "1", "12", "[", "]", "<", ">",
                          "select", " from", "t", "true", "null", "aa", "bb", "\n", "\\", "\xc3", "\xa9", "-"}) {
      tokens.push_back(t);
    }
    tokens.push_back("");  // an unused id
    absl::StatusOr<Vocabulary> v = Vocabulary::FromTokens(tokens, {0});
    if (!v.ok()) std::abort();
    return new Vocabulary(*std::move(v));
  }();
  return *vocabulary;
}

// Loads `bytes`; when they load, drives a matcher over them.
[[maybe_unused]] void LoadAndUse(std::string_view bytes) {
  CompileLimits limits;
  limits.max_dfa_states = 1u << 14;
  limits.max_productions = 1u << 16;
  limits.max_rhs_symbols = 1u << 20;
  limits.max_lexer_states = 1u << 12;
  absl::StatusOr<CompiledGrammar> g = CompiledGrammar::Deserialize(bytes, FuzzVocabulary(), limits);
  if (!g.ok()) return;
  MatcherOptions options;
  options.limits.max_items_per_set = 1u << 12;
  options.limits.max_work_per_set = 1u << 14;
  options.limits.max_total_items = 1u << 16;
  Matcher m(*g, options);
  std::vector<uint32_t> mask(g->mask_words());
  for (int step = 0; step < 6; ++step) {
    m.ComputeMask(mask.data());
    int32_t pick = -1;
    for (int32_t id = FuzzVocabulary().padded_size() - 1; id >= 0 && pick < 0; --id) {
      if ((mask[id / 32] >> (id % 32)) & 1) pick = id;
    }
    if (pick < 0 || !m.AcceptToken(pick)) break;
  }
  (void)m.Rollback(2);
  (void)m.AcceptBytes("ab");
  (void)m.IsAccepting();
  (void)m.ForcedBytes();
  Recognizer r(g->grammar());
  r.FeedBytes("select a from t");
  (void)r.IsAccepting();
}

}  // namespace
}  // namespace zapgram::fuzz

#ifndef ZAPGRAM_WRITE_SEEDS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  zapgram::fuzz::LoadAndUse(bytes);
  constexpr size_t kHeader = 40;
  if (bytes.size() >= kHeader) {
    const uint64_t length = bytes.size() - kHeader;
    const uint64_t sum = zapgram::grammar::XxHash64(std::string_view(bytes).substr(kHeader));
    std::memcpy(&bytes[24], &length, 8);
    std::memcpy(&bytes[32], &sum, 8);
    zapgram::fuzz::LoadAndUse(bytes);
  }
  return 0;
}

#else  // The seed writer (see the file comment).

#include <fstream>

int main(int argc, char** argv) {
  using namespace zapgram;
  if (argc != 2) return 2;
  LoadOptions lazy;
  lazy.limits.max_eager_regex_states = 4;
  const std::vector<absl::StatusOr<Grammar>> grammars = [&] {
    std::vector<absl::StatusOr<Grammar>> g;
    g.push_back(Grammar::FromText(GrammarFormat::kGbnf, "root ::= (\"a\" | \"b\" root) \"x\"?\n"));
    g.push_back(Grammar::FromText(GrammarFormat::kLark,
                                  "start: \"select\" NAME (\",\" NAME)* \" from\" NAME\nNAME: /[a-z]+/\n"));
    g.push_back(Grammar::FromText(GrammarFormat::kGbnf, "root ::= \"[\" [0-9ab]{35,40} \"]\"\n"));
    g.push_back(Grammar::FromText(GrammarFormat::kRegex, "<(a|b)*a(a|b){3}>", lazy));
    g.push_back(Grammar::FromText(GrammarFormat::kJsonSchema, R"({"enum":[true,null,12]})"));
    g.push_back(Grammar::FromText(GrammarFormat::kGbnf, "root ::= \"a\" Token(3, 5) | \"b\" ExcludeToken(1)\n"));
    g.push_back(Grammar::Load("builtin:json"));
    return g;
  }();
  int n = 0;
  for (const absl::StatusOr<Grammar>& g : grammars) {
    if (!g.ok()) return 1;
    absl::StatusOr<CompiledGrammar> c = CompiledGrammar::Compile(*g, fuzz::FuzzVocabulary());
    if (!c.ok()) return 1;
    std::ofstream(std::string(argv[1]) + "/seed" + std::to_string(n++), std::ios::binary) << c->Serialize();
  }
  return 0;
}

#endif

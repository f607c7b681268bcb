// A C++ program that embeds an installed zapgram through find_package (see
// the CMakeLists.txt beside it). It loads a tokenizer, compiles a JSON Schema
// given as text, and decodes with a stand-in for a model that always takes
// the longest allowed token (EOS as soon as the grammar allows it): the mask
// is filled before every step and the chosen token accepted. It prints each
// step and the text, and exits 0 only when the matcher reached EOS.
// Built and run by scripts/test_install.sh against a temporary install.
// Usage: consumer TOKENIZER.json
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <zapgram/grammar.h>
#include <zapgram/matcher.h>

namespace {

constexpr char kSchema[] = R"({
  "type": "object",
  "properties": {"name": {"type": "string", "maxLength": 6}, "ok": {"type": "boolean"}},
  "required": ["name", "ok"], "additionalProperties": false})";

bool IsAllowed(const std::vector<uint32_t>& words, int32_t id) {
  return (words[id / 32] >> (id % 32)) & 1;
}

int Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "consumer: %s: %s\n", what, std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TOKENIZER.json\n", argv[0]);
    return 2;
  }
  absl::StatusOr<zapgram::Vocabulary> vocab = zapgram::Vocabulary::Load(argv[1]);
  if (!vocab.ok()) return Fail("loading the tokenizer", vocab.status());
  std::printf("vocabulary: %d ids (%d in a mask), %zu EOS ids\n", vocab->size(),
              vocab->padded_size(), vocab->eos_ids().size());

  zapgram::LoadOptions options;
  options.schema.compact = true;
  absl::StatusOr<zapgram::Grammar> grammar =
      zapgram::Grammar::FromText(zapgram::GrammarFormat::kJsonSchema, kSchema, options);
  if (!grammar.ok()) return Fail("reading the schema", grammar.status());
  absl::StatusOr<zapgram::CompiledGrammar> compiled = zapgram::CompiledGrammar::Compile(*grammar, *vocab);
  if (!compiled.ok()) return Fail("compiling the schema", compiled.status());
  const zapgram::GrammarStats stats = grammar->stats();
  std::printf("schema compiled: %zu rules, %zu terminals, masks of %zu words\n", stats.rules,
              stats.terminals, compiled->mask_words());

  zapgram::Matcher matcher(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  const std::vector<int32_t> eos_ids = vocab->eos_ids();
  std::string text;
  int steps = 0;
  for (; steps < 64 && !matcher.IsFinished(); ++steps) {
    const size_t allowed = matcher.ComputeMask(words.data());
    int32_t chosen = -1;
    for (int32_t eos : eos_ids) {
      if (chosen < 0 && IsAllowed(words, eos)) chosen = eos;
    }
    const bool eos_chosen = chosen >= 0;
    for (int32_t id = 0; !eos_chosen && id < vocab->padded_size(); ++id) {
      if (!IsAllowed(words, id) || !vocab->is_normal(id)) continue;
      if (chosen < 0 || vocab->token_bytes(id).size() > vocab->token_bytes(chosen).size()) chosen = id;
    }
    if (chosen < 0 || !matcher.AcceptToken(chosen)) {
      std::printf("step %d: %zu allowed, no acceptable token\n", steps, allowed);
      break;
    }
    const std::string bytes(vocab->token_bytes(chosen));
    text += bytes;
    std::printf("step %d: %zu tokens allowed, took id %d %s\n", steps, allowed, chosen,
                matcher.IsFinished() ? "(EOS)" : ("'" + bytes + "'").c_str());
  }
  if (!matcher.status().ok()) return Fail("decoding", matcher.status());
  std::printf("%s after %d steps: %s\n", matcher.IsFinished() ? "finished" : "NOT finished", steps,
              text.c_str());
  return matcher.IsFinished() ? 0 : 1;
}

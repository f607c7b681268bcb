// libFuzzer target for masks/matcher.cc (and the token trie, token sets and
// mask cache under it): a Matcher driven by fuzz bytes, checked against an
// independent reference on every step.
//
// The fuzz bytes choose one of a few real grammars (builtin:json, llama.cpp's
// arithmetic.gbnf, a JSON Schema in its generation and validation grammars,
// SynCode's calc-like Lark JSON grammar, a counted regex) and then a
// sequence of operations on one Matcher over a small vocabulary (every
// printable ASCII byte plus multi-byte tokens, a split UTF-8 character, EOS):
// mask, accept token, accept bytes, rollback, reset, forced bytes, validate
// tokens. The reference is an unpruned Recognizer (parser/recognizer.h
// without ZapFormat compaction, any rollback) fed the same bytes. Checked:
//   - a mask equals the brute force (each token's bytes fed to the
//     reference; EOS exactly when it accepts), and its count its bits;
//   - an accepted token was in the last mask of that state, a rejected one
//     was not, and the state is unchanged after a rejection;
//   - AcceptBytes is all or nothing, as the reference says;
//   - Rollback within budget succeeds and gives back the mask the state had;
//   - IsAccepting agrees with the reference after every operation;
//   - forced bytes are each the only byte the reference can take;
//   - ValidateTokens returns the longest prefix the reference takes.
// Data: ZAPGRAM_DATA_DIR (compile definition), for the grammar files.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "zapgram/matcher.h"

namespace zapgram::fuzz {
namespace {

constexpr char kSchema[] = R"({"type":"object","properties":{
  "id":{"type":"integer","minimum":-5,"maximum":120},
  "name":{"type":"string","pattern":"^[a-c]{1,3}$"},
  "tags":{"type":"array","items":{"enum":["x","y",true,null]},"maxItems":3},
  "ok":{"type":"boolean"}},
  "required":["id","ok"],"additionalProperties":false})";

const std::vector<std::string>& Tokens() {
  static const std::vector<std::string>* tokens = [] {
    auto* t = new std::vector<std::string>;
    for (int c = 0x20; c < 0x7f; ++c) t->push_back(std::string(1, static_cast<char>(c)));
    for (const char* s : {"\n", "\t", "{\"", "\":", "\": ", ", \"", "\"}", "]}", "[{", "true",
                          "false", "null", "12", "0.", "e+", "-1", "\\u00", "\\\"", "id", "ok",
                          "name", "tags", "\"x\"", "ab", "abc", "+(", "1*", ")/", "  ", "\xc3\xa9",
                          "\xc3", "\xa9", "\xe2\x82\xac", "\xf0\x9f"}) {
      t->push_back(s);
    }
    t->push_back("");  // an unused id (padding)
    return t;
  }();
  return *tokens;
}

int32_t EosId() { return static_cast<int32_t>(Tokens().size()); }

const Vocabulary& Vocab() {
  static const Vocabulary* v = [] {
    std::vector<std::string> tokens = Tokens();
    tokens.push_back("</s>");
    absl::StatusOr<Vocabulary> vocabulary = Vocabulary::FromTokens(tokens, {EosId()});
    ZAPGRAM_FUZZ_CHECK(vocabulary.ok());
    return new Vocabulary(*std::move(vocabulary));
  }();
  return *v;
}

constexpr int kGrammars = 6;

const CompiledGrammar& Compiled(int which) {
  static std::unique_ptr<CompiledGrammar> compiled[kGrammars];
  if (compiled[which] == nullptr) {
    const std::string data = ZAPGRAM_DATA_DIR;
    absl::StatusOr<Grammar> g = absl::InternalError("unset");
    LoadOptions options;
    switch (which) {
      case 0: g = Grammar::Load("builtin:json"); break;
      case 1: g = Grammar::Load("grammars/gbnf/llama.cpp/arithmetic.gbnf", data); break;
      case 2:
      case 3:
        options.schema.purpose = which == 2 ? SchemaPurpose::kGeneration : SchemaPurpose::kValidation;
        g = Grammar::FromText(GrammarFormat::kJsonSchema, kSchema, options);
        break;
      case 4: g = Grammar::Load("grammars/lark/syncode/json.lark", data); break;
      default: g = Grammar::FromText(GrammarFormat::kRegex, "(ab|[a-c]{2,40})(-[0-9]{1,3})*"); break;
    }
    if (!g.ok()) {
      std::fprintf(stderr, "grammar %d: %s\n", which, std::string(g.status().message()).c_str());
      std::abort();
    }
    absl::StatusOr<CompiledGrammar> c = CompiledGrammar::Compile(*g, Vocab());
    ZAPGRAM_FUZZ_CHECK(c.ok());
    compiled[which] = std::make_unique<CompiledGrammar>(*std::move(c));
  }
  return *compiled[which];
}

bool Bit(const std::vector<uint32_t>& words, int32_t id) {
  return (words[static_cast<size_t>(id) / 32] >> (id % 32)) & 1u;
}

// The mask by brute force on the reference; nullopt when its budget ran out.
std::optional<std::vector<uint32_t>> BruteMask(Recognizer& ref, size_t words) {
  std::vector<uint32_t> mask(words, 0);
  const std::vector<std::string>& tokens = Tokens();
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (tokens[id].empty()) continue;
    const size_t fed = ref.FeedBytes(tokens[id]);
    if (!ref.status().ok()) return std::nullopt;
    if (fed == tokens[id].size()) mask[id / 32] |= 1u << (id % 32);
    if (fed > 0) ZAPGRAM_FUZZ_CHECK(ref.Rollback(fed));
  }
  if (ref.IsAccepting()) mask[static_cast<size_t>(EosId()) / 32] |= 1u << (EosId() % 32);
  return mask;
}

void Run(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  const CompiledGrammar& grammar = Compiled(fdp.ConsumeIntegralInRange<int>(0, kGrammars - 1));
  MatcherOptions options;
  options.use_cache = fdp.ConsumeBool();
  options.use_token_sets = fdp.ConsumeBool();
  Matcher matcher(grammar, options);
  RecognizerOptions ref_options;
  ref_options.pruning = false;
  Recognizer ref(grammar.grammar(), ref_options);
  const std::vector<std::string>& tokens = Tokens();
  const int32_t padded = Vocab().padded_size();
  // Bytes of each accepted step (token or byte run) since the last reset,
  // and the mask seen at each depth (masks[d]: after d steps).
  std::vector<size_t> steps;
  std::vector<std::optional<std::vector<uint32_t>>> masks(1);
  std::vector<uint32_t> words(grammar.mask_words());
  size_t step_bytes_total = 0;
  auto push_step = [&](size_t bytes) {
    steps.push_back(bytes);
    step_bytes_total += bytes;
    masks.resize(steps.size() + 1);
    masks.back().reset();
  };
  // The reference takes the bytes the matcher took (ok) or refused (then it
  // must refuse them too, and is put back); false when its budget ran out.
  auto follow = [&](const std::string& bytes, bool ok) {
    const size_t fed = ref.FeedBytes(bytes);
    if (!ref.status().ok()) return false;
    ZAPGRAM_FUZZ_CHECK(ok == (fed == bytes.size()));
    if (ok) {
      push_step(bytes.size());
    } else if (fed > 0) {
      ZAPGRAM_FUZZ_CHECK(ref.Rollback(fed));
    }
    return true;
  };
  auto reset = [&] {
    matcher.Reset();
    ref.Reset();
    steps.clear();
    step_bytes_total = 0;
    masks.assign(1, std::nullopt);
  };
  for (int op_count = 0; op_count < 64 && fdp.remaining_bytes() > 0; ++op_count) {
    std::optional<std::vector<uint32_t>>& known = masks[steps.size()];
    switch (fdp.ConsumeIntegralInRange<int>(0, 6)) {
      case 0: {  // mask
        const size_t allowed = matcher.ComputeMask(words.data());
        if (!matcher.status().ok()) return;
        size_t bits = 0;
        for (uint32_t w : words) bits += static_cast<size_t>(__builtin_popcount(w));
        ZAPGRAM_FUZZ_CHECK(bits == allowed);
        std::optional<std::vector<uint32_t>> brute = BruteMask(ref, words.size());
        if (!brute.has_value()) return;
        ZAPGRAM_FUZZ_CHECK(*brute == words);
        if (known.has_value()) ZAPGRAM_FUZZ_CHECK(*known == words);
        known = words;
        break;
      }
      case 1: {  // accept a token
        const int32_t id = fdp.ConsumeIntegralInRange<int32_t>(0, padded - 1);
        const bool accepting = ref.IsAccepting();
        const bool ok = matcher.AcceptToken(id);
        if (!matcher.status().ok()) return;
        if (known.has_value()) ZAPGRAM_FUZZ_CHECK(ok == Bit(*known, id));
        if (id == EosId()) {
          ZAPGRAM_FUZZ_CHECK(ok == accepting);
          if (ok) {
            ZAPGRAM_FUZZ_CHECK(matcher.IsFinished());
            reset();
          }
          break;
        }
        const std::string& bytes = static_cast<size_t>(id) < tokens.size() ? tokens[id] : "";
        if (bytes.empty()) {
          ZAPGRAM_FUZZ_CHECK(!ok);
          break;
        }
        if (!follow(bytes, ok)) return;
        break;
      }
      case 2: {  // accept bytes
        const std::string bytes = fdp.ConsumeRandomLengthString(8);
        if (bytes.empty()) break;
        const bool ok = matcher.AcceptBytes(bytes);
        if (!matcher.status().ok()) return;
        if (!follow(bytes, ok)) return;
        break;
      }
      case 3: {  // rollback
        const size_t n = fdp.ConsumeIntegralInRange<size_t>(1, 4);
        size_t bytes = 0;
        for (size_t i = 0; i < n && i < steps.size(); ++i) bytes += steps[steps.size() - 1 - i];
        const bool ok = matcher.Rollback(n);
        if (n <= steps.size() && bytes <= options.max_rollback_bytes) ZAPGRAM_FUZZ_CHECK(ok);
        if (n > steps.size()) ZAPGRAM_FUZZ_CHECK(!ok);
        if (!ok) break;
        ZAPGRAM_FUZZ_CHECK(ref.Rollback(bytes));
        steps.resize(steps.size() - n);
        step_bytes_total -= bytes;
        masks.resize(steps.size() + 1);
        // The state is the one this depth had: its mask must come back.
        if (masks.back().has_value()) {
          matcher.ComputeMask(words.data());
          if (!matcher.status().ok()) return;
          ZAPGRAM_FUZZ_CHECK(*masks.back() == words);
        }
        break;
      }
      case 4:
        reset();
        break;
      case 5: {  // forced bytes: each the only byte the reference can take
        const std::string forced = matcher.ForcedBytes();
        if (!matcher.status().ok()) return;
        size_t fed = 0;
        for (char c : forced) {
          ZAPGRAM_FUZZ_CHECK(ref.NextBytes().count() == 1);
          ZAPGRAM_FUZZ_CHECK(ref.Feed(static_cast<uint8_t>(c)));
          ++fed;
        }
        if (fed > 0) ZAPGRAM_FUZZ_CHECK(ref.Rollback(fed));
        break;
      }
      case 6: {  // validate a draft of normal tokens
        std::vector<int32_t> draft;
        const size_t n = fdp.ConsumeIntegralInRange<size_t>(1, 4);
        for (size_t i = 0; i < n; ++i) {
          draft.push_back(fdp.ConsumeIntegralInRange<int32_t>(0, static_cast<int32_t>(tokens.size()) - 2));
        }
        const size_t got = matcher.ValidateTokens(draft);
        if (!matcher.status().ok()) return;
        size_t expected = 0, fed_total = 0;
        for (int32_t id : draft) {
          const std::string& bytes = tokens[static_cast<size_t>(id)];
          const size_t fed = ref.FeedBytes(bytes);
          if (!ref.status().ok()) return;
          fed_total += fed;
          if (fed != bytes.size()) break;
          ++expected;
        }
        if (fed_total > 0) ZAPGRAM_FUZZ_CHECK(ref.Rollback(fed_total));
        ZAPGRAM_FUZZ_CHECK(got == expected);
        break;
      }
    }
    ZAPGRAM_FUZZ_CHECK(matcher.IsAccepting() == ref.IsAccepting());
  }
}

}  // namespace
}  // namespace zapgram::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zapgram::fuzz::Run(data, size);
  return 0;
}

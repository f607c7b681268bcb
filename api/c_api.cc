// The C API (include/zapgram/zapgram.h) over the C++ one: each opaque C
// object owns the C++ object; errors become malloc'ed strings.
#include "zapgram/zapgram.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "sampling/language_model.h"
#include "sampling/samplers.h"
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
struct zapgram_samples {
  std::vector<std::vector<int32_t>> samples;
  std::string stats_json;
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
  return zapgram_grammar_compile_with_options(spec, data_root, vocab, nullptr, error);
}

void zapgram_set_regex_cache_bytes(size_t bytes) { zapgram::Grammar::SetSharedRegexCacheBytes(bytes); }

void zapgram_regex_cache_stats(uint64_t* hits, uint64_t* misses, size_t* bytes) {
  const zapgram::SharedRegexCacheStats stats = zapgram::Grammar::GetSharedRegexCacheStats();
  if (hits != nullptr) *hits = stats.hits;
  if (misses != nullptr) *misses = stats.misses;
  if (bytes != nullptr) *bytes = static_cast<size_t>(stats.bytes);
}

void zapgram_grammar_options_init(zapgram_grammar_options* options) {
  const zapgram::SchemaOptions defaults;
  options->schema_validation = defaults.purpose == zapgram::SchemaPurpose::kValidation ? 1 : 0;
  options->schema_lenient = defaults.lenient ? 1 : 0;
  options->lark_indenter = 0;
}

namespace {

zapgram::LoadOptions LoadOptionsOf(const zapgram_grammar_options* options) {
  zapgram::LoadOptions load_options;
  if (options != nullptr) {
    load_options.schema.purpose = options->schema_validation != 0
                                      ? zapgram::SchemaPurpose::kValidation
                                      : zapgram::SchemaPurpose::kGeneration;
    load_options.schema.lenient = options->schema_lenient != 0;
    load_options.indenter.mode = options->lark_indenter == 1   ? zapgram::IndenterOptions::Mode::kOn
                                 : options->lark_indenter == 2 ? zapgram::IndenterOptions::Mode::kOff
                                                               : zapgram::IndenterOptions::Mode::kAuto;
  }
  return load_options;
}

// The compiled form of a grammar as read, or NULL with *error set.
zapgram_grammar* CompileRead(const absl::StatusOr<zapgram::Grammar>& g, const zapgram_vocab* vocab,
                             char** error) {
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

}  // namespace

zapgram_grammar* zapgram_grammar_compile_with_options(const char* spec, const char* data_root,
                                                      const zapgram_vocab* vocab,
                                                      const zapgram_grammar_options* options,
                                                      char** error) {
  if (error != nullptr) *error = nullptr;
  return CompileRead(zapgram::Grammar::Load(spec == nullptr ? "" : spec,
                                            data_root == nullptr ? "" : data_root,
                                            LoadOptionsOf(options)),
                     vocab, error);
}

zapgram_grammar* zapgram_grammar_compile_structural_tags(const char* json, size_t length,
                                                         const zapgram_vocab* vocab,
                                                         const zapgram_grammar_options* options,
                                                         char** error) {
  if (error != nullptr) *error = nullptr;
  const std::string_view text = json == nullptr ? std::string_view() : std::string_view(json, length);
  return CompileRead(zapgram::Grammar::FromText(zapgram::GrammarFormat::kStructuralTags, text,
                                                LoadOptionsOf(options), "<structural tags>"),
                     vocab, error);
}

void zapgram_grammar_free(zapgram_grammar* grammar) { delete grammar; }

char* zapgram_grammar_serialize(const zapgram_grammar* grammar, size_t* length) {
  const std::string bytes = grammar->grammar.Serialize();
  char* out = CopyString(bytes);
  if (out != nullptr && length != nullptr) *length = bytes.size();
  return out;
}

zapgram_grammar* zapgram_grammar_deserialize(const char* bytes, size_t length, const zapgram_vocab* vocab,
                                             char** error) {
  if (error != nullptr) *error = nullptr;
  const std::string_view view = bytes == nullptr ? std::string_view() : std::string_view(bytes, length);
  absl::StatusOr<zapgram::CompiledGrammar> c = zapgram::CompiledGrammar::Deserialize(view, vocab->vocab);
  if (!c.ok()) {
    SetError(error, c.status());
    return nullptr;
  }
  return new zapgram_grammar{*std::move(c)};
}

uint64_t zapgram_vocab_fingerprint(const zapgram_vocab* vocab) { return vocab->vocab.fingerprint(); }

size_t zapgram_grammar_mask_words(const zapgram_grammar* grammar) {
  return grammar->grammar.mask_words();
}

zapgram_matcher* zapgram_matcher_new(const zapgram_grammar* grammar) {
  return new zapgram_matcher{zapgram::Matcher(grammar->grammar)};
}

zapgram_matcher* zapgram_matcher_new_with_temperature(const zapgram_grammar* grammar, float default_temperature) {
  zapgram::MatcherOptions options;
  options.default_temperature = default_temperature;
  return new zapgram_matcher{zapgram::Matcher(grammar->grammar, options)};
}

void zapgram_matcher_free(zapgram_matcher* matcher) { delete matcher; }

zapgram_matcher* zapgram_matcher_fork(const zapgram_matcher* matcher) {
  return new zapgram_matcher{matcher->matcher.Fork()};
}

size_t zapgram_matcher_compute_mask(zapgram_matcher* matcher, uint32_t* words) {
  return matcher->matcher.ComputeMask(words);
}

size_t zapgram_matcher_compute_mask_budget(zapgram_matcher* matcher, uint32_t* words, int64_t tokens_left) {
  return matcher->matcher.ComputeMask(words, tokens_left);
}

int zapgram_matcher_traverse_draft_tree(const zapgram_matcher* matcher, const int64_t* retrieve_next_token,
                                        const int64_t* retrieve_next_sibling, const int64_t* draft_tokens,
                                        size_t num_nodes, uint32_t* bitmask, float* temperatures,
                                        double time_threshold, char** error) {
  if (error != nullptr) *error = nullptr;
  if (num_nodes > 0 && (retrieve_next_token == nullptr || retrieve_next_sibling == nullptr ||
                        draft_tokens == nullptr || bitmask == nullptr)) {
    SetError(error, absl::InvalidArgumentError("a draft tree array or the bitmask is NULL"));
    return -1;
  }
  zapgram::DraftTree tree;
  tree.retrieve_next_token = absl::MakeConstSpan(retrieve_next_token, num_nodes);
  tree.retrieve_next_sibling = absl::MakeConstSpan(retrieve_next_sibling, num_nodes);
  tree.draft_tokens = absl::MakeConstSpan(draft_tokens, num_nodes);
  zapgram::DraftTreeOptions options;
  options.time_threshold = time_threshold;
  const absl::StatusOr<bool> completed = matcher->matcher.TraverseDraftTree(
      tree, bitmask, temperatures == nullptr ? absl::Span<float>() : absl::MakeSpan(temperatures, num_nodes),
      options);
  if (!completed.ok()) {
    SetError(error, completed.status());
    return -1;
  }
  return *completed ? 1 : 0;
}

int64_t zapgram_matcher_compute_ff_tokens(zapgram_matcher* matcher, int32_t* ids, size_t capacity, char** error) {
  if (error != nullptr) *error = nullptr;
  const absl::StatusOr<std::vector<int32_t>> tokens = matcher->matcher.ComputeFastForwardTokens();
  if (!tokens.ok()) {
    SetError(error, tokens.status());
    return -1;
  }
  std::copy_n(tokens->begin(), std::min(capacity, tokens->size()), ids);
  return static_cast<int64_t>(tokens->size());
}

struct zapgram_captures {
  std::vector<std::pair<std::string, std::string>> items;
};

zapgram_captures* zapgram_matcher_get_captures(const zapgram_matcher* matcher, int deduplicate) {
  return new zapgram_captures{matcher->matcher.GetCaptures(deduplicate != 0)};
}

size_t zapgram_captures_count(const zapgram_captures* captures) { return captures->items.size(); }

const char* zapgram_captures_name(const zapgram_captures* captures, size_t i) {
  return captures->items[i].first.c_str();
}

const char* zapgram_captures_bytes(const zapgram_captures* captures, size_t i, size_t* length) {
  if (length != nullptr) *length = captures->items[i].second.size();
  return captures->items[i].second.data();
}

void zapgram_captures_free(zapgram_captures* captures) { delete captures; }

int zapgram_matcher_get_temperature(const zapgram_matcher* matcher, float* temperature) {
  const std::optional<float> t = matcher->matcher.GetTemperature();
  if (!t.has_value()) return 0;
  if (temperature != nullptr) *temperature = *t;
  return 1;
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

zapgram_vocab* zapgram_vocab_from_tokens(const char* const* tokens, const size_t* lengths, size_t count,
                                         const int32_t* eos_ids, size_t eos_count, char** error) {
  if (error != nullptr) *error = nullptr;
  if ((count > 0 && (tokens == nullptr || lengths == nullptr)) || (eos_count > 0 && eos_ids == nullptr)) {
    SetError(error, absl::InvalidArgumentError("zapgram_vocab_from_tokens: NULL array"));
    return nullptr;
  }
  std::vector<std::string> bytes;
  for (size_t i = 0; i < count; ++i) {
    bytes.emplace_back(tokens[i] == nullptr ? "" : std::string(tokens[i], lengths[i]));
  }
  absl::StatusOr<zapgram::Vocabulary> v =
      zapgram::Vocabulary::FromTokens(bytes, std::vector<int32_t>(eos_ids, eos_ids + eos_count));
  if (!v.ok()) {
    SetError(error, v.status());
    return nullptr;
  }
  return new zapgram_vocab{*std::move(v)};
}

void zapgram_sample_options_init(zapgram_sample_options* options) {
  const zapgram::sampling::SamplerOptions defaults;
  options->max_tokens = defaults.max_tokens;
  options->seed = defaults.seed;
  options->max_draws = defaults.max_draws;
  options->max_lm_calls = defaults.max_lm_calls;
}

zapgram_samples* zapgram_sample(const zapgram_grammar* grammar, zapgram_lm_callback lm, void* user_data,
                                const char* method, size_t n, const zapgram_sample_options* options,
                                char** error) {
  if (error != nullptr) *error = nullptr;
  if (grammar == nullptr || lm == nullptr) {
    SetError(error, absl::InvalidArgumentError("zapgram_sample: NULL grammar or callback"));
    return nullptr;
  }
  absl::StatusOr<zapgram::sampling::Method> parsed =
      zapgram::sampling::ParseMethod(method == nullptr ? "" : method);
  if (!parsed.ok()) {
    SetError(error, parsed.status());
    return nullptr;
  }
  zapgram::sampling::SamplerOptions sampler_options;
  if (options != nullptr) {
    sampler_options.max_tokens = options->max_tokens;
    sampler_options.seed = options->seed;
    sampler_options.max_draws = options->max_draws;
    sampler_options.max_lm_calls = options->max_lm_calls;
  }
  zapgram::sampling::CallbackModel model(grammar->grammar.vocabulary().padded_size(), lm, user_data);
  absl::StatusOr<std::unique_ptr<zapgram::sampling::Sampler>> sampler =
      zapgram::sampling::Sampler::Create(*parsed, grammar->grammar, &model, sampler_options);
  if (!sampler.ok()) {
    SetError(error, sampler.status());
    return nullptr;
  }
  absl::StatusOr<std::vector<std::vector<int32_t>>> samples = (*sampler)->Sample(static_cast<int64_t>(n));
  if (!samples.ok()) {
    SetError(error, samples.status());
    return nullptr;
  }
  return new zapgram_samples{*std::move(samples), zapgram::sampling::StatsJson((*sampler)->stats())};
}

size_t zapgram_samples_count(const zapgram_samples* samples) { return samples->samples.size(); }

const int32_t* zapgram_samples_tokens(const zapgram_samples* samples, size_t i, size_t* length) {
  if (i >= samples->samples.size()) {
    if (length != nullptr) *length = 0;
    return nullptr;
  }
  if (length != nullptr) *length = samples->samples[i].size();
  return samples->samples[i].data();
}

char* zapgram_samples_stats_json(const zapgram_samples* samples) { return CopyString(samples->stats_json); }

void zapgram_samples_free(zapgram_samples* samples) { delete samples; }

}  // extern "C"

// NgramCounter and NgramModel (see ngram_model.h for the model, the storage
// and the file format): counting, Kneser-Ney counts and discounts, the dense
// log-probability fill, and the checked binary reader and writer.
#include "sampling/ngram_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"

namespace zapgram::sampling {
namespace {

constexpr char kMagic[8] = {'Z', 'G', 'N', 'G', 'R', 'A', 'M', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kNoParent = 0xFFFFFFFFu;
constexpr double kMinDiscount = 0.05;
constexpr double kMaxDiscount = 0.95;

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : bytes) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void PutF64(std::string* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutU64(out, bits);
}

// A bounds-checked little-endian reader; callers check sizes up front, so a
// failed read here is an internal inconsistency reported as data loss.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }
  // An unsigned little-endian integer of sizeof(T) bytes.
  template <typename T>
  bool Unsigned(T* v) {
    if (remaining() < sizeof(T)) return false;
    *v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) *v |= static_cast<T>(static_cast<uint8_t>(bytes_[offset_ + i])) << (8 * i);
    offset_ += sizeof(T);
    return true;
  }
  bool U32(uint32_t* v) { return Unsigned(v); }
  bool U64(uint64_t* v) { return Unsigned(v); }
  bool I32(int32_t* v) {
    uint32_t u;
    if (!U32(&u)) return false;
    *v = static_cast<int32_t>(u);
    return true;
  }
  bool F64(double* v) {
    uint64_t bits;
    if (!U64(&bits)) return false;
    std::memcpy(v, &bits, sizeof bits);
    return true;
  }

 private:
  std::string_view bytes_;
  size_t offset_ = 0;
};

absl::Status Corrupt(std::string_view origin, std::string_view what) {
  return absl::DataLossError(absl::StrCat(std::string(origin), ": corrupt n-gram model: ", std::string(what)));
}

}  // namespace

// ---------------------------------------------------------------- documents

std::vector<std::string_view> SplitDocuments(std::string_view text, DocumentSplit split) {
  std::vector<std::string_view> documents;
  if (split == DocumentSplit::kWhole) {
    if (!text.empty()) documents.push_back(text);
    return documents;
  }
  size_t paragraph_begin = std::string_view::npos, paragraph_end = 0;
  size_t line_begin = 0;
  while (line_begin < text.size()) {
    const size_t newline = text.find('\n', line_begin);
    const size_t line_end = newline == std::string_view::npos ? text.size() : newline + 1;  // with its newline
    std::string_view line = text.substr(line_begin, (newline == std::string_view::npos ? text.size() : newline) - line_begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (split == DocumentSplit::kPerLine) {
      if (!line.empty()) documents.push_back(line);
    } else if (line.empty()) {
      if (paragraph_begin != std::string_view::npos) {
        documents.push_back(text.substr(paragraph_begin, paragraph_end - paragraph_begin));
      }
      paragraph_begin = std::string_view::npos;
    } else {
      if (paragraph_begin == std::string_view::npos) paragraph_begin = line_begin;
      paragraph_end = line_end;
    }
    line_begin = line_end;
  }
  if (paragraph_begin != std::string_view::npos) {
    documents.push_back(text.substr(paragraph_begin, paragraph_end - paragraph_begin));
  }
  return documents;
}

// ---------------------------------------------------------------- counting

absl::StatusOr<NgramCounter> NgramCounter::Create(const NgramOptions& options) {
  if (options.order < 1 || options.order > kMaxNgramOrder) {
    return absl::InvalidArgumentError(
        absl::StrCat("n-gram order ", options.order, " outside [1, ", kMaxNgramOrder, "]"));
  }
  if (options.vocab_size < 1 || options.vocab_size == INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("n-gram vocabulary size ", options.vocab_size, " invalid"));
  }
  if (options.eos_id < 0 || options.eos_id >= options.vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("n-gram EOS id ", options.eos_id, " outside [0, ", options.vocab_size, ")"));
  }
  if (options.discount.has_value() && !(*options.discount > 0.0 && *options.discount <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("n-gram discount ", *options.discount, " outside (0, 1]"));
  }
  NgramCounter counter(options);
  counter.parent_.push_back(kNoParent);
  counter.token_.push_back(-1);
  return counter;
}

absl::Status NgramCounter::AddDocument(absl::Span<const int32_t> tokens) {
  const int32_t start = options_.vocab_size;  // S
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= options_.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("document token ", i, " is id ", tokens[i], ", outside [0, ",
                                                     options_.vocab_size, ")"));
    }
  }
  // The document as [S, tokens..., EOS]; position i >= 1 is predicted from
  // the contexts seq[i-k+1 .. i-1], k = 1 .. min(N, i + 1).
  std::vector<int32_t> seq;
  seq.reserve(tokens.size() + 2);
  seq.push_back(start);
  seq.insert(seq.end(), tokens.begin(), tokens.end());
  seq.push_back(options_.eos_id);
  for (size_t i = 1; i < seq.size(); ++i) {
    const uint32_t next = static_cast<uint32_t>(seq[i]);
    uint32_t context = 0;
    ++counts_[(static_cast<uint64_t>(context) << 32) | next];
    const size_t max_order = std::min<size_t>(options_.order, i + 1);
    for (size_t k = 2; k <= max_order; ++k) {
      const int32_t older = seq[i - k + 1];
      const uint64_t key = (static_cast<uint64_t>(context) << 32) | static_cast<uint32_t>(older);
      auto [it, inserted] = children_.try_emplace(key, static_cast<uint32_t>(parent_.size()));
      if (inserted) {
        if (parent_.size() >= kNoParent - 1) {
          return absl::ResourceExhaustedError("n-gram model: more than 2^32 contexts");
        }
        parent_.push_back(context);
        token_.push_back(older);
      }
      context = it->second;
      ++counts_[(static_cast<uint64_t>(context) << 32) | next];
    }
  }
  ++documents_;
  tokens_ += static_cast<int64_t>(tokens.size()) + 1;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<NgramModel>> NgramCounter::Build() const {
  const int32_t start = options_.vocab_size;
  const size_t num_contexts = parent_.size();
  std::vector<uint8_t> depth(num_contexts, 0);
  for (size_t c = 1; c < num_contexts; ++c) depth[c] = depth[parent_[c]] + 1;  // parents come first

  // Kneser-Ney counts: the number of distinct left extensions of each n-gram.
  absl::flat_hash_map<uint64_t, uint64_t> left_extensions;
  left_extensions.reserve(counts_.size());
  for (const auto& [key, raw] : counts_) {
    const uint32_t context = static_cast<uint32_t>(key >> 32);
    if (context == 0) continue;
    ++left_extensions[(static_cast<uint64_t>(parent_[context]) << 32) | (key & 0xFFFFFFFFu)];
  }
  std::vector<std::pair<uint64_t, uint64_t>> adjusted;  // (context << 32 | token, a)
  adjusted.reserve(counts_.size());
  for (const auto& [key, raw] : counts_) {
    const uint32_t context = static_cast<uint32_t>(key >> 32);
    const bool highest = depth[context] + 1 == options_.order;
    const bool starts_at_s = context != 0 && token_[context] == start;
    uint64_t a = raw;
    if (!highest && !starts_at_s) {
      const auto it = left_extensions.find(key);
      if (it == left_extensions.end()) {
        return absl::InternalError("n-gram model: an inner n-gram has no left extension");
      }
      a = it->second;
    }
    if (a > UINT32_MAX) return absl::ResourceExhaustedError("n-gram model: a count exceeds 2^32");
    adjusted.emplace_back(key, a);
  }
  std::sort(adjusted.begin(), adjusted.end());

  auto model = std::unique_ptr<NgramModel>(new NgramModel());
  model->order_ = options_.order;
  model->vocab_size_ = options_.vocab_size;
  model->eos_id_ = options_.eos_id;
  model->parent_ = parent_;
  model->token_ = token_;
  model->first_entry_.assign(num_contexts + 1, 0);
  model->entry_token_.reserve(adjusted.size());
  model->entry_count_.reserve(adjusted.size());
  std::vector<uint64_t> n1(options_.order, 0), n2(options_.order, 0);
  for (const auto& [key, a] : adjusted) {
    const uint32_t context = static_cast<uint32_t>(key >> 32);
    ++model->first_entry_[context + 1];
    model->entry_token_.push_back(static_cast<int32_t>(key & 0xFFFFFFFFu));
    model->entry_count_.push_back(static_cast<uint32_t>(a));
    if (a == 1) ++n1[depth[context]];
    if (a == 2) ++n2[depth[context]];
  }
  for (size_t c = 0; c < num_contexts; ++c) model->first_entry_[c + 1] += model->first_entry_[c];
  model->discounts_.resize(options_.order);
  for (int k = 0; k < options_.order; ++k) {
    double d = 0.5;
    if (n1[k] + 2 * n2[k] > 0) d = static_cast<double>(n1[k]) / static_cast<double>(n1[k] + 2 * n2[k]);
    model->discounts_[k] =
        options_.discount.has_value() ? *options_.discount : std::clamp(d, kMinDiscount, kMaxDiscount);
  }
  model->BuildIndex();
  return model;
}

// ---------------------------------------------------------------- the model

void NgramModel::BuildIndex() {
  const size_t num_contexts = parent_.size();
  children_.clear();
  children_.reserve(num_contexts);
  totals_.assign(num_contexts, 0);
  for (size_t c = 0; c < num_contexts; ++c) {
    if (c > 0) children_.emplace(ChildKey(parent_[c], token_[c]), static_cast<uint32_t>(c));
    for (uint32_t e = first_entry_[c]; e < first_entry_[c + 1]; ++e) totals_[c] += entry_count_[e];
  }
}

absl::Status NgramModel::CheckPrefix(absl::Span<const int32_t> prefix) const {
  // Only the tokens the contexts use matter, but a bad id anywhere is a caller bug.
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i] < 0 || prefix[i] >= vocab_size_) {
      return absl::InvalidArgumentError(absl::StrCat("n-gram model: prefix token ", i, " is id ", prefix[i],
                                                     ", outside [0, ", vocab_size_, ")"));
    }
  }
  return absl::OkStatus();
}

void NgramModel::ContextChain(absl::Span<const int32_t> prefix, std::vector<uint32_t>* chain) const {
  chain->assign(1, 0);
  for (int d = 1; d < order_; ++d) {
    const int64_t index = static_cast<int64_t>(prefix.size()) - d;
    if (index < -1) break;
    const int32_t token = index >= 0 ? prefix[index] : vocab_size_;  // S before the first token
    const auto it = children_.find(ChildKey(chain->back(), token));
    if (it == children_.end()) break;
    chain->push_back(it->second);
    if (index < 0) break;
  }
}

absl::Status NgramModel::NextLogProbs(absl::Span<const int32_t> prefix, std::vector<float>* logprobs) {
  if (absl::Status status = CheckPrefix(prefix); !status.ok()) return status;
  ContextChain(prefix, &chain_scratch_);
  const size_t levels = chain_scratch_.size();
  // weight_above[d]: product of the back-off weights of the levels above d.
  double weight_above[kMaxNgramOrder + 1];
  weight_above[levels - 1] = 1.0;
  double backoff_below = 1.0;  // back-off weight of the level being visited
  for (size_t d = levels; d-- > 0;) {
    const uint32_t c = chain_scratch_[d];
    const double total = static_cast<double>(totals_[c]);
    const double types = static_cast<double>(first_entry_[c + 1] - first_entry_[c]);
    backoff_below = total > 0 ? discounts_[d] * types / total : 1.0;
    if (d > 0) weight_above[d - 1] = weight_above[d] * backoff_below;
  }
  // Every token gets `base`; the tokens with entries get their discounted
  // counts on top, accumulated in scratch_ (all zeros between calls) so that
  // only they need a logarithm.
  const double base = weight_above[0] * backoff_below / static_cast<double>(vocab_size_);
  logprobs->assign(vocab_size_, static_cast<float>(std::log(base)));
  scratch_.resize(vocab_size_, 0.0);
  for (size_t d = 0; d < levels; ++d) {
    const uint32_t c = chain_scratch_[d];
    if (totals_[c] == 0) continue;
    const double scale = weight_above[d] / static_cast<double>(totals_[c]);
    const double discount = discounts_[d];
    for (uint32_t e = first_entry_[c]; e < first_entry_[c + 1]; ++e) {
      scratch_[entry_token_[e]] += scale * std::max(static_cast<double>(entry_count_[e]) - discount, 0.0);
    }
  }
  for (size_t d = 0; d < levels; ++d) {
    const uint32_t c = chain_scratch_[d];
    for (uint32_t e = first_entry_[c]; e < first_entry_[c + 1]; ++e) {
      double& extra = scratch_[entry_token_[e]];
      if (extra == 0.0) continue;  // already written (or nothing to add)
      (*logprobs)[entry_token_[e]] = static_cast<float>(std::log(base + extra));
      extra = 0.0;
    }
  }
  return absl::OkStatus();
}

double NgramModel::Probability(absl::Span<const int32_t> prefix, int32_t token) const {
  if (!CheckPrefix(prefix).ok() || token < 0 || token >= vocab_size_) return 0.0;
  std::vector<uint32_t> chain;
  ContextChain(prefix, &chain);
  double p = 1.0 / static_cast<double>(vocab_size_);
  for (size_t d = 0; d < chain.size(); ++d) {
    const uint32_t c = chain[d];
    if (totals_[c] == 0) continue;
    const double total = static_cast<double>(totals_[c]);
    const auto begin = entry_token_.begin() + first_entry_[c];
    const auto end = entry_token_.begin() + first_entry_[c + 1];
    const auto it = std::lower_bound(begin, end, token);
    const double count = it != end && *it == token ? entry_count_[it - entry_token_.begin()] : 0.0;
    const double types = static_cast<double>(end - begin);
    p = std::max(count - discounts_[d], 0.0) / total + discounts_[d] * types / total * p;
  }
  return p;
}

size_t NgramModel::MemoryBytes() const {
  return parent_.capacity() * sizeof(uint32_t) + token_.capacity() * sizeof(int32_t) +
         first_entry_.capacity() * sizeof(uint32_t) + totals_.capacity() * sizeof(uint64_t) +
         entry_token_.capacity() * sizeof(int32_t) + entry_count_.capacity() * sizeof(uint32_t) +
         children_.capacity() * (sizeof(std::pair<uint64_t, uint32_t>) + 1) +
         scratch_.capacity() * sizeof(double);
}

// ---------------------------------------------------------------- files

std::string NgramModel::Serialize() const {
  std::string out;
  out.reserve(48 + 8 * discounts_.size() + 12 * parent_.size() + 8 * entry_token_.size() + 8);
  out.append(kMagic, sizeof kMagic);
  PutU32(&out, kVersion);
  PutU32(&out, static_cast<uint32_t>(order_));
  PutU32(&out, static_cast<uint32_t>(vocab_size_));
  PutU32(&out, static_cast<uint32_t>(eos_id_));
  PutU64(&out, parent_.size());
  PutU64(&out, entry_token_.size());
  for (double d : discounts_) PutF64(&out, d);
  for (size_t c = 0; c < parent_.size(); ++c) {
    PutU32(&out, parent_[c]);
    PutU32(&out, static_cast<uint32_t>(token_[c]));
    PutU32(&out, first_entry_[c + 1] - first_entry_[c]);
  }
  for (size_t e = 0; e < entry_token_.size(); ++e) {
    PutU32(&out, static_cast<uint32_t>(entry_token_[e]));
    PutU32(&out, entry_count_[e]);
  }
  PutU64(&out, Fnv1a64(out));
  return out;
}

absl::Status NgramModel::Save(const std::string& path) const {
  const std::string bytes = Serialize();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open for writing"));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat(path, ": write error"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<NgramModel>> NgramModel::Load(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(path, "n-gram model");
  if (!bytes.ok()) return bytes.status();
  return Parse(*bytes, path);
}

absl::StatusOr<std::unique_ptr<NgramModel>> NgramModel::Parse(std::string_view bytes, std::string_view origin) {
  constexpr size_t kHeader = sizeof kMagic + 4 * 4 + 8 * 2;
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(origin), ": not a zapgram n-gram model (bad magic header)"));
  }
  if (bytes.size() < kHeader + 8) return Corrupt(origin, absl::StrCat("truncated header (", bytes.size(), " bytes)"));
  Reader reader(bytes.substr(sizeof kMagic));
  uint32_t version = 0, order = 0;
  int32_t vocab_size = 0, eos_id = 0;
  uint64_t num_contexts = 0, num_entries = 0;
  reader.U32(&version);
  reader.U32(&order);
  reader.I32(&vocab_size);
  reader.I32(&eos_id);
  reader.U64(&num_contexts);
  reader.U64(&num_entries);
  if (version != kVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(origin), ": n-gram model version ", version, " (this build reads ", kVersion, ")"));
  }
  if (order < 1 || order > kMaxNgramOrder) return Corrupt(origin, absl::StrCat("order ", order));
  if (vocab_size < 1 || vocab_size == INT32_MAX) return Corrupt(origin, absl::StrCat("vocabulary size ", vocab_size));
  if (eos_id < 0 || eos_id >= vocab_size) return Corrupt(origin, absl::StrCat("EOS id ", eos_id));
  // Sizes against the file length, without overflow: each count is bounded
  // by the bytes left before the multiplication.
  const size_t body = bytes.size() - kHeader - 8;
  if (body < 8ull * order) return Corrupt(origin, "truncated discounts");
  const size_t after_discounts = body - 8ull * order;
  if (num_contexts < 1 || num_contexts > after_discounts / 12 || num_contexts >= kNoParent) {
    return Corrupt(origin, absl::StrCat(num_contexts, " contexts do not fit the file (truncated?)"));
  }
  const size_t after_contexts = after_discounts - 12 * num_contexts;
  if (num_entries > after_contexts / 8 || num_entries > UINT32_MAX) {
    return Corrupt(origin, absl::StrCat(num_entries, " entries do not fit the file (truncated?)"));
  }
  if (after_contexts != 8 * num_entries) {
    return Corrupt(origin, absl::StrCat("file length ", bytes.size(), " does not match its header (truncated or trailing bytes)"));
  }
  Reader tail(bytes.substr(bytes.size() - 8));
  uint64_t checksum = 0;
  tail.U64(&checksum);
  if (checksum != Fnv1a64(bytes.substr(0, bytes.size() - 8))) return Corrupt(origin, "checksum mismatch");

  auto model = std::unique_ptr<NgramModel>(new NgramModel());
  model->order_ = static_cast<int>(order);
  model->vocab_size_ = vocab_size;
  model->eos_id_ = eos_id;
  model->discounts_.resize(order);
  for (uint32_t k = 0; k < order; ++k) {
    double d = 0;
    reader.F64(&d);
    if (!(d > 0.0 && d <= 1.0)) return Corrupt(origin, absl::StrCat("discount of order ", k + 1, " is ", d));
    model->discounts_[k] = d;
  }
  const int32_t start = vocab_size;
  model->parent_.resize(num_contexts);
  model->token_.resize(num_contexts);
  model->first_entry_.assign(num_contexts + 1, 0);
  std::vector<uint8_t> depth(num_contexts, 0);
  absl::flat_hash_map<uint64_t, uint32_t> seen;
  seen.reserve(num_contexts);
  uint64_t entry_sum = 0;
  for (uint64_t c = 0; c < num_contexts; ++c) {
    uint32_t parent = 0, children = 0;
    int32_t token = 0;
    reader.U32(&parent);
    reader.I32(&token);
    reader.U32(&children);
    const std::string where = absl::StrCat("context ", c, " (offset ", sizeof kMagic + reader.offset() - 12, ")");
    if (c == 0) {
      if (parent != kNoParent || token != -1) return Corrupt(origin, absl::StrCat(where, ": not a root"));
    } else {
      if (parent >= c) return Corrupt(origin, absl::StrCat(where, ": parent ", parent, " not before it"));
      if (token < 0 || token > start) return Corrupt(origin, absl::StrCat(where, ": token ", token));
      if (parent != 0 && model->token_[parent] == start) {
        return Corrupt(origin, absl::StrCat(where, ": extends a context that starts at the document start"));
      }
      depth[c] = depth[parent] + 1;
      if (depth[c] >= order) return Corrupt(origin, absl::StrCat(where, ": deeper than the order allows"));
      if (!seen.emplace(ChildKey(parent, token), static_cast<uint32_t>(c)).second) {
        return Corrupt(origin, absl::StrCat(where, ": duplicate context"));
      }
      if (children == 0) return Corrupt(origin, absl::StrCat(where, ": no entries"));
    }
    model->parent_[c] = parent;
    model->token_[c] = token;
    entry_sum += children;
    if (entry_sum > num_entries) return Corrupt(origin, absl::StrCat(where, ": more entries than the header"));
    model->first_entry_[c + 1] = static_cast<uint32_t>(entry_sum);
  }
  if (entry_sum != num_entries) return Corrupt(origin, "context entry counts do not add up to the header");
  model->entry_token_.resize(num_entries);
  model->entry_count_.resize(num_entries);
  for (uint64_t c = 0; c < num_contexts; ++c) {
    int32_t previous = -1;
    for (uint32_t e = model->first_entry_[c]; e < model->first_entry_[c + 1]; ++e) {
      int32_t token = 0;
      uint32_t count = 0;
      reader.I32(&token);
      reader.U32(&count);
      if (token <= previous || token >= vocab_size || count == 0) {
        return Corrupt(origin, absl::StrCat("entry ", e, " of context ", c, ": token ", token, ", count ", count,
                                            " (tokens must increase within [0, V), counts be >= 1)"));
      }
      previous = token;
      model->entry_token_[e] = token;
      model->entry_count_[e] = count;
    }
  }
  model->BuildIndex();
  return model;
}

}  // namespace zapgram::sampling

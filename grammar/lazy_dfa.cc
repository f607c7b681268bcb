// LazyDfa (see lazy_dfa.h): trimming, the on-demand subset step, interning.
#include "grammar/lazy_dfa.h"

#include <algorithm>
#include <utility>

namespace zapgram::grammar {

namespace {

// `nfa` without the states that cannot reach an accepting state: their
// incoming ranges and epsilons are dropped (the states stay, unreachable).
ByteNfa Trim(const ByteNfa& nfa) {
  const uint32_t n = nfa.num_states();
  // Predecessors, in one array (per state a range of it).
  std::vector<uint32_t> reverse_begin(n + 1, 0);
  for (uint32_t s = 0; s < n; ++s) {
    for (const ByteNfa::Range& r : nfa.ranges(s)) ++reverse_begin[r.to + 1];
    for (uint32_t t : nfa.epsilons(s)) ++reverse_begin[t + 1];
  }
  for (uint32_t s = 0; s < n; ++s) reverse_begin[s + 1] += reverse_begin[s];
  std::vector<uint32_t> reverse(reverse_begin[n]);
  {
    std::vector<uint32_t> fill(reverse_begin.begin(), reverse_begin.end() - 1);
    for (uint32_t s = 0; s < n; ++s) {
      for (const ByteNfa::Range& r : nfa.ranges(s)) reverse[fill[r.to]++] = s;
      for (uint32_t t : nfa.epsilons(s)) reverse[fill[t]++] = s;
    }
  }
  std::vector<uint8_t> useful(n, 0);
  std::vector<uint32_t> stack;
  for (uint32_t s = 0; s < n; ++s) {
    if (nfa.accepting(s)) {
      useful[s] = 1;
      stack.push_back(s);
    }
  }
  while (!stack.empty()) {
    const uint32_t s = stack.back();
    stack.pop_back();
    for (uint32_t i = reverse_begin[s]; i < reverse_begin[s + 1]; ++i) {
      const uint32_t p = reverse[i];
      if (!useful[p]) {
        useful[p] = 1;
        stack.push_back(p);
      }
    }
  }
  ByteNfa out;  // state 0 exists already
  for (uint32_t s = 1; s < n; ++s) out.AddState();
  for (uint32_t s = 0; s < n; ++s) {
    if (!useful[s]) continue;
    if (nfa.accepting(s)) out.SetAccepting(s);
    for (const ByteNfa::Range& r : nfa.ranges(s)) {
      if (useful[r.to]) out.AddRange(s, r.lo, r.hi, r.to);
    }
    for (uint32_t t : nfa.epsilons(s)) {
      if (useful[t]) out.AddEpsilon(s, t);
    }
  }
  return out;
}

}  // namespace

LazyDfa::LazyDfa(const ByteNfa& nfa, const std::vector<uint32_t>& starts,
                 std::vector<uint8_t> representatives, uint32_t first_id, uint32_t max_states)
    : nfa_(Trim(nfa)),
      representatives_(std::move(representatives)),
      num_classes_(static_cast<uint32_t>(representatives_.size())),
      first_id_(first_id),
      max_states_(max_states),
      nfa_starts_(starts),
      chunks_(new std::atomic<Chunk*>[PlaceOf(max_states).chunk + 1]) {
  for (uint32_t i = 0; i <= PlaceOf(max_states).chunk; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
  mark_.assign(nfa_.num_states(), 0);
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t start : starts) {
    std::vector<uint32_t> subset = {start};
    EpsilonClosure(nfa_, subset, mark_);
    // A start whose closure has no way to acceptance has an empty language.
    bool live = false;
    for (uint32_t s : subset) live |= nfa_.accepting(s) || !nfa_.ranges(s).empty();
    starts_.push_back(live ? Intern(std::move(subset)) : 0);
  }
}

LazyDfa::~LazyDfa() = default;

uint32_t LazyDfa::Fill(uint32_t state, uint32_t cls) const {
  const Place at = PlaceOf(state - first_id_);
  // A byte no NFA state of the subset reads is dead, known from the flags
  // without the lock (a walk of the token trie from a narrow state meets
  // every first byte once); any thread would store the same 0.
  if (!Flags(state).live_bytes[representatives_[cls]]) {
    chunks_[at.chunk].load(std::memory_order_acquire)->next[static_cast<size_t>(at.offset) * num_classes_ + cls].store(
        0, std::memory_order_release);
    return 0;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t local = state - first_id_;
  std::atomic<uint32_t>& entry =
      chunks_[at.chunk].load(std::memory_order_relaxed)->next[static_cast<size_t>(at.offset) * num_classes_ + cls];
  const uint32_t known = entry.load(std::memory_order_relaxed);
  if (known != kUnknown) return Target(known);  // filled by another thread meanwhile
  const uint8_t byte = representatives_[cls];
  std::vector<uint32_t> next;
  for (uint32_t s : subsets_[local]) {
    for (const ByteNfa::Range& r : nfa_.ranges(s)) {
      if (r.lo <= byte && byte <= r.hi) next.push_back(r.to);
    }
  }
  uint32_t to = 0;
  if (!next.empty()) {
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    EpsilonClosure(nfa_, next, mark_);
    to = Intern(std::move(next));
    if (to == kOverflow) return kOverflow;  // not stored: retried (and refused) next time
  }
  entry.store(to != 0 && Flags(to).accepting ? to | kAcceptingBit : to, std::memory_order_release);
  return to;
}

uint32_t LazyDfa::Intern(std::vector<uint32_t> subset) const {
  auto it = ids_.find(subset);
  if (it != ids_.end()) return it->second;
  const uint32_t local = count_.load(std::memory_order_relaxed);
  if (local >= max_states_) return kOverflow;
  const Place at = PlaceOf(local);
  if (at.offset == 0) {
    const size_t entries = static_cast<size_t>(ChunkStates(at.chunk)) * num_classes_;
    auto chunk = std::make_unique<Chunk>();
    chunk->next.reset(new std::atomic<uint32_t>[entries]);
    for (size_t i = 0; i < entries; ++i) chunk->next[i].store(kUnknown, std::memory_order_relaxed);
    chunk->flags.reset(new StateFlags[ChunkStates(at.chunk)]);
    chunks_[at.chunk].store(chunk.get(), std::memory_order_release);
    owned_chunks_.push_back(std::move(chunk));
  }
  StateFlags& flags = owned_chunks_[at.chunk]->flags[at.offset];
  for (uint32_t s : subset) {
    flags.accepting |= nfa_.accepting(s);
    for (const ByteNfa::Range& r : nfa_.ranges(s)) {
      for (uint32_t b = r.lo; b <= r.hi; ++b) flags.live_bytes.set(b);
    }
  }
  const uint32_t id = first_id_ + local;
  subset_bytes_ += subset.size() * sizeof(uint32_t) * 2 + 64;  // the vector and its map key
  ids_.emplace(subset, id);
  subsets_.push_back(std::move(subset));
  // Publishes the flags written above to readers that acquire the count or
  // a row entry holding `id`.
  count_.store(local + 1, std::memory_order_release);
  return id;
}

size_t LazyDfa::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t nfa_bytes = 0;
  for (uint32_t s = 0; s < nfa_.num_states(); ++s) {
    nfa_bytes += nfa_.ranges(s).size() * sizeof(ByteNfa::Range) + nfa_.epsilons(s).size() * 4 + 64;
  }
  size_t chunk_bytes = 0;
  for (uint32_t k = 0; k < owned_chunks_.size(); ++k) {
    chunk_bytes += sizeof(Chunk) + static_cast<size_t>(ChunkStates(k)) * (num_classes_ * 4 + sizeof(StateFlags));
  }
  return nfa_bytes + chunk_bytes + subset_bytes_;
}

}  // namespace zapgram::grammar

// Closures of the lexed mask walk kept across masks (see closure_memo.h).
#include "masks/closure_memo.h"

namespace zapgram::masks {

bool ClosureMemo::Reserve(size_t bytes) {
  // A new generation keeps ids unique (next_id_ goes on), so ids held by
  // walks under way find nothing rather than another set's steps.
  return budget_.Reserve(bytes, [this] {
    ids_.clear();
    steps_.clear();
  });
}

ClosureMemo::Id ClosureMemo::Intern(absl::Span<const uint32_t> spelling) {
  spelled_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(spelling);
  if (it != ids_.end()) return it->second;
  if (!Reserve(4 * spelling.size() + 64)) return kNone;
  const Id id = next_id_++;
  ids_.try_emplace(std::vector<uint32_t>(spelling.begin(), spelling.end()), id);
  return id;
}

bool ClosureMemo::Find(Id id, uint32_t token, Step* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = steps_.find(std::make_pair(id, token));
  if (it == steps_.end()) return false;
  out->next = it->second.next;
  out->alive = it->second.alive;
  out->accepting = it->second.accepting;
  out->tokens = it->second.tokens;
  found_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void ClosureMemo::Record(Id id, uint32_t token, const Step& step) {
  std::lock_guard<std::mutex> lock(mu_);
  if (steps_.contains(std::make_pair(id, token))) return;
  if (!Reserve(8 * step.tokens.size() + 64)) return;
  steps_.try_emplace(std::make_pair(id, token), step);
}

}  // namespace zapgram::masks

// Closures of the lexed mask walk kept across masks (see closure_memo.h).
#include "masks/closure_memo.h"

namespace zapgram::masks {

uint32_t ClosureMemo::Intern(absl::Span<const uint32_t> spelling) {
  spelled_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(spelling);
  if (it != ids_.end()) return it->second;
  const size_t bytes = 4 * spelling.size() + 64;
  if (bytes_.load(std::memory_order_relaxed) + bytes > budget_bytes_) return kNone;
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
  const uint32_t id = static_cast<uint32_t>(ids_.size());
  ids_.try_emplace(std::vector<uint32_t>(spelling.begin(), spelling.end()), id);
  return id;
}

bool ClosureMemo::Find(uint32_t id, uint32_t token, Step* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = steps_.find((uint64_t{id} << 32) | token);
  if (it == steps_.end()) return false;
  out->next = it->second.next;
  out->alive = it->second.alive;
  out->accepting = it->second.accepting;
  out->tokens = it->second.tokens;
  found_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void ClosureMemo::Record(uint32_t id, uint32_t token, const Step& step) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t bytes = 4 * step.tokens.size() + 64;
  if (bytes_.load(std::memory_order_relaxed) + bytes > budget_bytes_) return;
  if (steps_.try_emplace((uint64_t{id} << 32) | token, step).second) bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace zapgram::masks

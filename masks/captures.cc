// The capture log; what it records and how it bounds its memory: captures.h.
#include "masks/captures.h"

#include <algorithm>

namespace zapgram::masks {

std::string CaptureLog::Text::Bytes(uint64_t from, uint64_t to) const {
  from = std::max(from, begin);
  to = std::min<uint64_t>(to, begin + chars.size());
  if (from >= to) return {};
  std::string out = chars.substr(from - begin, to - from);
  if (no_byte.empty()) return out;
  // Drop the positions without a byte, from the back so indices hold.
  for (auto it = no_byte.rbegin(); it != no_byte.rend(); ++it) {
    if (*it >= from && *it < to) out.erase(*it - from, 1);
  }
  return out;
}

void CaptureLog::Record(const std::vector<parser::Recognizer::Completion>& completions, std::string_view text,
                        const std::vector<uint64_t>& no_byte, uint64_t keep_from) {
  const uint64_t text_end = text_.begin + text_.chars.size();
  text_.chars.append(text.data(), text.size());
  for (uint64_t p : no_byte) text_.no_byte.push_back(text_end + p);
  for (const parser::Recognizer::Completion& c : completions) {
    if (c.end <= c.start || c.start < text_.begin) continue;  // empty; or (never) before the kept text
    auto [it, inserted] = open_.try_emplace({c.nt, c.start}, static_cast<uint32_t>(occurrences_.size()));
    if (inserted) {
      occurrences_.push_back({c.nt, c.start, c.start, static_cast<uint32_t>(events_.size()), false, {}});
    }
    Occurrence& occurrence = occurrences_[it->second];
    // Ends only grow (a step's completions come at its positions, in order):
    // a second completion at the furthest end is a lane's repeat.
    if (!inserted && c.end <= occurrence.longest_end) continue;
    occurrence.longest_end = c.end;
    events_.push_back({it->second, c.end});
  }
  KeepFrom(keep_from);
}

void CaptureLog::KeepFrom(uint64_t position) {
  if (position <= text_.begin) return;
  // No completion will start before `position`: freeze the occurrences
  // that did, then drop the text before it.
  for (auto it = open_.begin(); it != open_.end();) {
    Occurrence& occurrence = occurrences_[it->second];
    if (occurrence.start >= position) {
      ++it;
      continue;
    }
    Text& own = occurrence.text;
    own.begin = occurrence.start;
    const uint64_t end = std::min<uint64_t>(occurrence.longest_end, text_.begin + text_.chars.size());
    own.chars = text_.chars.substr(occurrence.start - text_.begin, end - occurrence.start);
    for (uint64_t p : text_.no_byte) {
      if (p >= occurrence.start && p < end) own.no_byte.push_back(p);
    }
    occurrence.frozen = true;
    open_.erase(it++);
  }
  const uint64_t drop = std::min<uint64_t>(position - text_.begin, text_.chars.size());
  text_.chars.erase(0, drop);
  text_.begin += drop;
  std::erase_if(text_.no_byte, [&](uint64_t p) { return p < text_.begin; });
}

void CaptureLog::Truncate(uint64_t position) {
  while (!events_.empty() && events_.back().end > position) {
    Occurrence& occurrence = occurrences_[events_.back().occurrence];
    occurrence.longest_end = std::min(occurrence.longest_end, position);
    events_.pop_back();
  }
  // Occurrences whose first event went: nothing refers to them.
  while (!occurrences_.empty() && occurrences_.back().first_event >= events_.size()) {
    const Occurrence& occurrence = occurrences_.back();
    if (!occurrence.frozen) open_.erase({occurrence.nt, occurrence.start});
    occurrences_.pop_back();
  }
  if (position < text_.begin) position = text_.begin;  // (never: rollback stays in the kept text)
  text_.chars.resize(std::min<uint64_t>(text_.chars.size(), position - text_.begin));
  while (!text_.no_byte.empty() && text_.no_byte.back() >= position) text_.no_byte.pop_back();
}

std::vector<std::pair<std::string, std::string>> CaptureLog::Get(const parser::FlatGrammar& grammar,
                                                                 bool deduplicate) const {
  std::vector<uint32_t> last;
  if (deduplicate) {
    last.assign(occurrences_.size(), 0);
    for (uint32_t i = 0; i < events_.size(); ++i) last[events_[i].occurrence] = i;
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (uint32_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    if (deduplicate && last[e.occurrence] != i) continue;
    const Occurrence& occurrence = occurrences_[e.occurrence];
    const Text& text = occurrence.frozen ? occurrence.text : text_;
    out.emplace_back(grammar.capture_names[grammar.CaptureOf(occurrence.nt) - 1],
                     text.Bytes(occurrence.start, e.end));
  }
  return out;
}

size_t CaptureLog::frozen_bytes() const {
  size_t bytes = 0;
  for (const Occurrence& o : occurrences_) bytes += o.text.chars.size();
  return bytes;
}

}  // namespace zapgram::masks

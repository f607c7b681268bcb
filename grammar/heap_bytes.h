// Heap bytes held by the standard containers the grammar forms are made
// of, for the memory_bytes() accounting of Grammar, FlatGrammar and the
// compiled grammar (budgets: zapgram/matcher.h, CompiledGrammar::memory_bytes).
// Capacities, not sizes: what the allocator really holds. A string short
// enough for the small-string buffer holds nothing on the heap; that buffer's
// size is whatever an empty string's capacity is in this standard library.
#ifndef ZAPGRAM_GRAMMAR_HEAP_BYTES_H_
#define ZAPGRAM_GRAMMAR_HEAP_BYTES_H_

#include <cstddef>
#include <string>
#include <vector>

namespace zapgram::grammar {

inline size_t HeapBytes(const std::string& s) {
  static const size_t kInline = std::string().capacity();
  return s.capacity() > kInline ? s.capacity() + 1 : 0;
}

// The vector's buffer (its elements' own heap not included).
template <typename T>
size_t HeapBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

// The buffer and every string's heap.
inline size_t HeapBytes(const std::vector<std::string>& v) {
  size_t bytes = v.capacity() * sizeof(std::string);
  for (const std::string& s : v) bytes += HeapBytes(s);
  return bytes;
}

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_HEAP_BYTES_H_

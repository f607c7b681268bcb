// Determinized regex DFAs shared by every grammar the process compiles.
//
// A server compiles a new grammar per request (a JSON Schema each time),
// and most of a schema's compile time is determinizing its regular
// terminals (grammar/regex_compiler.h). Many of those recur from schema to
// schema: the string body under each maxLength, the `format`s (date-time,
// uri, email), common patterns, number forms. Measured on the MaskBench
// every-16th sample (726 schemas in one process, Llama 3): 19,456
// determinizations, 9,940 of them of a pattern an earlier schema had
// already determinized, 20 % of the determinization time; with the store,
// compile p90 10.1 -> 8.3 ms and p50 1.49 -> 1.33 ms.
//
// RegexDfaCache (one per load) looks here before it determinizes, and adds
// what it built. An entry is kept under RegexDfaCache's key (pattern,
// flags, limits except the DFA state limit) with the state limit it was
// built under; it answers a later ask by the same rule RegexDfaCache uses
// (RegexDfaCache::Answers): a DFA built within a limit answers any larger
// one, an overflow any smaller one. A hit copies the DFA (a vector copy,
// against a determinization), so the asking load owns what it gets, as
// before.
//
// Budget: the DFAs' bytes, least recently used first out (16 MiB by
// default; SetSharedRegexCacheBytes in include/zapgram/grammar.h; 0 turns
// the store off). Thread-safe (one mutex: a lookup is a hash and a copy,
// next to a compile of milliseconds).
//
// Exactness: determinization is a function of the key (the RegexPieces a
// load keeps only spare work), so a grammar compiles to the same tables
// whether its DFAs came from here or not (tests/grammar/
// shared_regex_dfas_test.cc compares the tables' digests of MaskBench
// schemas compiled with the store off, filling it, and served by it).
#ifndef ZAPGRAM_GRAMMAR_SHARED_REGEX_DFAS_H_
#define ZAPGRAM_GRAMMAR_SHARED_REGEX_DFAS_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "grammar/byte_automaton.h"

namespace zapgram::grammar {

struct SharedRegexStats {
  uint64_t hits = 0, misses = 0, entries = 0, bytes = 0, evictions = 0;
};

class SharedRegexDfas {
 public:
  // 16 MiB held 8,900 of the 9,900 repeats of the sample above (32 MiB:
  // 9,200, for 20 MB more RSS).
  static constexpr size_t kDefaultBudgetBytes = size_t{16} << 20;
  explicit SharedRegexDfas(size_t budget_bytes) : budget_bytes_(budget_bytes) {}

  // The process's store.
  static SharedRegexDfas& Process();

  // Copies into *out the entry under `key` that answers a determinization
  // under `max_dfa_states`; false when there is none.
  bool Find(const std::string& key, uint32_t max_dfa_states, absl::StatusOr<ClassDfa>* out);
  // Keeps a copy of `built` (made under `max_dfa_states`), replacing an
  // entry under `key`; nothing when it alone passes the budget.
  void Add(const std::string& key, uint32_t max_dfa_states, const absl::StatusOr<ClassDfa>& built);

  // Evicts down to the new budget now (0: empty and off).
  void set_budget_bytes(size_t bytes);
  size_t budget_bytes() const;
  SharedRegexStats stats() const;

 private:
  struct Entry {
    std::shared_ptr<const absl::StatusOr<ClassDfa>> built;
    uint32_t max_dfa_states = 0;
    size_t bytes = 0;
    std::list<const std::string*>::iterator lru;
  };
  void EvictDownTo(size_t budget);  // with mu_ held
  mutable std::mutex mu_;
  size_t budget_bytes_;
  size_t bytes_ = 0;
  absl::node_hash_map<std::string, Entry> entries_;  // nodes stay put: lru_ points at keys
  std::list<const std::string*> lru_;  // front = most recently used
  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_SHARED_REGEX_DFAS_H_

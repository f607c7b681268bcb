// Captures: the text of each completion of a captured rule (XGrammar's
// `rule[capture]`, `rule[capture="name"]` and GrammarMatcher.get_captures;
// grammar/rule_attributes.h).
//
// What is recorded (XGrammar's documented meaning). Each time an occurrence
// of a captured rule completes while the matcher accepts text (AcceptToken,
// AcceptBytes and the draft-tree walk's committed copies; never a mask, a
// trie walk, ValidateTokens, ForcedBytes or a fast-forward search), one
// event (capture name, the bytes the occurrence matched) is recorded, in
// completion order. Rollback removes the events of the steps it undoes.
// The parser keeps every parse alive, so one occurrence (a rule, a start)
// may complete at several ends (`num[capture] ::= [0-9]+` completes after
// each digit), and completions of parses that die later stay recorded.
// Get(deduplicate = true) keeps, per occurrence, its last (longest)
// completion only, at that completion's place in the order; false gives
// every event. An occurrence that matched the empty string records nothing
// (the parser applies empty completions at prediction, where no text is
// read).
//
// Where events come from: the recognizer logs completions of captured
// nonterminals as (nonterminal, start, end) positions while a log is set
// (Recognizer::set_completion_log); the matcher sets it around its
// committed feeds only, and hands the step's completions and the text it
// fed to Record. A lexed grammar's lanes may complete one occurrence at
// one end twice: Record keeps one.
//
// Memory. Events hold positions, not bytes. The text is kept from the
// earliest position that a completion may still start at: the origin of
// the oldest open item of a captured rule in any state rollback can return
// to (Recognizer::EarliestOpenOrigin). An occurrence starting before that
// can complete no more, so when the kept text moves past its start its
// bytes (up to its longest end) are copied out once (frozen) and the text
// before is dropped. So the log holds the captured bytes once per
// occurrence, plus the text of the occurrences still open and of the
// rollback window, plus 24 bytes per event. A grammar without captured
// rules has no log: nothing per byte.
//
// Positions are the recognizer's: a token step without text (a special
// token matched by a token terminal) takes a position with no byte, which
// the bytes of a capture skip.
//
// Tests: tests/masks/captures_test.cc.
#ifndef ZAPGRAM_MASKS_CAPTURES_H_
#define ZAPGRAM_MASKS_CAPTURES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"

namespace zapgram::masks {

class CaptureLog {
 public:
  // Records the completions of one committed step, which fed `text` (one
  // byte per position; `no_byte`: positions without a byte, increasing)
  // after the text recorded so far, then keeps the text from `keep_from`
  // on (Recognizer::EarliestOpenOrigin of the captured nonterminals).
  void Record(const std::vector<parser::Recognizer::Completion>& completions, std::string_view text, const std::vector<uint64_t>& no_byte, uint64_t keep_from);
  // Drops the events that end past `position` and the text after it (the
  // recognizer was rolled back to `position`).
  void Truncate(uint64_t position);
  void Clear() { *this = CaptureLog(); }
  // (name, bytes) per event, in completion order; see above for `deduplicate`.
  std::vector<std::pair<std::string, std::string>> Get(const parser::FlatGrammar& grammar,
                                                       bool deduplicate) const;
  size_t events() const { return events_.size(); }
  // Bytes of text kept (for tests of the bound).
  size_t text_bytes() const { return text_.chars.size(); }
  size_t frozen_bytes() const;

 private:
  // Text by position: one char per position from `begin` (a position
  // without a byte holds '\0' and is listed in no_byte, increasing).
  struct Text {
    std::string chars;
    uint64_t begin = 0;
    std::vector<uint64_t> no_byte;
    // The bytes of positions [from, to), within what it holds.
    std::string Bytes(uint64_t from, uint64_t to) const;
  };
  struct Occurrence {
    uint32_t nt;
    uint64_t start;
    uint64_t longest_end;  // the furthest end recorded (at most the text's end)
    uint32_t first_event;  // the event that made it
    bool frozen = false;
    Text text;  // when frozen: positions [start, longest_end)
  };
  struct Event {
    uint32_t occurrence;
    uint64_t end;
  };
  void KeepFrom(uint64_t position);

  std::vector<Occurrence> occurrences_;
  std::vector<Event> events_;
  // Occurrences not frozen, by (nonterminal, start).
  absl::flat_hash_map<std::pair<uint32_t, uint64_t>, uint32_t> open_;
  Text text_;  // the text kept, up to the newest position
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_CAPTURES_H_

// Draft-tree masks (see draft_tree.h).
#include "masks/draft_tree.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace zapgram::masks {

namespace {

bool LinkOk(int64_t link, size_t n) { return link == -1 || (link >= 0 && static_cast<uint64_t>(link) < n); }

}  // namespace

absl::Status CheckDraftTree(const DraftTree& tree) {
  const size_t n = tree.size();
  if (n == 0) return absl::InvalidArgumentError("the draft tree is empty (node 0, the root, is required)");
  if (tree.first_child.size() != n || tree.next_sibling.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the draft tree's arrays differ in length: retrieve_next_token has ", tree.first_child.size(),
        ", retrieve_next_sibling ", tree.next_sibling.size(), ", draft_tokens ", n));
  }
  for (size_t i = 0; i < n; ++i) {
    if (!LinkOk(tree.first_child[i], n)) {
      return absl::InvalidArgumentError(absl::StrCat("retrieve_next_token[", i, "] is ", tree.first_child[i],
                                                     ": not -1 nor a node index below ", n));
    }
    if (!LinkOk(tree.next_sibling[i], n)) {
      return absl::InvalidArgumentError(absl::StrCat("retrieve_next_sibling[", i, "] is ", tree.next_sibling[i],
                                                     ": not -1 nor a node index below ", n));
    }
  }
  if (tree.next_sibling[0] != -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the root (node 0) has a sibling (retrieve_next_sibling[0] is ", tree.next_sibling[0], ")"));
  }
  // Every node the root reaches, reached once: follow the links with a
  // stack, marking nodes as they are reached.
  std::vector<uint8_t> reached(n, 0);
  std::vector<int64_t> stack = {0};
  reached[0] = 1;
  while (!stack.empty()) {
    const int64_t node = stack.back();
    stack.pop_back();
    for (const int64_t next : {tree.first_child[node], tree.next_sibling[node]}) {
      if (next < 0) continue;
      if (reached[next]) {
        return absl::InvalidArgumentError(absl::StrCat("node ", next, " of the draft tree is reached twice (from node ",
                                                       node, "): the links do not form a tree"));
      }
      reached[next] = 1;
      stack.push_back(next);
    }
  }
  return absl::OkStatus();
}

namespace {

constexpr uint32_t kNoLabel = Matcher::kNoEffect;

// The walk's state: the matchers of its levels and the stack of entered
// nodes (draft_tree.h, "How it walks").
class Walk {
 public:
  Walk(const Matcher& start, const DraftTree& tree, uint32_t* rows, size_t row_stride,
       const DraftWalkOptions& options)
      : tree_(tree),
        rows_(rows),
        row_stride_(row_stride),
        words_(start.grammar().mask_words()),
        vocab_(start.grammar().vocabulary()),
        options_(options),
        use_effects_(options.use_effects && !start.grammar().grammar().lexed() &&
                     !start.grammar().grammar().has_token_terminals()),
        filled_(tree.size(), 0),
        label_(use_effects_ ? tree.size() : 0, kNoLabel) {
    levels_.emplace_back(start);
    levels_[0].StopCaptures();  // the walk is speculative; its copies record nothing
  }

  DraftWalkResult Run() {
    DraftWalkResult result;
    if (Terminated(levels_[0]) || !FillRow(0, levels_[0])) {
      Finish(&result);
      return result;
    }
    Push(0, 0, 0, /*own_level=*/false, /*moved=*/false);
    while (!frames_.empty() && status_.ok()) {
      Frame& frame = frames_.back();
      const int64_t child = frame.next;
      if (child < 0) {  // every child done: leave the node
        const Frame done = frame;
        frames_.pop_back();
        reps_.resize(done.reps_begin);
        if (!frames_.empty()) Leave(done);
        continue;
      }
      frame.next = tree_.next_sibling[child];
      const int64_t token = tree_.tokens[child];
      if (!Allowed(frame.node, token)) continue;
      if (options_.deadline.has_value() && std::chrono::steady_clock::now() > *options_.deadline) {
        completed_ = false;
        break;
      }
      // Copied: Enter may grow frames_.
      const Frame parent = frame;
      Enter(parent, child, static_cast<int32_t>(token));
    }
    Finish(&result);
    return result;
  }

 private:
  struct Frame {
    int64_t node;       // entered: its row is filled
    int64_t next;       // its next child to try, -1 when none is left
    uint32_t level;     // the matcher it was entered on
    uint32_t bytes;     // bytes accepted on that level since the level began
    bool own_level;     // the level began with this node (leaving drops it)
    bool moved;         // entering it accepted its token on `level`
    uint32_t unchanged;  // its children's label for "the state stays" (kNoLabel: none)
    size_t reps_begin;  // reps_[reps_begin + label]: its first filled child of that label, or -1
  };

  bool Terminated(const Matcher& m) const {
    return m.IsFinished() || (options_.terminate_when_accepting && m.IsAccepting());
  }

  uint32_t* Row(int64_t node) const { return rows_ + static_cast<size_t>(node) * row_stride_; }

  bool Allowed(int64_t parent, int64_t token) const {
    if (token < 0 || static_cast<uint64_t>(token) >= 32 * words_) return false;
    return ((Row(parent)[token / 32] >> (token % 32)) & 1u) != 0;
  }

  // Bytes a token adds to the rollback window (as Matcher::Rollback counts
  // them: EOS none, a token without text one position).
  uint32_t WindowBytes(int32_t token) const {
    if (vocab_.is_eos(token)) return 0;
    return static_cast<uint32_t>(std::max<size_t>(1, vocab_.token_bytes(token).size()));
  }

  bool FillRow(int64_t node, Matcher& m) {
    m.ComputeMask(Row(node));
    if (!m.status().ok()) {
      status_ = m.status();
      return false;
    }
    filled_[node] = 1;
    ++visited_;
    if (!options_.temperatures.empty()) {
      const float t = m.Temperature().value;
      options_.temperatures[node] = t >= 0.0f ? t : options_.default_temperature;
    }
    return true;
  }

  void CopyRow(int64_t from, int64_t node) {
    std::copy_n(Row(from), words_, Row(node));
    // Equal labels: equal exact states, so equal temperatures too.
    if (!options_.temperatures.empty()) options_.temperatures[node] = options_.temperatures[from];
    filled_[node] = 1;
    ++visited_;
    ++copied_;
  }

  // A copy of level `from` as level `from` + 1. Levels nest along the
  // path being walked, so the slot there is free: copy-assigned when an
  // earlier level left it (reusing its buffers), else appended.
  uint32_t PushLevel(uint32_t from) {
    const uint32_t level = from + 1;
    if (level < levels_.size()) {
      levels_[level] = levels_[from];
    } else {
      levels_.push_back(levels_[from]);  // may move the levels: callers index, never hold
      pending_.push_back(0);
    }
    pending_[level] = 0;
    return level;
  }

  // Back from a node. Its rollback waits until its level is used again
  // (Settle): leaving a last child and then its parent rolls both back at
  // once, one checkpoint restored and replayed instead of two, and the
  // walk's final way up is never rolled back at all. An own level is
  // dropped (its slot kept); a node entered without moving (its token left
  // the state as it was) has nothing to undo.
  void Leave(const Frame& node) {
    if (!node.own_level && node.moved) ++pending_[node.level];
  }

  // Rolls back the tokens `level` still holds past the node being entered
  // from: within the window by construction (see draft_tree.h).
  void Settle(uint32_t level) {
    if (pending_[level] == 0) return;
    if (!levels_[level].Rollback(pending_[level]) && status_.ok()) {
      status_ = absl::InternalError("draft tree walk: a rollback inside the window failed");
    }
    pending_[level] = 0;
  }

  // Enters `node` (its row filled) as the top frame when it has children:
  // with token effects, labels its children's tokens first, from its
  // state (draft_tree.h, "Rows without masks").
  void Push(int64_t node, uint32_t level, uint32_t bytes, bool own_level, bool moved) {
    const int64_t first = tree_.first_child[node];
    if (first < 0) {
      Leave({node, -1, level, bytes, own_level, moved, kNoLabel, 0});
      return;
    }
    Frame frame{node, first, level, bytes, own_level, moved, kNoLabel, reps_.size()};
    if (use_effects_) {
      Settle(level);
      ids_.clear();
      children_.clear();
      for (int64_t c = first; c >= 0; c = tree_.next_sibling[c]) {
        const int64_t t = tree_.tokens[c];
        // Normal tokens with text only: EOS has no bytes, yet changes the state.
        if (!Allowed(node, t) || vocab_.kind(static_cast<TokenId>(t)) != TokenKind::kNormal ||
            vocab_.token_bytes(static_cast<TokenId>(t)).empty()) {
          continue;
        }
        ids_.push_back(static_cast<TokenId>(t));
        children_.push_back(c);
      }
      if (ids_.size() > 0) {
        levels_[level].TokenEffects(ids_, &labels_, &frame.unchanged);
        uint32_t labels = 0;
        for (size_t k = 0; k < ids_.size(); ++k) {
          label_[children_[k]] = labels_[k];
          if (labels_[k] != kNoLabel) labels = std::max(labels, labels_[k] + 1);
        }
        reps_.resize(reps_.size() + labels, -1);
      }
    }
    frames_.push_back(frame);
  }

  void Enter(const Frame& parent, int64_t child, int32_t token) {
    const uint32_t label = use_effects_ ? label_[child] : kNoLabel;
    if (label != kNoLabel) {
      int64_t& rep = reps_[parent.reps_begin + label];
      if (label == parent.unchanged) {
        // The child's state is its parent's: the parent's row, and its
        // subtree walked from the parent's state.
        CopyRow(parent.node, child);
        Push(child, parent.level, parent.bytes, /*own_level=*/false, /*moved=*/false);
        return;
      }
      if (rep >= 0 && tree_.first_child[child] < 0) {
        CopyRow(rep, child);  // a leaf in the state of an earlier sibling
        return;
      }
    }
    Settle(parent.level);
    if (!status_.ok()) return;
    const uint32_t bytes = WindowBytes(token);
    const bool own_level = options_.undo == DraftUndo::kCopy ||
                           parent.bytes + static_cast<size_t>(bytes) > levels_[parent.level].MaxRollback();
    const uint32_t level = own_level ? PushLevel(parent.level) : parent.level;
    Matcher& m = levels_[level];
    if (!m.AcceptAllowedToken(token)) {
      if (!m.status().ok()) status_ = m.status();
      return;
    }
    if (Terminated(m) || !FillRow(child, m)) {
      Leave({child, -1, level, 0, own_level, true, kNoLabel, 0});
      return;
    }
    if (label != kNoLabel && reps_[parent.reps_begin + label] < 0) reps_[parent.reps_begin + label] = child;
    Push(child, level, own_level ? 0u : parent.bytes + bytes, own_level, /*moved=*/true);
  }

  // Zero rows for the nodes not filled; the result.
  void Finish(DraftWalkResult* result) {
    for (size_t i = 0; i < filled_.size(); ++i) {
      if (!filled_[i]) std::fill_n(Row(static_cast<int64_t>(i)), words_, 0u);
    }
    result->completed = completed_ && status_.ok();
    result->visited = visited_;
    result->copied = copied_;
    result->status = status_;
  }

  const DraftTree& tree_;
  uint32_t* rows_;
  size_t row_stride_;
  size_t words_;
  const Vocabulary& vocab_;
  const DraftWalkOptions& options_;
  const bool use_effects_;
  std::vector<uint8_t> filled_;
  // The matchers of the levels on the path (level 0: a copy of the
  // caller's), then slots kept for reuse.
  std::vector<Matcher> levels_;
  std::vector<uint32_t> pending_ = {0};  // per level: tokens accepted past the walk's place (Leave)
  std::vector<Frame> frames_;
  // Token effects: each labelled node's label (among its siblings), the
  // frames' first filled child per label, and Push's scratch.
  std::vector<uint32_t> label_;
  std::vector<int64_t> reps_;
  std::vector<TokenId> ids_;
  std::vector<int64_t> children_;
  std::vector<uint32_t> labels_;
  size_t visited_ = 0, copied_ = 0;
  bool completed_ = true;
  absl::Status status_;
};

}  // namespace

DraftWalkResult WalkDraftTree(const Matcher& start, const DraftTree& tree, uint32_t* rows, size_t row_stride,
                              const DraftWalkOptions& options) {
  return Walk(start, tree, rows, row_stride, options).Run();
}

}  // namespace zapgram::masks

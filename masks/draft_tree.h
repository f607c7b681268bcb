// Draft-tree masks: the token mask of every node of a speculative-decoding
// draft tree (EAGLE-style token trees) in one depth-first walk.
//
// What it computes. A drafter proposes a tree of tokens rooted at the
// current state; the target model scores every node at once and needs, per
// node, the mask of the state after the path from the root to that node.
// The tree comes in first-child / next-sibling form (XGrammar's
// traverse_draft_tree, the layout SGLang's EAGLE worker passes):
// first_child[i] (XGrammar's retrieve_next_token) is node i's first child or
// -1, next_sibling[i] (retrieve_next_sibling) its next sibling or -1, and
// tokens[i] (draft_tokens) the token that node i appends. Node 0, the root,
// stands for the current state: its token was already accepted (it is the
// target model's last sampled token) and is not read. Row i of the output:
//   - the mask after the path to node i, when node i is visited: the root
//     always (unless the matcher has terminated), any other node when its
//     token is allowed by its parent's row and the matcher accepts it and
//     has not terminated after it (EOS accepted; with
//     terminate_when_accepting, also a text that is a sentence, as
//     XGrammar's terminate_without_stop_token);
//   - all zero otherwise: a node whose token its parent's row refuses, a
//     node after which the matcher has terminated, and every node below
//     such a node or not reached from the root. (XGrammar leaves the rows
//     under a refused node as the caller allocated them; here they are
//     zero, so a row never says more than the grammar does.)
// The walk reads a parent's row from the output itself: each visited
// node's mask is computed once, and serves both as its row and as the test
// of its children's tokens.
//
// How it walks. Depth first with an explicit stack (a draft tree is
// user-shaped input: no recursion), on a copy of the caller's matcher, so
// the caller's matcher ends exactly as it began whatever happens: its text,
// its rollback window (rolling back where the window is full shrinks it
// for good, recognizer.h RollbackLimit), its last mask's rejected set and
// its status; the copy costs about one fork (~1-2 us). A child is entered
// with AcceptAllowedToken (its parent's row has already decided that the
// token is allowed, so its bytes are fed without AcceptToken's speculative
// pass over them) on the matcher of its parent's level, and left with
// Rollback, which stays inside the rollback window by construction: the
// bytes accepted on one level never exceed MaxRollback() (each accepted
// byte widens the window by one up to that bound, and each rolled back
// narrows it by one, so a level whose path holds at most MaxRollback()
// bytes can always return to its start). A child whose bytes would pass
// the bound opens a new level, a copy of its parent's matcher dropped when
// the child is left; deep paths (hundreds of tokens) cost a copy per
// MaxRollback() bytes. Rollbacks are deferred until the level is used
// again: a rollback restores the newest recognizer checkpoint before its
// target and replays the bytes since (up to ~32), so leaving a last child
// and then its parent costs one restore instead of two, and the final way
// up costs none.
//
// DraftUndo::kCopy enters every child on a copy of its parent's matcher
// instead (copy-assigned into a slot per depth, reusing its buffers), and
// leaves it by dropping the copy: the same rows. A copy (the chart, its
// checkpoints, the parser's scratch) costs less than one rollback alone
// (on cached MaskBench / json-docs states: a fork 0.9 / 2.3 us, a rollback
// 2.0 / 3.7 us), but every child pays one, where deferred rollbacks merge:
// perf/draft_tree_bench.cc measures both, and kCopy costs 4-60% more than
// kRollback, the default, in every case there.
//
// Rows without masks. Before a node's children are entered, their tokens
// are labelled by Matcher::TokenEffects (byte-level grammars; token_
// effects.cc): tokens with one label leave states with equal exact keys,
// and the `unchanged` label marks tokens that leave the node's own state as
// it is (each terminal state of its items loops on their bytes: text
// inside a JSON string or a number). A child with the unchanged label gets
// its parent's row copied and its subtree is walked from the parent's state,
// with no token accepted, masked or rolled back; a leaf whose label an
// earlier sibling already has gets that sibling's row. On drafted trees
// about half of the visited rows are copied this way (draft_tree_test
// prints the counts). Everything else comes from Matcher::ComputeMask, so
// the shared mask cache serves every state an earlier mask of the grammar
// reached (another node of the tree, an earlier decoding step, another
// sequence): a lookup and a copy, not a trie walk.
//
// Cost (perf/draft_tree_bench.cc has the table: Llama 3, trees of 16-256
// nodes drafted from MaskBench and json-docs states). The walk costs
// 1.2-5.6x less than the naive walk (it never re-feeds a path), 1.9-3.3x
// less than one mask per node when masks are computed (the rows copied
// above), 0.88-1.37x one mask per node when the tree's states are new to
// the cache (the copies save only cache hits; each other node's accept and
// rollback, ~1-2 us, come on top), and 1.1-2.3x a cached lookup per node
// when every state is cached. Cheaper still would need a cheaper undo: a
// rollback restores a checkpoint and replays up to ~32 bytes, where a
// snapshot of the live chart alone (parser/, not done here) would do.
//
// Time. With a deadline, a node whose token passed its parent's row is
// entered only before the deadline; past it the walk stops and reports
// `completed` false, its rows filled so far kept and every other row zero
// (the root's row is always computed, as in XGrammar).
//
// Tests: tests/masks/draft_tree_test.cc (every row against the naive walk
// - a fresh matcher fed each node's path, the mask cache off - on random
// trees drafted from MaskBench and json-docs traces with Llama 3, walked
// with rollbacks, with copies and without token effects; zero rows; the
// caller's matcher unchanged; terminated matchers and EOS nodes; a
// rollback window smaller than the paths; deadlines; malformed trees; the
// batch form), tests/masks/token_effects_test.cc (the unchanged label),
// tests/threads/shared_grammar_test.cc (trees on threads and on the pool,
// a Lark grammar among them), tests/c/c_api_test.c,
// tests/python/test_draft_tree.py.
#ifndef ZAPGRAM_MASKS_DRAFT_TREE_H_
#define ZAPGRAM_MASKS_DRAFT_TREE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "masks/matcher.h"

namespace zapgram::masks {

// A draft tree in first-child / next-sibling form (see above); the three
// spans have one entry per node.
struct DraftTree {
  absl::Span<const int64_t> first_child;   // XGrammar's retrieve_next_token
  absl::Span<const int64_t> next_sibling;  // retrieve_next_sibling
  absl::Span<const int64_t> tokens;        // draft_tokens; tokens[0] is not read
  size_t size() const { return tokens.size(); }
};

// InvalidArgument unless `tree` is a tree rooted at node 0: the three spans
// of one nonzero length, every link -1 or a node index, the root without a
// sibling, and no node reached twice from the root (no cycle, no shared
// child). Nodes that the root does not reach are allowed (their rows stay
// zero). Linear in the tree's size.
absl::Status CheckDraftTree(const DraftTree& tree);

// How the walk gets back from a child to its parent (the same rows).
enum class DraftUndo : uint8_t {
  kRollback,  // AcceptToken then Rollback(1) on one matcher (per level)
  kCopy,      // each child on a copy of its parent's matcher
};

struct DraftWalkOptions {
  // No node past the root is entered after this instant.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // A sentence terminates the matcher as EOS does (XGrammar's
  // terminate_without_stop_token): rows of nodes whose text is a sentence
  // are zero and their children are not visited.
  bool terminate_when_accepting = false;
  DraftUndo undo = DraftUndo::kRollback;
  // Rows without masks (above): children whose token leaves their parent's
  // state, or a leaf sibling's, get that row copied. Off: every visited
  // node's mask is computed (the same rows; for measurements).
  bool use_effects = true;
  // Not empty (one entry per node): a visited node's entry gets the
  // temperature in effect after its path (Matcher::Temperature), or
  // `default_temperature` where none is; the others' are left alone.
  absl::Span<float> temperatures;
  float default_temperature = -1.0f;
};

struct DraftWalkResult {
  // False when the deadline stopped the walk (or an error did).
  bool completed = true;
  size_t visited = 0;  // nodes whose row holds a mask
  size_t copied = 0;   // of which rows copied, not computed (token effects)
  // Not ok when a parser budget ran out during the walk (the rows of the
  // nodes not visited by then are zero) or an invariant broke.
  absl::Status status;
};

// Fills row i (rows + i * row_stride, start.grammar().mask_words() words)
// for every node i of `tree`, which must pass CheckDraftTree. `start` is
// not changed (the walk runs on copies of it). Not thread-safe for one
// `start`; distinct matchers may walk on distinct threads.
DraftWalkResult WalkDraftTree(const Matcher& start, const DraftTree& tree, uint32_t* rows,
                              size_t row_stride, const DraftWalkOptions& options = {});

// The temperature written for a node with none: XGrammar's value for "no
// effective temperature" (a visited node outside every rule with a
// temperature, without a default; and every node not visited).
inline constexpr float kNoTemperature = -1.0f;

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_DRAFT_TREE_H_

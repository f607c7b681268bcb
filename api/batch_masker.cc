// BatchMasker: the masks of a decode step's batch on a persistent pool.
//
// A server fills one mask per sequence at every step, every few
// milliseconds. Starting threads per step (what ComputeMasks did) costs tens
// of microseconds per thread, as much as a cached mask of a whole batch, so
// the pool's threads live as long as the BatchMasker and sleep on a condition
// variable between calls.
//
// Scheduling is dynamic: the calling thread and the workers claim the next
// matcher index from one atomic cursor until the batch is exhausted. Masks
// differ by orders of magnitude (a cache hit copies a few kilobytes; a miss
// walks the token trie), so a static split would leave threads idle behind
// the one that drew the misses. A batch of one runs on the calling thread.
//
// Waking a sleeping worker costs more than a batch of cache hits (a hit is
// a fraction of a microsecond; the futex wake and the cache lines that move
// to the other core cost tens: measured, 16 hits took 8 us alone and 25 us
// with a worker woken up front). So the workers are woken only when the
// work is worth it: up front when the previous call's mean cost per item
// times this batch's size exceeds kWakeWorthMicros (decode steps of one
// server look alike), else the caller starts alone and re-estimates the
// work left after each item from the mean cost of its items so far. A batch
// of hits never pays for a wake-up (16 hits: 8.5 us alone, 9.2 us with the
// pool), and a batch of misses keeps its speedup (1.5x on 2 cores).
//
// The caller waits for its items, not for its workers: a worker that wakes
// after the caller has done everything finds nothing to claim. For that, the cursor is one 64-bit
// word holding (generation, batch size, next index); a claim is a
// compare-and-swap on it, so it succeeds only on the job still being
// served, and a late worker can never claim an item of a later call with
// the spans of an earlier one. The job's spans are written before the
// cursor is published and read only after a successful claim; the caller
// returns when `done` reaches the batch size. `call_mu` serializes callers.
//
// The pool runs any per-item task (Run): a batch of masks, or a batch of
// draft trees (TraverseDraftTrees: an item is one matcher's whole tree,
// masks/draft_tree.h, so a tree batch wakes the workers after its first
// item at the latest).
//
// Tests: tests/api/api_test.cc (BatchMasker.*: batch against one by one, a
// pool reused across calls, concurrent callers); tests/masks/matcher_test.cc
// (ComputeMasks, which runs on a temporary BatchMasker);
// tests/masks/draft_tree_test.cc (DraftTreeBatch.*).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "zapgram/matcher.h"

namespace zapgram {

namespace {
constexpr int kIndexBits = 24;  // batch sizes below 2^24
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
// Work left (estimated) below which the caller does it alone: about twice
// what waking a worker costs here.
constexpr double kWakeWorthMicros = 30;
}  // namespace

struct BatchMasker::Pool {
  std::mutex call_mu;  // one Compute at a time
  std::mutex mu;       // guards generation, stop; pairs with the condition variables
  std::condition_variable start_cv, done_cv;
  uint64_t generation = 0;  // the job the workers are to serve
  uint64_t job = 0;         // the last job started (caller only)
  double item_micros = 0;   // the last call's mean cost per item (caller only)
  bool stop = false;
  // The current job's task: written by the caller before it publishes
  // `cursor`.
  const absl::FunctionRef<void(size_t)>* task = nullptr;
  // generation (16 bits) | batch size (24) | next index (24).
  std::atomic<uint64_t> cursor{0};
  std::atomic<size_t> done{0};
  std::vector<std::thread> workers;

  void Run(size_t k) { (*task)(k); }

  // Claims and computes items of job `gen` until none is left, or (for the
  // caller working alone) until `pause` says to stop claiming; returns
  // whether items were left unclaimed.
  template <typename Pause>
  bool Work(uint64_t gen, const Pause& pause) {
    uint64_t c = cursor.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t index = c & kIndexMask, size = (c >> kIndexBits) & kIndexMask;
      if ((c >> (2 * kIndexBits)) != (gen & 0xFFFF) || index >= size) return false;
      if (pause(index, size)) return true;
      if (!cursor.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      Run(index);
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == size) {
        std::lock_guard<std::mutex> lock(mu);
        done_cv.notify_one();
      }
      c = cursor.load(std::memory_order_acquire);
    }
  }

  // Returns when all n items of the current job are done.
  void WaitDone(size_t n) {
    if (done.load(std::memory_order_acquire) == n) return;
    // Items still running on workers are often nearly done: poll for up to
    // 20 us before sleeping (a sleep and wake-up costs tens of microseconds).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (done.load(std::memory_order_acquire) == n) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    std::unique_lock<std::mutex> lock(mu);
    done_cv.wait(lock, [&] { return done.load(std::memory_order_acquire) == n; });
  }

  void WorkerLoop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        start_cv.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
      }
      Work(seen, [](uint64_t, uint64_t) { return false; });
    }
  }
};

BatchMasker::BatchMasker(int threads) : pool_(std::make_unique<Pool>()) {
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency() / 2));
  for (int t = 1; t < threads; ++t) pool_->workers.emplace_back([p = pool_.get()] { p->WorkerLoop(); });
}

BatchMasker::~BatchMasker() {
  {
    std::lock_guard<std::mutex> lock(pool_->mu);
    pool_->stop = true;
  }
  pool_->start_cv.notify_all();
  for (std::thread& t : pool_->workers) t.join();
}

int BatchMasker::threads() const { return static_cast<int>(pool_->workers.size()) + 1; }

void BatchMasker::Compute(absl::Span<Matcher* const> matchers, absl::Span<uint32_t* const> rows,
                          absl::Span<size_t> allowed) {
  ComputeWithBudgets(matchers, rows, {}, allowed);
}

void BatchMasker::ComputeWithBudgets(absl::Span<Matcher* const> matchers,
                                     absl::Span<uint32_t* const> rows,
                                     absl::Span<const std::optional<int64_t>> tokens_left,
                                     absl::Span<size_t> allowed) {
  Run(matchers.size(), [&](size_t k) {
    const size_t count = tokens_left.empty() || !tokens_left[k].has_value()
                             ? matchers[k]->ComputeMask(rows[k])
                             : matchers[k]->ComputeMask(rows[k], *tokens_left[k]);
    if (!allowed.empty()) allowed[k] = count;
  });
}

absl::Status BatchMasker::TraverseDraftTrees(absl::Span<Matcher* const> matchers,
                                             absl::Span<const DraftTree> trees,
                                             absl::Span<uint32_t* const> masks,
                                             absl::Span<const absl::Span<float>> temperatures,
                                             const DraftTreeOptions& options, absl::Span<bool> completed) {
  const size_t n = matchers.size();
  if (trees.size() != n || masks.size() != n || completed.size() != n ||
      (!temperatures.empty() && temperatures.size() != n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TraverseDraftTrees: ", n, " matchers, ", trees.size(), " trees, ", masks.size(), " masks, ",
        temperatures.size(), " temperature spans, ", completed.size(), " results"));
  }
  const Matcher::Deadline deadline = Matcher::DraftDeadline(std::chrono::steady_clock::now(), options);
  const auto temperatures_of = [&](size_t k) { return temperatures.empty() ? absl::Span<float>() : temperatures[k]; };
  for (size_t k = 0; k < n; ++k) {
    const absl::Status valid = matchers[k]->CheckDraftTree(trees[k], temperatures_of(k), options);
    if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat("tree ", k, ": ", valid.message()));
  }
  std::vector<absl::Status> errors(n);
  Run(n, [&](size_t k) {
    const absl::StatusOr<bool> done =
        matchers[k]->WalkDraftTree(trees[k], masks[k], temperatures_of(k), options, deadline);
    completed[k] = done.ok() && *done;
    if (!done.ok()) errors[k] = done.status();
  });
  for (const absl::Status& e : errors) {
    if (!e.ok()) return e;
  }
  return absl::OkStatus();
}

void BatchMasker::Run(size_t n, absl::FunctionRef<void(size_t)> task) {
  Pool& p = *pool_;
  std::lock_guard<std::mutex> call(p.call_mu);
  p.task = &task;
  if (n <= 1 || p.workers.empty() || n > kIndexMask) {
    for (size_t k = 0; k < n; ++k) p.Run(k);
    return;
  }
  const uint64_t gen = ++p.job;
  p.done.store(0, std::memory_order_relaxed);
  p.cursor.store(((gen & 0xFFFF) << (2 * kIndexBits)) | (uint64_t{n} << kIndexBits), std::memory_order_release);
  // Wake the workers up front when the last call's items, at their mean
  // cost, were worth a wake-up; otherwise once the items left, at the mean
  // cost of those done so far, are.
  const auto start = std::chrono::steady_clock::now();
  const auto micros_since_start = [&] {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  };
  const auto worth_waking = [&](uint64_t index, uint64_t size) {
    if (index == 0) return p.item_micros * static_cast<double>(size) > kWakeWorthMicros;
    return micros_since_start() / static_cast<double>(index) * static_cast<double>(size - index) > kWakeWorthMicros;
  };
  bool woken = false;
  if (p.Work(gen, worth_waking)) {
    woken = true;
    {
      std::lock_guard<std::mutex> lock(p.mu);
      p.generation = gen;
    }
    p.start_cv.notify_all();
    p.Work(gen, [](uint64_t, uint64_t) { return false; });
  }
  p.WaitDone(n);
  p.item_micros = micros_since_start() * (woken ? static_cast<double>(threads()) : 1.0) / static_cast<double>(n);
}

}  // namespace zapgram

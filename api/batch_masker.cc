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
// The caller waits for its items, not for its workers: a worker that wakes
// after the caller has done everything (a batch of cache hits is done
// before a sleeping thread is scheduled) finds nothing to claim, and the
// call has not paid for its wake-up. For that, the cursor is one 64-bit
// word holding (generation, batch size, next index); a claim is a
// compare-and-swap on it, so it succeeds only on the job still being
// served, and a late worker can never claim an item of a later call with
// the spans of an earlier one. The job's spans are written before the
// cursor is published and read only after a successful claim; the caller
// returns when `done` reaches the batch size. `call_mu` serializes callers.
//
// Tests: tests/api/api_test.cc (BatchMasker.*: batch against one by one, a
// pool reused across calls, concurrent callers); tests/masks/matcher_test.cc
// (ComputeMasks, which runs on a temporary BatchMasker).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "zapgram/matcher.h"

namespace zapgram {

namespace {
constexpr int kIndexBits = 24;  // batch sizes below 2^24
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
}  // namespace

struct BatchMasker::Pool {
  std::mutex call_mu;  // one Compute at a time
  std::mutex mu;       // guards generation, stop; pairs with the condition variables
  std::condition_variable start_cv, done_cv;
  uint64_t generation = 0;
  bool stop = false;
  // The current job: written by the caller before it publishes `cursor`.
  absl::Span<Matcher* const> matchers;
  absl::Span<uint32_t* const> rows;
  absl::Span<size_t> allowed;
  // generation (16 bits) | batch size (24) | next index (24).
  std::atomic<uint64_t> cursor{0};
  std::atomic<size_t> done{0};
  std::vector<std::thread> workers;

  void Run(size_t k) {
    const size_t count = matchers[k]->ComputeMask(rows[k]);
    if (!allowed.empty()) allowed[k] = count;
  }

  // Claims and computes items of generation `gen`'s job until none is left.
  void Work(uint64_t gen) {
    uint64_t c = cursor.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t index = c & kIndexMask, size = (c >> kIndexBits) & kIndexMask;
      if ((c >> (2 * kIndexBits)) != (gen & 0xFFFF) || index >= size) return;
      if (!cursor.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      Run(index);
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == size) {
        std::lock_guard<std::mutex> lock(mu);
        done_cv.notify_one();
      }
      c = cursor.load(std::memory_order_acquire);
    }
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
      Work(seen);
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
  Pool& p = *pool_;
  std::lock_guard<std::mutex> call(p.call_mu);
  const size_t n = matchers.size();
  p.matchers = matchers;
  p.rows = rows;
  p.allowed = allowed;
  if (n <= 1 || p.workers.empty() || n > kIndexMask) {
    for (size_t k = 0; k < n; ++k) p.Run(k);
    return;
  }
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    gen = ++p.generation;
    p.done.store(0, std::memory_order_relaxed);
    p.cursor.store(((gen & 0xFFFF) << (2 * kIndexBits)) | (uint64_t{n} << kIndexBits), std::memory_order_release);
  }
  p.start_cv.notify_all();
  p.Work(gen);
  // Items still running on workers are often nearly done: poll for up to
  // 20 us before sleeping (a sleep and wake-up costs tens of microseconds).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (p.done.load(std::memory_order_acquire) == n) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  std::unique_lock<std::mutex> lock(p.mu);
  p.done_cv.wait(lock, [&] { return p.done.load(std::memory_order_acquire) == n; });
}

}  // namespace zapgram

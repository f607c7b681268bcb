// XXH64 from its specification (see checksum.h). Little-endian reads by
// memcpy; the engine is built for little-endian hosts only
// (api/grammar_serializer.cc asserts it).
#include "grammar/checksum.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace zapgram::grammar {

namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ull;

uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t Load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t Round(uint64_t lane, uint64_t input) {
  lane += input * kPrime2;
  lane = std::rotl(lane, 31);
  return lane * kPrime1;
}

uint64_t MergeLane(uint64_t hash, uint64_t lane) {
  hash ^= Round(0, lane);
  return hash * kPrime1 + kPrime4;
}

// Consumes whole stripes of `p[0..n)`; returns how many bytes it took.
size_t Stripes(uint64_t lanes[4], const unsigned char* p, size_t n) {
  size_t at = 0;
  for (; at + 32 <= n; at += 32) {
    lanes[0] = Round(lanes[0], Load64(p + at));
    lanes[1] = Round(lanes[1], Load64(p + at + 8));
    lanes[2] = Round(lanes[2], Load64(p + at + 16));
    lanes[3] = Round(lanes[3], Load64(p + at + 24));
  }
  return at;
}

// The finish: lanes (when a stripe was read) or the seed, the length, the
// tail of fewer than 32 bytes, the avalanche.
uint64_t Finish(const uint64_t lanes[4], uint64_t seed, uint64_t total, const unsigned char* tail,
                size_t n) {
  uint64_t hash;
  if (total >= 32) {
    hash = std::rotl(lanes[0], 1) + std::rotl(lanes[1], 7) + std::rotl(lanes[2], 12) +
           std::rotl(lanes[3], 18);
    for (int k = 0; k < 4; ++k) hash = MergeLane(hash, lanes[k]);
  } else {
    hash = seed + kPrime5;
  }
  hash += total;
  size_t at = 0;
  for (; at + 8 <= n; at += 8) {
    hash ^= Round(0, Load64(tail + at));
    hash = std::rotl(hash, 27) * kPrime1 + kPrime4;
  }
  if (at + 4 <= n) {
    hash ^= uint64_t{Load32(tail + at)} * kPrime1;
    hash = std::rotl(hash, 23) * kPrime2 + kPrime3;
    at += 4;
  }
  for (; at < n; ++at) {
    hash ^= uint64_t{tail[at]} * kPrime5;
    hash = std::rotl(hash, 11) * kPrime1;
  }
  hash ^= hash >> 33;
  hash *= kPrime2;
  hash ^= hash >> 29;
  hash *= kPrime3;
  hash ^= hash >> 32;
  return hash;
}

void InitLanes(uint64_t lanes[4], uint64_t seed) {
  lanes[0] = seed + kPrime1 + kPrime2;
  lanes[1] = seed + kPrime2;
  lanes[2] = seed;
  lanes[3] = seed - kPrime1;
}

}  // namespace

uint64_t XxHash64(std::string_view bytes, uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  uint64_t lanes[4];
  InitLanes(lanes, seed);
  const size_t taken = Stripes(lanes, p, bytes.size());
  return Finish(lanes, seed, bytes.size(), p + taken, bytes.size() - taken);
}

XxHash64Stream::XxHash64Stream(uint64_t seed) : seed_(seed) { InitLanes(lanes_, seed); }

void XxHash64Stream::Update(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  total_ += n;
  if (buffered_ > 0) {
    const size_t fill = std::min(n, sizeof buffer_ - buffered_);
    std::memcpy(buffer_ + buffered_, p, fill);
    buffered_ += fill;
    p += fill;
    n -= fill;
    if (buffered_ < sizeof buffer_) return;
    Stripes(lanes_, buffer_, sizeof buffer_);
    buffered_ = 0;
  }
  const size_t taken = Stripes(lanes_, p, n);
  std::memcpy(buffer_, p + taken, n - taken);
  buffered_ = n - taken;
}

uint64_t XxHash64Stream::Digest() const { return Finish(lanes_, seed_, total_, buffer_, buffered_); }

}  // namespace zapgram::grammar

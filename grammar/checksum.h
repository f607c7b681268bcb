// A 64-bit hash for checksums and fingerprints of byte strings: XXH64.
//
// Persistent compiled grammars (api/grammar_serializer.cc) carry a checksum
// of their payload and the fingerprint of the vocabulary they were compiled
// for. Both are XXH64 (Yann Collet's xxHash, 64-bit variant), written here
// from its published specification: four lanes of 8-byte multiply-rotate
// rounds over 32-byte stripes, then the tail and a final avalanche. It reads
// several GB/s (byte-at-a-time FNV-1a, the n-gram file's checksum, reads
// about one), which matters for payloads of megabytes loaded on a server's
// request path. Not a cryptographic hash: it detects accidents (truncation,
// bit rot, a file of another build), not forgery; the serializer validates
// structure as well, so a forged checksum gains nothing.
//
// Tests: tests/api/grammar_serializer_test.cc (the specification's test
// vectors, streaming against one-shot).
#ifndef ZAPGRAM_GRAMMAR_CHECKSUM_H_
#define ZAPGRAM_GRAMMAR_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace zapgram::grammar {

// XXH64 of `bytes` with `seed`.
uint64_t XxHash64(std::string_view bytes, uint64_t seed = 0);

// The same hash fed in pieces: Update(a); Update(b); Digest() equals
// XxHash64(a + b). Not thread-safe; cheap to copy.
class XxHash64Stream {
 public:
  explicit XxHash64Stream(uint64_t seed = 0);
  void Update(std::string_view bytes);
  uint64_t Digest() const;

 private:
  uint64_t lanes_[4];
  uint64_t seed_;
  uint64_t total_ = 0;
  unsigned char buffer_[32];  // a stripe not yet complete
  size_t buffered_ = 0;
};

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_CHECKSUM_H_

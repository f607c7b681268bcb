#include "grammar/utf8.h"

#include <utility>

namespace zapgram::grammar {

namespace {

constexpr uint32_t kMaxForLength[4] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

uint32_t EncodedLength(uint32_t cp) {
  return cp <= 0x7F ? 1 : cp <= 0x7FF ? 2 : cp <= 0xFFFF ? 3 : 4;
}

// Encodes into `bytes` (at least 4), returns the length.
uint32_t Encode(uint32_t cp, uint8_t* bytes) {
  if (cp <= 0x7F) {
    bytes[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp <= 0x7FF) {
    bytes[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    bytes[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp <= 0xFFFF) {
    bytes[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    bytes[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    bytes[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 3;
  }
  bytes[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
  bytes[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
  bytes[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
  bytes[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  return 4;
}

}  // namespace

void AppendUtf8(uint32_t cp, std::string* out) {
  uint8_t bytes[4];
  uint32_t n = Encode(cp, bytes);
  out->append(reinterpret_cast<const char*>(bytes), n);
}

uint8_t Utf8Step(uint8_t phase, uint8_t byte) {
  switch (phase) {
    case 0:
      if (byte < 0x80) return 0;
      if (byte >= 0xC2 && byte <= 0xDF) return 1;
      if (byte == 0xE0) return 4;
      if (byte == 0xED) return 5;
      if (byte >= 0xE1 && byte <= 0xEF) return 2;
      if (byte == 0xF0) return 6;
      if (byte >= 0xF1 && byte <= 0xF3) return 3;
      if (byte == 0xF4) return 7;
      return kUtf8Invalid;
    case 1: case 2: case 3:
      return byte >= 0x80 && byte <= 0xBF ? phase - 1 : kUtf8Invalid;
    case 4: return byte >= 0xA0 && byte <= 0xBF ? 1 : kUtf8Invalid;
    case 5: return byte >= 0x80 && byte <= 0x9F ? 1 : kUtf8Invalid;
    case 6: return byte >= 0x90 && byte <= 0xBF ? 2 : kUtf8Invalid;
    case 7: return byte >= 0x80 && byte <= 0x8F ? 2 : kUtf8Invalid;
    default: return kUtf8Invalid;
  }
}

DecodedCodepoint DecodeUtf8(std::string_view s) {
  if (s.empty()) return {0, 0};
  uint8_t b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80) return {b0, 1};
  uint32_t length;
  uint32_t cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    cp = b0 & 0x07;
  } else {
    return {0, 0};
  }
  if (s.size() < length) return {0, 0};
  for (uint32_t i = 1; i < length; ++i) {
    uint8_t b = static_cast<uint8_t>(s[i]);
    if ((b & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (EncodedLength(cp) != length) return {0, 0};  // overlong
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {cp, length};
}

std::vector<std::vector<ByteRange>> Utf8Sequences(uint32_t lo, uint32_t hi) {
  std::vector<std::vector<ByteRange>> out;
  if (lo > hi) return out;
  std::vector<std::pair<uint32_t, uint32_t>> pending = {{lo, hi}};
  while (!pending.empty()) {
    auto [a, b] = pending.back();
    pending.pop_back();
    if (a > b) continue;
    // Surrogates have no encoding: cut them out.
    if (a <= 0xDFFF && b >= 0xD800) {
      if (b > 0xDFFF) pending.push_back({0xE000, b});
      if (a < 0xD800) pending.push_back({a, 0xD7FF});
      continue;
    }
    // Different encoding lengths: split at the boundary.
    uint32_t len = EncodedLength(a);
    if (EncodedLength(b) != len) {
      uint32_t boundary = kMaxForLength[len - 1];
      pending.push_back({boundary + 1, b});
      pending.push_back({a, boundary});
      continue;
    }
    if (len == 1) {
      out.push_back({{static_cast<uint8_t>(a), static_cast<uint8_t>(b)}});
      continue;
    }
    // Split until each trailing block of continuation bytes is complete.
    bool split = false;
    for (uint32_t i = 1; i < len; ++i) {
      uint32_t mask = (1u << (6 * i)) - 1;
      if ((a & ~mask) != (b & ~mask)) {
        if ((a & mask) != 0) {
          pending.push_back({(a | mask) + 1, b});
          pending.push_back({a, a | mask});
          split = true;
          break;
        }
        if ((b & mask) != mask) {
          pending.push_back({b & ~mask, b});
          pending.push_back({a, (b & ~mask) - 1});
          split = true;
          break;
        }
      }
    }
    if (split) continue;
    uint8_t ea[4], eb[4];
    Encode(a, ea);
    Encode(b, eb);
    std::vector<ByteRange> seq;
    for (uint32_t i = 0; i < len; ++i) seq.push_back({ea[i], eb[i]});
    out.push_back(std::move(seq));
  }
  return out;
}

}  // namespace zapgram::grammar

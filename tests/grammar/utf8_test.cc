// UTF-8 encoding/decoding, exhaustive over every code point, and the split
// of code-point ranges into byte-range sequences checked against decoding.
#include "grammar/utf8.h"

#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace zapgram::grammar {
namespace {

TEST(Utf8Test, EncodeDecodeRoundTripsEveryCodepoint) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    AppendUtf8(cp, &s);
    DecodedCodepoint d = DecodeUtf8(s);
    ASSERT_EQ(d.codepoint, cp);
    ASSERT_EQ(d.length, s.size());
  }
}

TEST(Utf8Test, DecodeRejectsMalformed) {
  EXPECT_EQ(DecodeUtf8("\xC0\xAF").length, 0u);          // overlong '/'
  EXPECT_EQ(DecodeUtf8("\xE0\x80\xAF").length, 0u);      // overlong
  EXPECT_EQ(DecodeUtf8("\xED\xA0\x80").length, 0u);      // surrogate U+D800
  EXPECT_EQ(DecodeUtf8("\xF4\x90\x80\x80").length, 0u);  // above U+10FFFF
  EXPECT_EQ(DecodeUtf8("\xCE").length, 0u);              // truncated
  EXPECT_EQ(DecodeUtf8("\x80").length, 0u);              // lone continuation
  EXPECT_EQ(DecodeUtf8("").length, 0u);
}

// The byte-at-a-time reader reads s as one whole character (every phase
// after a byte but the last inside a character, the last back at a
// boundary) exactly when DecodeUtf8 decodes all of s: every string of 1 to
// 3 bytes, and 4-byte strings with the last byte at the edges of the
// continuation range.
int ReaderCharacterLength(std::string_view s) {
  uint8_t phase = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    phase = Utf8Step(phase, static_cast<uint8_t>(s[i]));
    if (phase == kUtf8Invalid) return 0;
    if (phase == 0) return i + 1 == s.size() ? static_cast<int>(s.size()) : 0;
  }
  return 0;  // cut inside a character
}

TEST(Utf8Test, ByteReaderAgreesWithDecode) {
  std::string s;
  int characters = 0;
  auto check = [&] {
    const DecodedCodepoint d = DecodeUtf8(s);
    const int decoded = d.length == s.size() ? static_cast<int>(s.size()) : 0;
    ASSERT_EQ(ReaderCharacterLength(s), decoded) << absl::CHexEscape(s);
    characters += decoded != 0;
  };
  for (uint32_t a = 0; a < 256; ++a) {
    s.assign(1, static_cast<char>(a));
    check();
    for (uint32_t b = 0; b < 256; ++b) {
      s.assign({static_cast<char>(a), static_cast<char>(b)});
      check();
      for (uint32_t c = 0; c < 256; ++c) {
        s.assign({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)});
        check();
        if (a < 0xF0 || a > 0xF7) continue;
        for (uint32_t d : {0x7Fu, 0x80u, 0xBFu, 0xC0u}) {
          s.assign({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c), static_cast<char>(d)});
          check();
        }
      }
    }
  }
  // 128 + 1,920 + 61,440 one-, two- and three-byte characters, and the
  // four-byte ones with an edge last byte (2 of every 64).
  EXPECT_EQ(characters, 128 + 1920 + 61440 + 2 * (0x110000 - 0x10000) / 64);
}

// A byte string matches one of the sequences iff it has their length and each
// byte lies in the matching range.
bool MatchesSome(const std::vector<std::vector<ByteRange>>& seqs, const std::string& s) {
  for (const auto& seq : seqs) {
    if (seq.size() != s.size()) continue;
    bool ok = true;
    for (size_t i = 0; i < seq.size() && ok; ++i) {
      uint8_t b = static_cast<uint8_t>(s[i]);
      ok = b >= seq[i].lo && b <= seq[i].hi;
    }
    if (ok) return true;
  }
  return false;
}

TEST(Utf8Test, SequencesMatchExactlyTheRange) {
  const std::pair<uint32_t, uint32_t> ranges[] = {
      {0, 0x10FFFF}, {0x41, 0x5A}, {0x80, 0x7FF}, {0x3B1, 0x3C9}, {0x7F, 0x800},
      {0xD000, 0xE100}, {0x1F600, 0x1F64F}, {0xFFFF, 0x10000}, {0x20, 0x10FFFF}};
  for (auto [lo, hi] : ranges) {
    auto seqs = Utf8Sequences(lo, hi);
    // Every code point: inside the range iff its encoding matches.
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x20000 ? 1 : 97)) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      std::string s;
      AppendUtf8(cp, &s);
      ASSERT_EQ(MatchesSome(seqs, s), cp >= lo && cp <= hi)
          << "range " << lo << "-" << hi << " cp " << cp;
    }
    // No sequence matches a malformed 2- or 3-byte string.
    for (uint32_t b0 = 0x80; b0 < 0x100; ++b0) {
      for (uint32_t b1 = 0; b1 < 0x100; b1 += 3) {
        std::string s = {static_cast<char>(b0), static_cast<char>(b1)};
        if (DecodeUtf8(s).length == 2) continue;
        ASSERT_FALSE(MatchesSome(seqs, s));
      }
    }
  }
}

TEST(Utf8Test, SequencesOfWholeRangeAreFew) {
  // The classic split of [0, 0x10FFFF] minus surrogates has 9 sequences.
  EXPECT_EQ(Utf8Sequences(0, 0x10FFFF).size(), 9u);
}

}  // namespace
}  // namespace zapgram::grammar

// How big a test runs: the full size in plain builds, a smaller one under
// the sanitizers (the build defines ZAPGRAM_SANITIZED for ASan/UBSan, TSan
// and fuzzing builds, which run 5-20x slower). One definition, so every
// test says its two sizes in one line instead of an #ifdef block.
#ifndef ZAPGRAM_TESTS_SUPPORT_TEST_SCALE_H_
#define ZAPGRAM_TESTS_SUPPORT_TEST_SCALE_H_

namespace zapgram::testing {

#ifdef ZAPGRAM_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// `full` in plain builds, `sanitized` under the sanitizers.
template <typename T>
constexpr T Scaled(T full, T sanitized) {
  return kSanitized ? sanitized : full;
}

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_TEST_SCALE_H_

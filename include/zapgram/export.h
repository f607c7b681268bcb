/* ZAPGRAM_EXPORT marks what libzapgram.so exports: the C API functions and
 * the public C++ classes and functions of include/zapgram/. The library is
 * compiled with hidden visibility, and cmake/libzapgram.map hides whatever
 * else has default visibility (template instances of the standard library),
 * so a symbol a consumer may call needs this mark here and a line in the
 * map. The static library is unaffected: hidden symbols still link within one
 * program. Tests: scripts/check_exports.sh (ctest Install.Exports). */
#ifndef ZAPGRAM_EXPORT_H_
#define ZAPGRAM_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define ZAPGRAM_EXPORT __attribute__((visibility("default")))
#else
#define ZAPGRAM_EXPORT
#endif

#endif /* ZAPGRAM_EXPORT_H_ */

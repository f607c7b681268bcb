#!/usr/bin/env bash
# Checks what a built libzapgram.so exports: every defined dynamic symbol must
# be a C API function (zapgram_*) or a member of a public C++ class of
# include/zapgram/ (zapgram::Grammar, Recognizer, Vocabulary, CompiledGrammar,
# Matcher, BatchMasker, zapgram::ComputeMasks), and the C API and the main C++
# entry points must be there. Also checks the SONAME.
# Usage: scripts/check_exports.sh path/to/libzapgram.so
set -euo pipefail
lib=${1:?usage: check_exports.sh LIBZAPGRAM.so}
symbols=$(nm -D --defined-only --demangle "$lib" | awk '{ $1 = ""; $2 = ""; sub(/^  /, ""); print }')
public='^(zapgram_[a-z_]+|zapgram::(Grammar|Recognizer|Vocabulary|CompiledGrammar|Matcher|BatchMasker)::|zapgram::ComputeMasks\(|ZAPGRAM_[0-9A-Z_.]+$)'
leaked=$(grep -Ev "$public" <<<"$symbols" || true)
if [[ -n "$leaked" ]]; then
  echo "check_exports: $lib exports non-public symbols:" >&2
  head -n 20 <<<"$leaked" >&2
  exit 1
fi
for needed in zapgram_vocab_load zapgram_grammar_compile zapgram_matcher_compute_mask \
              zapgram_matcher_accept_token zapgram_sample 'zapgram::Grammar::Load(' \
              'zapgram::Vocabulary::Load(' 'zapgram::CompiledGrammar::Compile(' \
              'zapgram::Matcher::ComputeMask(' 'zapgram::Matcher::AcceptToken(' \
              zapgram_matcher_traverse_draft_tree 'zapgram::Matcher::TraverseDraftTree('; do
  if ! grep -qF -- "$needed" <<<"$symbols"; then
    echo "check_exports: $lib does not export $needed" >&2
    exit 1
  fi
done
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
if [[ ! "$soname" =~ ^libzapgram\.so\.[0-9]+$ ]]; then
  echo "check_exports: $lib has SONAME '$soname', expected libzapgram.so.MAJOR" >&2
  exit 1
fi
echo "check_exports: $(wc -l <<<"$symbols") public symbols, SONAME $soname"

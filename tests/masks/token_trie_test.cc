// placeholder: filled in by the work on tests/masks/token_trie_test.cc

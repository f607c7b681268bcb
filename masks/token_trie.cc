// placeholder: filled in by the work on masks/token_trie.cc

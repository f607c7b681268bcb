// placeholder: filled in by the work on tests/data/xgrammar_ebnf_test.cc

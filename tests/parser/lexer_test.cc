// placeholder: filled in by the work on tests/parser/lexer_test.cc

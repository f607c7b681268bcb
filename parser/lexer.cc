// placeholder: filled in by the work on parser/lexer.cc

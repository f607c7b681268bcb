// placeholder: filled in by the work on grammar/lark_lowering.cc

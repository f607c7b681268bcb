// placeholder: filled in by the work on tests/data/lark_data_test.cc

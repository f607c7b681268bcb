// placeholder: filled in by the work on tests/masks/vocabulary_test.cc

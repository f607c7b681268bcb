// placeholder: filled in by the work on masks/vocabulary.cc

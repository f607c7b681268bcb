// Reads JSON text into an nlohmann::ordered_json in time linear in its size.
//
// ordered_json keeps an object's members in their written order (the JSON
// Schema converter needs it: `properties` order is the default member
// order), but its object is a vector searched linearly, and nlohmann's own
// reader looks every new key up in it before inserting: an object of n
// members costs n^2 / 2 key compares (a schema of 5,000 properties spent a
// quarter of its compile there). This reader drives nlohmann's SAX parser
// and appends members itself; a duplicate key is found by a linear search
// while an object is small and by a hash index of its keys once it is not.
// Duplicates keep nlohmann's meaning: the first position, the last value.
// The reader keeps an explicit stack, no recursion.
#ifndef ZAPGRAM_TRANSFORMS_ORDERED_JSON_READER_H_
#define ZAPGRAM_TRANSFORMS_ORDERED_JSON_READER_H_

#include <string_view>

#include "nlohmann/json.hpp"

namespace zapgram::transforms {

// The value of `text`, or a discarded value (is_discarded()) when `text` is
// not one JSON value.
nlohmann::ordered_json ReadOrderedJson(std::string_view text);

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_ORDERED_JSON_READER_H_

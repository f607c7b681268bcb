#include "transforms/ordered_json_reader.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace zapgram::transforms {
namespace {

using Json = nlohmann::ordered_json;
using Members = Json::object_t::Container;  // the vector under ordered_map

// Objects up to this many members look a key up by a linear search.
constexpr size_t kIndexFrom = 32;

class Reader final : public nlohmann::json_sax<Json> {
 public:
  Json Take() { return std::move(root_); }

  bool null() override { return Place(Json(nullptr)) != nullptr; }
  bool boolean(bool value) override { return Place(Json(value)) != nullptr; }
  bool number_integer(number_integer_t value) override { return Place(Json(value)) != nullptr; }
  bool number_unsigned(number_unsigned_t value) override { return Place(Json(value)) != nullptr; }
  bool number_float(number_float_t value, const string_t&) override {
    return Place(Json(value)) != nullptr;
  }
  bool string(string_t& value) override { return Place(Json(std::move(value))) != nullptr; }
  bool binary(binary_t& value) override {
    return Place(Json::binary(std::move(value))) != nullptr;
  }
  bool start_object(std::size_t) override {
    open_.push_back({Place(Json(Json::value_t::object)), {}});
    return true;
  }
  bool start_array(std::size_t) override {
    open_.push_back({Place(Json(Json::value_t::array)), {}});
    return true;
  }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& name) override {
    Open& object = open_.back();
    Members& members = object.value->get_ref<Json::object_t&>();
    if (object.index.empty() && members.size() < kIndexFrom) {
      for (auto& member : members) {
        if (member.first == name) {
          slot_ = &member.second;
          return true;
        }
      }
    } else {
      if (object.index.empty()) {
        for (size_t i = 0; i < members.size(); ++i) object.index.emplace(members[i].first, i);
      }
      auto [at, inserted] = object.index.try_emplace(name, members.size());
      if (!inserted) {
        slot_ = &members[at->second].second;
        return true;
      }
    }
    members.emplace_back(std::move(name), nullptr);
    slot_ = &members.back().second;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  struct Open {
    Json* value;                                       // an object or array being filled
    absl::flat_hash_map<std::string, size_t> index;  // key -> member, for large objects
  };

  // Puts `value` where the next value goes: the root, the end of the open
  // array, or the slot of the open object's last key. A container's element
  // is not moved while it is open: its parent grows only after it closes.
  Json* Place(Json&& value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *open_.back().value;
    if (parent.is_array()) {
      Json::array_t& elements = parent.get_ref<Json::array_t&>();
      elements.push_back(std::move(value));
      return &elements.back();
    }
    *slot_ = std::move(value);
    return slot_;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  Json root_;
  std::vector<Open> open_;
  Json* slot_ = nullptr;
};

}  // namespace

nlohmann::ordered_json ReadOrderedJson(std::string_view text) {
  Reader reader;
  if (!Json::sax_parse(text.begin(), text.end(), &reader)) return Json(Json::value_t::discarded);
  return reader.Take();
}

}  // namespace zapgram::transforms

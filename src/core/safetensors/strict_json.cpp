#include "core/safetensors/strict_json.h"

#include <set>
#include <string>
#include <vector>

#include "fk/status.h"

namespace fk::safetensors {

namespace {
// nlohmann's messages start with "[json.exception.parse_error.101] "; the id helps nobody.
std::string strip_exception_id(const char* what) {
  std::string s = what;
  if (!s.empty() && s[0] == '[') {
    if (auto pos = s.find("] "); pos != std::string::npos) s = s.substr(pos + 2);
  }
  return s;
}

struct DuplicateKey {
  std::string key;
};
struct TooDeep {};
}  // namespace

nlohmann::json parse_strict_json(std::string_view text, std::string_view source, std::string_view what) {
  using nlohmann::json;
  // One set of keys per open object (nullptr marks an open array), so that duplicates are
  // found at every level.
  std::vector<std::set<std::string>> open_objects;
  std::vector<bool> is_object;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth) throw TooDeep{};
        is_object.push_back(event == json::parse_event_t::object_start);
        if (is_object.back()) open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!is_object.empty()) {
          if (is_object.back()) open_objects.pop_back();
          is_object.pop_back();
        }
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string()) {
          if (!open_objects.back().insert(parsed.get_ref<const std::string&>()).second)
            throw DuplicateKey{parsed.get<std::string>()};
        }
        break;
      case json::parse_event_t::value: break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const DuplicateKey& d) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": ", what, " has the key '", printable(d.key),
            "' more than once in one object (ambiguous: refusing to pick one)");
  } catch (const TooDeep&) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": ", what, " nests deeper than ", kMaxJsonDepth, " levels");
  } catch (const json::exception& e) {
    // The message quotes the input around the error, which may be any bytes.
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": ", what, " is not valid JSON: ",
            printable(strip_exception_id(e.what()), /*escape_non_ascii=*/true));
  }
}

std::string printable(std::string_view text, bool escape_non_ascii) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || (escape_non_ascii && c >= 0x80)) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

const char* json_type_name(const nlohmann::json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number_float()) return "floating-point number";
  return j.type_name();
}

}  // namespace fk::safetensors

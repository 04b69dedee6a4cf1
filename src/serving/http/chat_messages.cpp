#include "serving/http/chat_messages.h"

#include <string>

#include "fk/status.h"
#include "serving/http/openai_api.h"

namespace fk::serve {

using nlohmann::ordered_json;

namespace {

[[noreturn]] void bad(const std::string& message) { throw ApiError(400, "invalid_request_error", message, "messages"); }

bool known_role(const std::string& role) {
  for (const char* r : {"system", "developer", "user", "assistant", "tool", "function"})
    if (role == r) return true;
  return false;
}

// Part types whose value is text, and the key holding it.
const char* text_key(const std::string& type) {
  if (type == "text" || type == "input_text" || type == "output_text") return "text";
  if (type == "refusal") return "refusal";
  return nullptr;
}

// The text of one content part; refuses parts that are not text.
std::string part_text(const ordered_json& part, size_t m, size_t p) {
  if (part.is_string()) return part.get<std::string>();
  if (!part.is_object()) bad(concat("message ", m, ": content part ", p, " must be an object, got ", part.type_name()));
  const auto t = part.find("type");
  if (t == part.end() || !t->is_string()) bad(concat("message ", m, ": content part ", p, " has no string 'type'"));
  const std::string type = t->get<std::string>();
  const char* key = text_key(type);
  if (key == nullptr)
    bad(concat("message ", m, ": content part type '", type,
               "' is not supported: this model takes text only (parts of type 'text')"));
  const auto text = part.find(key);
  if (text == part.end() || !text->is_string())
    bad(concat("message ", m, ": content part ", p, " of type '", type, "' needs a string '", key, "'"));
  return text->get<std::string>();
}

}  // namespace

ordered_json chat_messages_for_template(const ordered_json& messages, bool template_takes_parts) {
  if (!messages.is_array() || messages.empty()) bad("'messages' must be a non-empty list");
  ordered_json out = ordered_json::array();
  for (size_t m = 0; m < messages.size(); ++m) {
    const ordered_json& msg = messages[m];
    if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string())
      bad(concat("message ", m, " must be an object with a string 'role'"));
    const std::string role = msg["role"].get<std::string>();
    if (!known_role(role))
      bad(concat("message ", m, " has the unknown role '", role,
                 "'; roles are system, developer, user, assistant, tool and function"));
    ordered_json one = msg;
    const auto c = msg.find("content");
    if (c != msg.end() && c->is_array()) {
      std::string joined;
      for (size_t p = 0; p < c->size(); ++p) {
        if (p > 0) joined += "\n";
        joined += part_text((*c)[p], m, p);
      }
      if (!template_takes_parts) one["content"] = joined;
    } else if (c != msg.end() && !c->is_string() && !c->is_null()) {
      bad(concat("message ", m, ": 'content' must be a string, a list of parts, or null, got ", c->type_name()));
    }
    out.push_back(std::move(one));
  }
  return out;
}

}  // namespace fk::serve

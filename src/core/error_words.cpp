#include "core/error_words.h"

#include <cctype>
#include <string_view>

namespace fk {
namespace {

// Drops a trailing " [path:line]".
std::string_view without_source_place(std::string_view s) {
  if (s.empty() || s.back() != ']') return s;
  const size_t open = s.rfind(" [");
  if (open == std::string_view::npos) return s;
  const std::string_view place = s.substr(open + 2, s.size() - open - 3);
  const size_t colon = place.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == place.size()) return s;
  for (char c : place.substr(colon + 1))
    if (!std::isdigit(static_cast<unsigned char>(c))) return s;
  return s.substr(0, open);
}

// The end of a check's condition: the first ": " outside brackets and string literals
// whose colon follows the condition directly (a ternary's " : " has a space before it).
size_t check_condition_end(std::string_view s) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    else if (c == ':' && s[i + 1] == ' ' && depth == 0 && i > 0 && s[i - 1] != ' ' && s[i - 1] != ':') return i;
  }
  return std::string_view::npos;
}

}  // namespace

std::string error_words(const std::string& what) {
  std::string_view s = without_source_place(what);
  constexpr std::string_view kCheck = "check failed: ";
  if (s.substr(0, kCheck.size()) == kCheck) {
    const std::string_view rest = s.substr(kCheck.size());
    const size_t end = check_condition_end(rest);
    if (end != std::string_view::npos && end + 2 < rest.size()) return std::string(rest.substr(end + 2));
    if (end != std::string_view::npos) return std::string(s.substr(0, kCheck.size() + end));  // no message
  }
  return std::string(s);
}

}  // namespace fk

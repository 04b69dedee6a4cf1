// Python's str case operations (upper, lower, title, capitalize) on UTF-8 text, for the
// scripts chat templates meet beyond ASCII: Latin-1, Latin Extended-A, Greek, Cyrillic.
// Other characters are left as they are (Python would also map e.g. Armenian; templates
// apply these to role names, not to arbitrary text).
#pragma once
#include <string>

namespace fk::chat::detail {

std::string utf8_upper(const std::string& s);
std::string utf8_lower(const std::string& s);
// str.title(): a cased letter after an uncased character starts a word.
std::string utf8_title(const std::string& s);
// str.capitalize(): first character upper-cased, the rest lower-cased.
std::string utf8_capitalize(const std::string& s);
// Jinja2's |title: words start after whitespace or one of -({[<.
std::string utf8_title_words(const std::string& s);

}  // namespace fk::chat::detail

#include "text/template/unicode.h"

#include <string_view>
#include <vector>

namespace fk::chat::detail {
namespace {

std::vector<char32_t> decode(const std::string& s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) {  // not UTF-8: keep the byte as a code point < 0x100
      out.push_back(0xDC00 + c);           // (a lone surrogate, which nothing maps)
      ++i;
      continue;
    }
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

void encode(char32_t cp, std::string& out) {
  if (cp >= 0xDC00 && cp < 0xDD00) {  // a byte that was not UTF-8, restored as is
    out += char(cp - 0xDC00);
  } else if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

char32_t upper(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 0x20;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F) {
    bool odd_lower = (c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
    bool even_lower = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_lower && (c & 1)) return c - 1;
    if (even_lower && !(c & 1)) return c - 1;
    return c;
  }
  if (c == 0x3C2) return 0x3A3;  // final sigma
  if (c >= 0x3B1 && c <= 0x3C9) return c - 0x20;
  if (c >= 0x430 && c <= 0x44F) return c - 0x20;
  if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  return c;
}

char32_t lower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17F) {
    bool even_upper = (c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (even_upper && !(c & 1)) return c + 1;
    if (odd_upper && (c & 1)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 0x20;
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  return c;
}

bool cased(char32_t c) { return upper(c) != c || lower(c) != c || c == 0xDF; }

template <class F>
std::string map_each(const std::string& s, F&& f) {
  std::string out;
  out.reserve(s.size());
  auto cps = decode(s);
  for (size_t i = 0; i < cps.size(); ++i) encode(f(cps[i], i), out);
  return out;
}

}  // namespace

std::string utf8_upper(const std::string& s) {
  std::string out = map_each(s, [](char32_t c, size_t) { return upper(c); });
  // ß has no single upper-case letter: Python writes "SS".
  for (size_t p = out.find("\xC3\x9F"); p != std::string::npos; p = out.find("\xC3\x9F", p + 2)) out.replace(p, 2, "SS");
  return out;
}
std::string utf8_lower(const std::string& s) { return map_each(s, [](char32_t c, size_t) { return lower(c); }); }

std::string utf8_capitalize(const std::string& s) {
  return map_each(s, [](char32_t c, size_t i) { return i == 0 ? upper(c) : lower(c); });
}

std::string utf8_title(const std::string& s) {
  bool prev_cased = false;
  return map_each(s, [&](char32_t c, size_t) {
    char32_t r = prev_cased ? lower(c) : upper(c);
    prev_cased = cased(c);
    return r;
  });
}

std::string utf8_title_words(const std::string& s) {
  bool start = true;
  return map_each(s, [&](char32_t c, size_t) {
    bool sep = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
               std::u32string_view(U"-({[<").find(c) != std::u32string_view::npos;
    if (sep) {
      start = true;
      return c;
    }
    char32_t r = start ? upper(c) : lower(c);
    start = false;
    return r;
  });
}

}  // namespace fk::chat::detail

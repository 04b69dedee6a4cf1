#include "text/tokenizer/unicode.h"

#include <algorithm>

#include "fk/status.h"
#include "text/tokenizer/unicode_tables.h"

namespace fk::tokenizer::unicode {
namespace {

uint8_t range_lookup(const CategoryRange* table, size_t n, char32_t c) {
  const CategoryRange* end = table + n;
  const CategoryRange* it =
      std::upper_bound(table, end, c, [](char32_t v, const CategoryRange& r) { return v < r.lo; });
  if (it == table) return 0;
  --it;
  return c <= it->hi ? it->value : 0;
}

// Decodes one code point at s[i]; returns its byte length, or 0 when the bytes there are not a
// valid (shortest-form, non-surrogate) sequence. `valid_prefix` gets how many bytes form a
// valid prefix of some sequence (the "maximal subpart" lossy decoding replaces as one unit).
int decode_one(std::string_view s, size_t i, char32_t& out, int& valid_prefix) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  valid_prefix = 1;
  if (b0 < 0x80) { out = b0; return 1; }
  int len;
  char32_t cp;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) { len = 2; cp = b0 & 0x1F; }
  else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3; cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4; cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    valid_prefix = 0;
    return 0;
  }
  for (int k = 1; k < len; ++k) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[i + k]);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) return 0;
    cp = (cp << 6) | (b & 0x3F);
    valid_prefix = k + 1;
  }
  out = cp;
  return len;
}

// Hangul syllables compose and decompose arithmetically, outside the tables.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

void decompose(char32_t c, std::u32string& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const char32_t s = c - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition* end = kDecompositions + kDecompositionCount;
  const Decomposition* it = std::lower_bound(kDecompositions, end, c,
                                             [](const Decomposition& d, char32_t v) { return d.cp < v; });
  if (it != end && it->cp == c)
    out.append(kDecompositionData + it->offset, it->length);
  else
    out.push_back(c);
}

char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const Composition* end = kCompositions + kCompositionCount;
  const Composition* it = std::lower_bound(kCompositions, end, std::pair{a, b}, [](const Composition& c, auto v) {
    return c.first != v.first ? c.first < v.first : c.second < v.second;
  });
  return (it != end && it->first == a && it->second == b) ? it->composite : 0;
}

}  // namespace

uint8_t category(char32_t c) { return range_lookup(kCategoryRanges, kCategoryRangeCount, c); }
uint8_t combining_class(char32_t c) {
  return c < 0x300 ? 0 : range_lookup(kCombiningClassRanges, kCombiningClassRangeCount, c);
}

void append_lowercase(std::u32string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  if (c == 0x130) {  // the one mapping to two code points (SpecialCasing.txt, unconditional)
    out += U"i\u0307";
    return;
  }
  const CaseRange* end = kLowercaseRanges + kLowercaseRangeCount;
  const CaseRange* it =
      std::upper_bound(kLowercaseRanges, end, c, [](char32_t v, const CaseRange& r) { return v < r.lo; });
  if (it != kLowercaseRanges) {
    --it;
    if (c <= it->hi && (c - it->lo) % it->stride == 0) {
      out.push_back(static_cast<char32_t>(static_cast<int32_t>(c) + it->delta));
      return;
    }
  }
  out.push_back(c);
}

bool is_whitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

int utf8_length(unsigned char b) {
  if (b < 0xC0) return 1;
  if (b < 0xE0) return 2;
  if (b < 0xF0) return 3;
  return b < 0xF8 ? 4 : 1;
}

void decode_utf8(std::string_view s, std::u32string& cps, std::vector<size_t>& offsets, const char* what) {
  cps.clear();
  offsets.clear();
  for (size_t i = 0; i < s.size();) {
    char32_t c;
    int prefix;
    const int n = decode_one(s, i, c, prefix);
    FK_CHECK(n > 0, what, " is not valid UTF-8 (byte ", i, ")");
    cps.push_back(c);
    offsets.push_back(i);
    i += n;
  }
  offsets.push_back(s.size());
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    char32_t c;
    int prefix;
    const int n = decode_one(s, i, c, prefix);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string from_utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    char32_t c;
    int prefix;
    const int n = decode_one(bytes, i, c, prefix);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // one U+FFFD per maximal invalid subpart
      i += std::max(prefix, 1);
    }
  }
  return out;
}

std::u32string nfd(std::u32string_view cps) {
  // Full canonical decomposition, then canonical ordering of each run of non-starters.
  std::u32string d;
  d.reserve(cps.size() + 8);
  for (char32_t c : cps) {
    if (c < 0xC0)  // nothing below À decomposes
      d.push_back(c);
    else
      decompose(c, d);
  }
  for (size_t i = 0; i < d.size();) {
    if (combining_class(d[i]) == 0) { ++i; continue; }
    size_t j = i;
    while (j < d.size() && combining_class(d[j]) != 0) ++j;
    std::stable_sort(d.begin() + i, d.begin() + j,
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  return d;
}

std::string nfc(std::string_view s) {
  if (std::all_of(s.begin(), s.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x80; }))
    return std::string(s);
  std::u32string cps;
  std::vector<size_t> offsets;
  decode_utf8(s, cps, offsets, "text to normalize");
  const std::u32string d = nfd(cps);
  // Canonical composition: each character joins the last starter unless blocked.
  std::u32string out;
  out.reserve(d.size());
  size_t starter = std::u32string::npos;
  int last_ccc = -1;
  for (char32_t c : d) {
    const int ccc = combining_class(c);
    if (starter != std::u32string::npos && (last_ccc < ccc || (last_ccc == 0 && out.size() == starter + 1))) {
      if (const char32_t comp = compose(out[starter], c)) {
        out[starter] = comp;
        continue;
      }
    }
    if (ccc == 0) {
      starter = out.size();
      last_ccc = 0;
    } else {
      last_ccc = ccc;
    }
    out.push_back(c);
  }
  std::string r;
  r.reserve(s.size());
  for (char32_t c : out) append_utf8(r, c);
  return r;
}

}  // namespace fk::tokenizer::unicode

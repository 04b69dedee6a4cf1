// UTF-8 and Unicode helpers of the tokenizer: code point decoding, the character classes
// the pre-tokenizer patterns use, NFC/NFD, lowercasing, and lossy UTF-8 repair with Rust's rules
// (HF decoders produce text through String::from_utf8_lossy, so U+FFFD counts must match it).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fk::tokenizer::unicode {

// kWord: a word character as the Rust regex crate's Unicode \w sees it (Alphabetic, marks,
// decimal digits, connector punctuation, join controls): what HF tokenizers' single_word
// test uses. Not the same as Python's re \w (see scripts/gen_unicode_tables.py).
// The kLegacy* bits are the classes of the unicode_categories crate, which HF's BertNormalizer,
// BertPreTokenizer and Punctuation use: its data is Unicode 8.0, so code points assigned since
// are in none of them (kLegacyOther: Cc, Cf or Co; kLegacyPunctuation: any P category).
enum : uint8_t {
  kLetter = 1,
  kNumber = 2,
  kPunctuation = 4,
  kMark = 8,
  kWord = 16,
  kLegacyOther = 32,
  kLegacyNonspacingMark = 64,
  kLegacyPunctuation = 128,
};

// Category class bits of a code point (0 for anything else).
uint8_t category(char32_t c);
inline bool is_letter(char32_t c) { return c < 0x80 ? ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') : (category(c) & kLetter) != 0; }
inline bool is_number(char32_t c) { return c < 0x80 ? (c >= '0' && c <= '9') : (category(c) & kNumber) != 0; }
// The Unicode White_Space property (what \s matches in the HF regexes and Rust's is_whitespace).
bool is_whitespace(char32_t c);
uint8_t combining_class(char32_t c);

// Decodes valid UTF-8 into code points and the byte offset of each (plus a final offset).
// Throws fk::Error on invalid UTF-8, naming `what`.
void decode_utf8(std::string_view s, std::u32string& cps, std::vector<size_t>& offsets, const char* what);
bool is_valid_utf8(std::string_view s);
void append_utf8(std::string& out, char32_t c);
// Length of the UTF-8 sequence starting with lead byte b (1 for invalid lead bytes).
int utf8_length(unsigned char b);

// Valid UTF-8 where every maximal invalid subpart becomes U+FFFD (Rust from_utf8_lossy).
std::string from_utf8_lossy(std::string_view bytes);

// Canonical composition (Unicode NFC); a pure-ASCII string is returned unchanged at once.
std::string nfc(std::string_view s);
// Canonical decomposition (Unicode NFD): full decompositions, then canonical ordering of marks.
std::u32string nfd(std::u32string_view cps);

// Appends the full lowercase mapping of c (Rust's char::to_lowercase: one code point, except
// U+0130 which becomes "i\u0307").
void append_lowercase(std::u32string& out, char32_t c);

}  // namespace fk::tokenizer::unicode

// Unicode data the tokenizer needs, generated into unicode_tables.cpp by
// scripts/gen_unicode_tables.py (sorted tables, looked up by binary search).
#pragma once
#include <cstddef>
#include <cstdint>

namespace fk::tokenizer::unicode {

struct CategoryRange {
  char32_t lo, hi;
  uint8_t value;  // category class bits (kLetter...) or a canonical combining class
};
struct Decomposition {
  char32_t cp;
  uint16_t offset;  // into kDecompositionData
  uint8_t length;
};
struct Composition {
  char32_t first, second, composite;
};
// Every `stride`-th code point from lo to hi lowercases to itself + delta.
struct CaseRange {
  char32_t lo, hi;
  int32_t delta;
  uint8_t stride;
};

extern const CategoryRange kCategoryRanges[];
extern const size_t kCategoryRangeCount;
extern const CategoryRange kCombiningClassRanges[];
extern const size_t kCombiningClassRangeCount;
extern const Decomposition kDecompositions[];
extern const size_t kDecompositionCount;
extern const char32_t kDecompositionData[];
extern const Composition kCompositions[];
extern const size_t kCompositionCount;
extern const CaseRange kLowercaseRanges[];
extern const size_t kLowercaseRangeCount;

}  // namespace fk::tokenizer::unicode

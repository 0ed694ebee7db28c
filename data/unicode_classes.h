// unicode_classes.h — the tables behind data/unicode.h's character classes:
// sorted, disjoint code point ranges of the Unicode letters (\p{L}, general
// category L*), numbers (\p{N}, N*) and whitespace (the White_Space
// property). data/unicode_classes.cpp is generated from the Unicode
// Character Database by tools/gen_unicode_classes.py.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nc {
namespace data {
namespace unicode_tables {

struct CodeRange {
    uint32_t lo, hi;  // inclusive
};
extern const CodeRange kLetters[], kNumbers[], kWhiteSpace[];
extern const size_t kLetters_count, kNumbers_count, kWhiteSpace_count;
extern const char* const kUnicodeVersion;

}  // namespace unicode_tables
}  // namespace data
}  // namespace nc

// unicode.cpp — UTF-8 decoding, class lookups over the generated tables, and
// the terminal-safe form of text (unicode.h).
#include "data/unicode.h"

#include <algorithm>
#include <cstdio>

#include "data/unicode_classes.h"

namespace nc {
namespace data {

std::vector<Utf8Char> decode_utf8(const std::string& text) {
    std::vector<Utf8Char> out;
    out.reserve(text.size());
    size_t i = 0, n = text.size();
    auto byte = [&](size_t k) { return (unsigned char)text[k]; };
    auto continuation = [&](size_t k) { return k < n && (byte(k) & 0xC0) == 0x80; };
    while (i < n) {
        unsigned char b = byte(i);
        uint32_t cp = 0;
        size_t len = 0;
        // The lead byte fixes the length; the first continuation byte's range
        // excludes overlong forms, surrogates and code points past U+10FFFF
        // (the table of well-formed sequences, Unicode 15.0 section 3.9).
        unsigned char lo = 0x80, hi = 0xBF;
        if (b < 0x80) { cp = b; len = 1; }
        else if (b >= 0xC2 && b <= 0xDF) { cp = b & 0x1F; len = 2; }
        else if (b >= 0xE0 && b <= 0xEF) { cp = b & 0x0F; len = 3; if (b == 0xE0) lo = 0xA0; if (b == 0xED) hi = 0x9F; }
        else if (b >= 0xF0 && b <= 0xF4) { cp = b & 0x07; len = 4; if (b == 0xF0) lo = 0x90; if (b == 0xF4) hi = 0x8F; }
        bool ok = len > 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; ++k) {
            unsigned char c = byte(i + k);
            if (!continuation(i + k) || (k == 1 && (c < lo || c > hi))) ok = false;
            else cp = (cp << 6) | (c & 0x3F);
        }
        if (!ok) {
            out.push_back({b, i, 1, false});
            ++i;
            continue;
        }
        out.push_back({cp, i, len, true});
        i += len;
    }
    return out;
}

static bool in_ranges(uint32_t cp, const unicode_tables::CodeRange* ranges, size_t count) {
    const unicode_tables::CodeRange* end = ranges + count;
    // The first range whose upper end is >= cp; cp is in the class iff it starts <= cp.
    const unicode_tables::CodeRange* it =
        std::lower_bound(ranges, end, cp, [](const unicode_tables::CodeRange& r, uint32_t c) { return r.hi < c; });
    return it != end && it->lo <= cp;
}

bool is_unicode_letter(uint32_t cp) {
    return in_ranges(cp, unicode_tables::kLetters, unicode_tables::kLetters_count);
}
bool is_unicode_number(uint32_t cp) {
    return in_ranges(cp, unicode_tables::kNumbers, unicode_tables::kNumbers_count);
}
bool is_unicode_space(uint32_t cp) {
    return in_ranges(cp, unicode_tables::kWhiteSpace, unicode_tables::kWhiteSpace_count);
}
const char* unicode_tables_version() { return unicode_tables::kUnicodeVersion; }

std::string printable_text(const std::string& bytes) {
    static const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
    std::string out;
    for (const Utf8Char& c : decode_utf8(bytes)) {
        bool control = c.cp < 0x20 || c.cp == 0x7F || (c.cp >= 0x80 && c.cp < 0xA0);
        if (!c.valid) {
            out += kReplacement;
        } else if (control && c.cp != '\n' && c.cp != '\t') {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", (unsigned)c.cp);
            out += buf;
        } else {
            out.append(bytes, c.start, c.length);
        }
    }
    return out;
}

// The length of the incomplete UTF-8 sequence that ends `s` and might still
// be completed by later bytes (0 if there is none).
static size_t incomplete_tail(const std::string& s) {
    size_t n = s.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        unsigned char b = (unsigned char)s[n - back];
        if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back
        size_t need = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 1;
        return need > back ? back : 0;
    }
    return 0;
}

std::string PrintableStream::feed(const std::string& bytes) {
    pending_ += bytes;
    size_t keep = incomplete_tail(pending_);
    std::string ready = pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return printable_text(ready);
}

std::string PrintableStream::finish() {
    std::string rest = printable_text(pending_);
    pending_.clear();
    return rest;
}

}  // namespace data
}  // namespace nc

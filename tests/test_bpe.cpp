// Byte-pair encoding: training on a hand-worked example, round trips,
// saving and loading, and GPT-2's vocab.json + merges.txt.
#include <filesystem>
#include <fstream>

#include "data/bpe.h"
#include "helpers.h"

using namespace nc;
using nc_test::check_error;
namespace fs = std::filesystem;

TEST_CASE("BPE learns the textbook merges of 'aaabdaaabac'", "[data][bpe]") {
    // Pair counts: aa 4, then after aa -> Z: Za 2 and ab 2 (the tie goes to the
    // smaller pair (a, b)), then ZY -> X: the string becomes X d X a c.
    data::BPETokenizer tok = data::BPETokenizer::train("aaabdaaabac", 259);
    std::vector<std::pair<int64_t, int64_t>> merges = tok.merges();
    REQUIRE(merges.size() == 3);
    CHECK(merges[0] == std::make_pair<int64_t, int64_t>('a', 'a'));
    CHECK(merges[1] == std::make_pair<int64_t, int64_t>('a', 'b'));
    CHECK(merges[2] == std::make_pair<int64_t, int64_t>(256, 257));
    CHECK(tok.token(258) == "aaab");
    CHECK(tok.encode("aaabdaaabac") == std::vector<int64_t>{258, 'd', 258, 'a', 'c'});
}

TEST_CASE("BPE round-trips every byte string and respects word boundaries", "[data][bpe]") {
    std::string corpus;
    for (int i = 0; i < 50; ++i) corpus += "the cat sat on the mat, then the cat's hat fell. 12345 ";
    data::BPETokenizer tok = data::BPETokenizer::train(corpus, 300);
    // Training stops early once every chunk is a single token: this corpus has only 281 to give.
    CHECK(tok.vocab_size() == 281);
    for (const std::string& chunk : data::BPETokenizer::chunks(corpus)) CHECK(tok.encode(chunk).size() == 1);
    std::vector<int64_t> ids = tok.encode("the cat sat");
    CHECK(ids.size() < 11);  // merges shortened it
    CHECK(tok.decode(ids) == "the cat sat");
    std::string all;
    for (int b = 0; b < 256; ++b) all.push_back((char)b);
    all += "\xff\xfe unknown w\xc3\xb6rds  and   spaces\n\n";
    CHECK(tok.decode(tok.encode(all)) == all);
    for (int64_t id : tok.encode(corpus))
        CHECK(tok.token(id).find(' ', 1) == std::string::npos);  // no token spans two words
    CHECK(data::BPETokenizer::chunks("it's 42  dogs!") == std::vector<std::string>{"it", "'s", " 42", " ", " dogs", "!"});
    check_error([] { data::BPETokenizer::train("abc", 100); }, {"256"});
}

TEST_CASE("BPE vocabularies save and load; GPT-2 files load", "[data][bpe]") {
    fs::path dir = fs::temp_directory_path() / "normcore_bpe";
    fs::remove_all(dir);
    fs::create_directories(dir);
    data::BPETokenizer tok = data::BPETokenizer::train("hello hello help helm", 262);
    tok.save((dir / "v.bpe").string());
    data::BPETokenizer back = data::BPETokenizer::load((dir / "v.bpe").string());
    CHECK(back.merges() == tok.merges());
    CHECK(back.encode("hello helm") == tok.encode("hello helm"));
    std::ofstream(dir / "bad.bpe") << "something else";
    check_error([&] { data::BPETokenizer::load((dir / "bad.bpe").string()); }, {"bad.bpe", "normcore-bpe"});

    // A tiny GPT-2 vocabulary: the 256 byte characters (GPT-2's table: printable
    // bytes stand for themselves, space is U+0120 'Ġ'), then "th", "the", "Ġthe".
    std::ofstream vocab(dir / "vocab.json");
    vocab << "{";
    int id = 0;
    // Emit the table the same way GPT-2's bytes_to_unicode does.
    std::vector<int> code(256, -1);
    for (int b = 0; b < 256; ++b)
        if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) code[b] = b;
    int shift = 0;
    for (int b = 0; b < 256; ++b)
        if (code[b] < 0) code[b] = 256 + shift++;
    auto utf8 = [](int cp) {
        return cp < 0x80 ? std::string(1, (char)cp) : std::string{(char)(0xC0 | (cp >> 6)), (char)(0x80 | (cp & 0x3F))};
    };
    for (int b = 0; b < 256; ++b) {
        std::string ch = utf8(code[b]);
        if (ch == "\"" || ch == "\\") ch = "\\" + ch;
        vocab << (id ? "," : "") << "\"" << ch << "\":" << id;
        ++id;
    }
    vocab << ",\"th\":256,\"the\":257,\"\xc4\xa0the\":258}";
    vocab.close();
    std::ofstream(dir / "merges.txt") << "#version: 0.2\nt h\nth e\n\xc4\xa0 the\n";
    data::BPETokenizer gpt2 = data::BPETokenizer::load_gpt2((dir / "vocab.json").string(), (dir / "merges.txt").string());
    CHECK(gpt2.vocab_size() == 259);
    CHECK(gpt2.token(258) == " the");
    CHECK(gpt2.encode("the the") == std::vector<int64_t>{257, 258});
    CHECK(gpt2.decode(gpt2.encode("the the thesis")) == "the the thesis");
    std::ofstream(dir / "bad_merges.txt") << "t h\nq z\n";
    check_error([&] { data::BPETokenizer::load_gpt2((dir / "vocab.json").string(), (dir / "bad_merges.txt").string()); },
                {"bad_merges.txt", "line 2"});
    fs::remove_all(dir);
}

// Issue 15, item 4: a normcore BPE file is validated on load.
TEST_CASE("BPE files with repeated, oversized or surplus merges are refused", "[bpe][hostile]") {
    std::filesystem::path dir = nc_test::temp_dir("normcore_bpe_hostile");
    auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream((dir / name).string()) << text;
        return (dir / name).string();
    };
    check_error([&] { data::BPETokenizer::load(write("repeat.bpe", "normcore-bpe 1 2\n97 98\n97 98\n")); },
                {"repeat.bpe", "merge 1", "appears twice"});
    // Each merge joins the previous token with itself: 2^40 bytes if nothing stopped it.
    std::string doubling = "normcore-bpe 1 40\n97 97\n";
    for (int i = 1; i < 40; ++i) doubling += std::to_string(255 + i) + " " + std::to_string(255 + i) + "\n";
    check_error([&] { data::BPETokenizer::load(write("doubling.bpe", doubling)); }, {"doubling.bpe", "2048 bytes", "1024"});
    check_error([&] { data::BPETokenizer::load(write("many.bpe", "normcore-bpe 1 99999999999\n")); }, {"many.bpe", "merges"});
    check_error([&] { data::BPETokenizer::load(write("surplus.bpe", "normcore-bpe 1 1\n97 98\n98 99\n")); },
                {"surplus.bpe", "more than the 1 merges"});
    check_error([&] { data::BPETokenizer::load(write("range.bpe", "normcore-bpe 1 1\n97 300\n")); }, {"range.bpe", "unknown token"});
    // GPT-2's files: vocab.json must map tokens to unique whole-number ids.
    std::string merges = write("merges.txt", "#version: 0.2\n");
    check_error([&] { data::BPETokenizer::load_gpt2(write("array.json", "[1, 2]"), merges); }, {"array.json", "JSON object"});
    check_error([&] { data::BPETokenizer::load_gpt2(write("huge.json", R"({"a": 8.9e34})"), merges); }, {"huge.json", "'a'", "whole number"});
    check_error([&] { data::BPETokenizer::load_gpt2(write("str.json", R"({"a": "0"})"), merges); }, {"str.json", "'a'"});
    check_error([&] { data::BPETokenizer::load_gpt2(write("dup.json", R"({"a": 0, "b": 0})"), merges); }, {"dup.json", "two tokens"});
    std::filesystem::remove_all(dir);
}

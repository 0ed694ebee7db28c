// Text corpora, the byte tokenizer, the train/validation split and batches.
#include <filesystem>
#include <fstream>

#include "data/text.h"
#include "helpers.h"

using namespace nc;
using nc_test::check_error;

TEST_CASE("byte tokens round-trip every byte", "[data]") {
    std::string all;
    for (int b = 0; b < 256; ++b) all.push_back((char)b);
    std::vector<int64_t> tokens = data::encode_bytes(all);
    CHECK(tokens.size() == 256);
    CHECK(tokens[200] == 200);
    CHECK(data::decode_bytes(tokens) == all);
    check_error([] { data::decode_bytes({300}); }, {"300"});
}

TEST_CASE("a text as its own byte ids: the ids of encode_bytes, one byte each", "[data]") {
    std::string all;
    for (int b = 0; b < 256; ++b) all.push_back((char)b);
    all += all;  // 512 bytes
    data::TokenIds ids = data::byte_ids(all);
    std::vector<int64_t> expected = data::encode_bytes(all);
    CHECK(ids.size() == 512);
    CHECK(ids.to_vector() == expected);  // bytes past 127 are 128..255, not negative
    CHECK(ids[255] == 255);
    data::TokenIds tail = ids.slice(250, 262);
    CHECK(tail.size() == 12);
    CHECK(tail[0] == 250);
    CHECK(tail[6] == 0);
    // Batches read them as they read int64 ids.
    data::LMBatches from_bytes(ids, 2, 7, true, 5), from_vector(data::TokenIds(expected), 2, 7, true, 5);
    for (int i = 0; i < 3; ++i) CHECK(from_bytes.next().inputs.to_int_vector() == from_vector.next().inputs.to_int_vector());
    check_error([] { data::TokenIds(nullptr, nullptr, 3, 0); }, {"width", "1, 2, 4 or 8"});
}

TEST_CASE("read_file gives every byte of a file, NULs and bytes past 127 included", "[data]") {
    namespace fs = std::filesystem;
    fs::path path = fs::temp_directory_path() / "normcore_test_read_file.bin";
    std::string bytes;
    for (int i = 0; i < 300000; ++i) bytes.push_back((char)(i * 7 % 256));  // NULs and bytes past 127 too
    std::ofstream(path, std::ios::binary) << bytes;
    CHECK(data::read_file(path.string()) == bytes);
    std::ofstream(path, std::ios::trunc).close();
    CHECK(data::read_file(path.string()).empty());  // an empty file
    CHECK(data::read_file("/dev/null").empty());      // not a regular file: read through the stream
    fs::remove(path);
    check_error([&] { data::read_file(path.string()); }, {"cannot read", "normcore_test_read_file.bin"});
}

TEST_CASE("corpus from a file or a directory, skipping fortune index files", "[data]") {
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / "normcore_test_corpus";
    fs::remove_all(dir);
    fs::create_directories(dir / "sub");
    std::ofstream(dir / "b.txt") << "second";
    std::ofstream(dir / "a.txt") << "first ";
    std::ofstream(dir / "a.dat") << "INDEX";
    std::ofstream(dir / "a.u8") << "UTF8";
    std::ofstream(dir / "sub" / "c") << " third";
    CHECK(data::read_corpus((dir / "a.txt").string()) == "first ");
    CHECK(data::read_corpus(dir.string()) == "first second third");
    check_error([&] { data::read_corpus((dir / "missing").string()); }, {"missing", "does not exist"});
    std::ofstream(dir / "empty.txt").close();
    check_error([&] { data::read_corpus((dir / "empty.txt").string()); }, {"empty.txt", "no text"});
    fs::remove_all(dir);
}

TEST_CASE("split and --no-shuffle batches follow the contract", "[data]") {
    std::vector<int64_t> tokens(100);
    for (int i = 0; i < 100; ++i) tokens[i] = i;
    data::Split split = data::split_tokens(tokens, 0.1);
    CHECK(split.train.size() == 90);
    CHECK(split.val[0] == 90);
    data::LMBatches batches(tokens, 2, 5, false, 0);
    data::Batch b0 = batches.next();
    CHECK(b0.inputs.to_int_vector() == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    CHECK(b0.targets.to_int_vector() == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    // Batch 9: windows start at (9*2 + 0)*5 = 90 and 95; the last wraps to token 0.
    data::Batch b9 = batches.at(9);
    CHECK(b9.inputs.to_int_vector() == std::vector<int64_t>{90, 91, 92, 93, 94, 95, 96, 97, 98, 99});
    CHECK(b9.targets.to_int_vector() == std::vector<int64_t>{91, 92, 93, 94, 95, 96, 97, 98, 99, 0});
    // Batch 10 starts over at token 0 (100 mod 100).
    CHECK(batches.at(10).inputs.to_int_vector()[0] == 0);
    check_error([] { data::split_tokens(std::vector<int64_t>{1, 2}, 1.0); }, {"--val-fraction"});
    check_error([&] { data::LMBatches tiny(std::vector<int64_t>{1, 2, 3}, 1, 5, true, 0); }, {"--seq 5"});
}

TEST_CASE("shuffled batches are reproducible from the seed and stay inside the data", "[data]") {
    std::vector<int64_t> tokens(1000);
    for (int i = 0; i < 1000; ++i) tokens[i] = i;
    data::LMBatches a(tokens, 4, 16, true, 7), b(tokens, 4, 16, true, 7), c(tokens, 4, 16, true, 8);
    for (int i = 0; i < 5; ++i) {
        data::Batch x = a.next(), y = b.next(), z = c.next();
        CHECK(x.inputs.to_int_vector() == y.inputs.to_int_vector());
        CHECK(x.inputs.to_int_vector() != z.inputs.to_int_vector());
        std::vector<int64_t> in = x.inputs.to_int_vector(), out = x.targets.to_int_vector();
        for (size_t k = 0; k < in.size(); ++k) CHECK(out[k] == in[k] + 1);  // no wrap inside a random window
    }
}

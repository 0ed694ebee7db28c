// test_corpus.cpp — the studies' corpus (data/corpus.h): sources split into
// documents, the seeded shuffle, the three splits, and evaluation windows
// spread over a whole split.
#include <zlib.h>

#include <fstream>
#include <set>

#include "data/corpus.h"
#include "data/text.h"
#include "helpers.h"

using namespace nc;
using nc_test::check_error;

TEST_CASE("a dictd database splits into entries, without its header or source tags", "[corpus]") {
    std::string dict =
        "\n00-database-url\n   ftp://example\n\n00-database-short\n   A dictionary\n\n"
        "Abdicator \\Ab\"di*ca`tor\\, n.\n   One who abdicates.\n   [1913 Webster]\n\n"
        "Abditive \\Ab\"di*tive\\, a.\n   Having the quality of hiding.\n\n   2. Another sense.\n   [PJC]\n\n"
        "Zythum \\Zy\"thum\\, n.\n   A kind of ancient malt beverage. [R.]\n";
    std::vector<std::string> entries = data::split_dictionary(dict);
    REQUIRE(entries.size() == 3);
    CHECK(entries[0] == "Abdicator \\Ab\"di*ca`tor\\, n.\n   One who abdicates.\n");
    // An indented line after a blank line continues the entry.
    CHECK(entries[1] == "Abditive \\Ab\"di*tive\\, a.\n   Having the quality of hiding.\n\n   2. Another sense.\n");
    // A tag inside a line is language and stays.
    CHECK(entries[2] == "Zythum \\Zy\"thum\\, n.\n   A kind of ancient malt beverage. [R.]\n");
}

TEST_CASE("fortunes split at % lines; long pages into runs of whole paragraphs", "[corpus]") {
    std::vector<std::string> f = data::split_fortunes("one\n%\ntwo\nlines\n%\n\n%\nthree");
    REQUIRE(f.size() == 3);
    CHECK(f[0] == "one\n");
    CHECK(f[1] == "two\nlines\n");
    CHECK(f[2] == "three\n");
    std::string page;
    for (int p = 0; p < 10; ++p) page += "paragraph " + std::to_string(p) + " " + std::string(40, 'x') + "\nsecond line\n\n";
    std::vector<std::string> runs = data::split_paragraph_runs(page, 150);
    std::string joined;
    for (const std::string& r : runs) {
        CHECK(r.back() == '\n');
        CHECK(r.rfind("paragraph ", 0) == 0);  // every run starts at a paragraph
        joined += r + "\n";
    }
    CHECK(joined == page);  // nothing lost, nothing moved
    REQUIRE(runs.size() == 4);  // 3 paragraphs of 63 bytes reach 150
    for (size_t i = 0; i + 1 < runs.size(); ++i) CHECK(runs[i].size() >= 150);
}

TEST_CASE("the document shuffle is seeded, and the splits partition the documents", "[corpus]") {
    std::vector<std::string> docs;
    for (int i = 0; i < 1000; ++i) docs.push_back("document " + std::to_string(i) + std::string((size_t)(i % 37), '.') + "\n");
    int64_t total = 0;
    for (const auto& d : docs) total += (int64_t)d.size();
    data::CorpusSplits a = data::split_documents(docs, 0.05, 0.1, 7), b = data::split_documents(docs, 0.05, 0.1, 7);
    data::CorpusSplits c = data::split_documents(docs, 0.05, 0.1, 8);
    CHECK(a.validation == b.validation);
    CHECK(a.train == b.train);
    CHECK(a.validation != c.validation);  // another seed, another sample
    std::multiset<std::string> seen;
    auto bytes = [](const std::vector<std::string>& split) {
        int64_t n = 0;
        for (const auto& d : split) n += (int64_t)d.size();
        return n;
    };
    for (const auto* split : {&a.train, &a.tuning, &a.validation}) seen.insert(split->begin(), split->end());
    CHECK(seen == std::multiset<std::string>(docs.begin(), docs.end()));
    // Each held-out split holds its fraction of the bytes, and at most one document more.
    CHECK(bytes(a.validation) >= 0.1 * (double)total);
    CHECK(bytes(a.validation) < 0.1 * (double)total + 50);
    CHECK(bytes(a.tuning) >= 0.05 * (double)total);
    CHECK(bytes(a.tuning) < 0.05 * (double)total + 50);
    // A random sample, not a block: the validation documents come from the whole range.
    int low = 0;
    for (const auto& d : a.validation) low += std::stoi(d.substr(9)) < 500;
    CHECK(low > 30);
    CHECK(low < (int)a.validation.size() - 30);
    check_error([&] { data::split_documents(docs, 0.5, 0.6, 1); }, {"fractions"});
    check_error([&] { data::split_documents({"only one"}, 0.1, 0.1, 1); }, {"too few documents", "tuning"});
}

TEST_CASE("corpus build writes the same three splits every time, and train reads them", "[corpus]") {
    auto dir = nc_test::temp_dir("normcore_corpus_test");
    std::filesystem::create_directories(dir / "docs" / "library");
    std::filesystem::create_directories(dir / "fortunes");
    std::string dict;
    for (int i = 0; i < 300; ++i) dict += "Word" + std::to_string(i) + " \\Word\\, n.\n   Meaning number " + std::to_string(i) + ".\n   [1913 Webster]\n\n";
    gzFile gz = gzopen((dir / "gcide.dict.dz").string().c_str(), "wb");
    gzwrite(gz, dict.data(), (unsigned)dict.size());
    gzclose(gz);
    std::ofstream(dir / "docs" / "library" / "os.rst.txt") << "os\n==\n\nThe os module.\n\nMore about it.\n";
    std::ofstream(dir / "fortunes" / "wisdom") << "Look before you leap.\n%\nHaste makes waste.\n";
    std::ofstream(dir / "fortunes" / "wisdom.dat") << "index bytes";
    data::CorpusSources sources{(dir / "gcide.dict.dz").string(), (dir / "docs").string(), (dir / "fortunes").string()};
    data::CorpusBuildReport r = data::build_corpus(sources, (dir / "a").string(), 3, 0.1, 0.1);
    data::build_corpus(sources, (dir / "b").string(), 3, 0.1, 0.1);
    REQUIRE(r.sources.size() == 3);
    CHECK(r.sources[0].documents == 300);
    CHECK(r.sources[1].documents == 1);
    CHECK(r.sources[2].documents == 2);  // the .dat index is not a fortune
    CHECK(data::is_split_corpus((dir / "a").string()));
    CHECK_FALSE(data::is_split_corpus((dir / "docs").string()));
    std::string all;
    for (const char* split : {"train", "tuning", "validation"}) {
        std::string a = data::read_file(data::split_path((dir / "a").string(), split));
        CHECK(a == data::read_file(data::split_path((dir / "b").string(), split)));
        CHECK(a.find("[1913 Webster]") == std::string::npos);
        all += a;
    }
    CHECK(all.find("Haste makes waste.") != std::string::npos);
    CHECK(all.find("The os module.") != std::string::npos);
    CHECK((int64_t)data::read_file(data::split_path((dir / "a").string(), "train")).size() == r.train_bytes);
    check_error([&] { data::build_corpus({"/no/such/gcide.dict.dz", sources.python_docs, sources.fortunes}, (dir / "c").string(), 1); },
                {"/no/such/gcide.dict.dz", "dict-gcide", "make setup"});
    std::filesystem::remove_all(dir);
}

TEST_CASE("evaluation windows spread over the whole split", "[corpus]") {
    std::vector<int64_t> ids(1000);
    for (int64_t i = 0; i < 1000; ++i) ids[i] = i;
    data::LMBatches batches(data::TokenIds(ids), 2, 10, false, 1);
    std::vector<int64_t> starts;
    for (int64_t i = 0; i < 5; ++i) {
        data::Batch b = batches.spread(i, 5);
        std::vector<double> in = b.inputs.to_vector(), out = b.targets.to_vector();
        for (int64_t j = 0; j < 2; ++j) {
            starts.push_back((int64_t)in[(size_t)j * 10]);
            for (int64_t t = 0; t < 10; ++t) CHECK(out[(size_t)(j * 10 + t)] == in[(size_t)(j * 10 + t)] + 1);  // no wrap-around
        }
    }
    CHECK(starts.front() == 0);
    CHECK(starts.back() == 1000 - 10 - 1);  // the last window's target is the last token
    for (size_t i = 1; i < starts.size(); ++i) CHECK(starts[i] - starts[i - 1] >= 10);  // no window overlaps the next
}

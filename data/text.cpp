#include "data/text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace nc {
namespace data {

const char* const kDefaultCorpus = "/usr/share/games/fortunes";

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("corpus: cannot read '" + path + "'");
    // A regular file: one string of its size, read into at once. (Through a
    // string stream the 47 MB corpus was copied three times while its buffer
    // grew, and every new buffer's pages faulted in: 0.4 s of a 24-step run.)
    // Anything else (a pipe, --data <(...)), or a file that reports no size,
    // goes through the stream; so does whatever a file grew by meanwhile.
    std::error_code ec;
    std::uintmax_t size = std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
    std::string text;
    if (!ec && size > 0) {
        text.resize((size_t)size);
        in.read(text.data(), (std::streamsize)size);
        text.resize((size_t)in.gcount());  // a file that shrank meanwhile
        if (in.bad()) throw Error("corpus: cannot read '" + path + "'");
        in.clear();
    }
    std::ostringstream rest;
    if (in.peek() != std::char_traits<char>::eof()) rest << in.rdbuf();
    if (in.bad()) throw Error("corpus: cannot read '" + path + "'");
    text += rest.str();  // nothing, for a file read whole above
    return text;
}

std::vector<std::string> corpus_files(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec))
        throw Error("corpus: '" + path + "' does not exist" +
                    (path == kDefaultCorpus ? " (install Debian's fortunes package: make setup)" : ""));
    if (!fs::is_directory(path, ec)) return {path};
    std::vector<std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(path, fs::directory_options::follow_directory_symlink, ec)) {
        if (!entry.is_regular_file()) continue;
        std::string ext = entry.path().extension().string();
        if (ext == ".dat" || ext == ".u8") continue;  // fortune's index files and UTF-8 duplicates
        files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

std::string read_corpus(const std::string& path) {
    std::string text;
    for (const std::string& f : corpus_files(path)) text += read_file(f);
    if (text.empty()) throw Error("corpus: '" + path + "' holds no text");
    return text;
}

std::vector<int64_t> encode_bytes(const std::string& text) {
    std::vector<int64_t> tokens(text.size());
    for (size_t i = 0; i < text.size(); ++i) tokens[i] = (unsigned char)text[i];
    return tokens;
}

std::string decode_bytes(const std::vector<int64_t>& tokens) {
    std::string text(tokens.size(), '\0');
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] < 0 || tokens[i] > 255) throw Error("decode_bytes: token " + std::to_string(tokens[i]) + " is not a byte");
        text[i] = (char)tokens[i];
    }
    return text;
}

Split split_tokens(const TokenIds& tokens, double val_fraction) {
    if (!(val_fraction >= 0 && val_fraction < 1))
        throw Error("--val-fraction must be in [0, 1), got " + std::to_string(val_fraction));
    int64_t n_train = (int64_t)((double)tokens.size() * (1 - val_fraction));
    return {tokens.slice(0, n_train), tokens.slice(n_train, tokens.size())};
}

LMBatches::LMBatches(TokenIds tokens, int64_t B, int64_t T, bool shuffle, uint64_t seed)
    : tokens_(std::move(tokens)), B_(B), T_(T), shuffle_(shuffle), gen_(seed) {
    if (B <= 0 || T <= 0) throw Error("batches: --batch and --seq must be positive");
    if (tokens_.size() < T + 1)
        throw Error("batches: the data has " + std::to_string(tokens_.size()) + " tokens, fewer than one window of --seq " +
                    std::to_string(T) + " + 1");
}

Batch LMBatches::make(const std::vector<int64_t>& starts) const {
    std::vector<int64_t> in, out;
    int64_t n = tokens_.size();
    for (int64_t start : starts)
        for (int64_t t = 0; t < T_; ++t) {
            in.push_back(tokens_[(start + t) % n]);  // wraps around the end
            out.push_back(tokens_[(start + t + 1) % n]);
        }
    return {raw::from_indices(in, {B_, T_}), raw::from_indices(out, {B_, T_})};
}

Batch LMBatches::at(int64_t i) const {
    std::vector<int64_t> starts;
    int64_t n = tokens_.size();
    for (int64_t j = 0; j < B_; ++j) starts.push_back(((i * B_ + j) * T_) % n);
    return make(starts);
}

Batch LMBatches::spread(int64_t i, int64_t batches) const {
    std::vector<int64_t> starts;
    int64_t windows = batches * B_, last_start = tokens_.size() - T_ - 1;  // targets need one token more
    for (int64_t j = 0; j < B_; ++j) {
        int64_t w = i * B_ + j;
        starts.push_back(windows > 1 ? (int64_t)((double)w * (double)last_start / (double)(windows - 1)) : 0);
    }
    return make(starts);
}

Batch LMBatches::next() {
    if (!shuffle_) return at(taken_++);
    ++taken_;
    std::vector<double> u = raw::rand({B_}, gen_, kFloat64).to_vector();
    std::vector<int64_t> starts;
    int64_t span = tokens_.size() - T_;  // windows lie fully inside the data
    for (double x : u) starts.push_back(std::min(span - 1, (int64_t)(x * (double)span)));
    return make(starts);
}

}  // namespace data
}  // namespace nc

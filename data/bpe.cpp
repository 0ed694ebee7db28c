#include "data/bpe.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tensor/error.h"

namespace nc {
namespace data {

// Byte classes for the pre-tokenizer. Bytes >= 128 (UTF-8 letters and marks)
// count as letters, so a non-ASCII word stays one chunk.
static bool is_letter(unsigned char c) { return std::isalpha(c) || c >= 128; }
static bool is_digit(unsigned char c) { return std::isdigit(c); }
static bool is_space(unsigned char c) { return std::isspace(c); }

std::vector<std::string> BPETokenizer::chunks(const std::string& text) {
    std::vector<std::string> out;
    size_t i = 0, n = text.size();
    auto run = [&](size_t from, bool (*in_class)(unsigned char)) {
        size_t j = from;
        while (j < n && in_class((unsigned char)text[j])) ++j;
        return j;
    };
    auto other = [](unsigned char c) { return !is_letter(c) && !is_digit(c) && !is_space(c); };
    while (i < n) {
        unsigned char c = (unsigned char)text[i];
        // Contractions: 's 't 're 've 'm 'll 'd
        size_t contraction = 0;
        if (c == '\'')
            for (const char* suffix : {"s", "t", "re", "ve", "m", "ll", "d"}) {
                size_t len = std::char_traits<char>::length(suffix);
                if (text.compare(i + 1, len, suffix) == 0 && (i + 1 + len == n || !is_letter((unsigned char)text[i + 1 + len])))
                    contraction = 1 + len;
            }
        if (contraction > 0) {
            out.push_back(text.substr(i, contraction));
            i += contraction;
            continue;
        }
        // An optional single space, then a run of one class.
        size_t start = i, k = i;
        if (c == ' ' && k + 1 < n && !is_space((unsigned char)text[k + 1])) ++k;
        unsigned char d = (unsigned char)text[k];
        size_t end;
        if (is_letter(d)) end = run(k, is_letter);
        else if (is_digit(d)) end = run(k, is_digit);
        else if (!is_space(d)) {
            end = k;
            while (end < n && other((unsigned char)text[end])) ++end;
        } else {
            // Whitespace: all of it, except a last space that belongs to the next word.
            end = run(k, is_space);
            if (end < n && end - start > 1 && text[end - 1] == ' ') --end;
        }
        out.push_back(text.substr(start, end - start));
        i = end;
    }
    return out;
}

void BPETokenizer::add_merge(int64_t left, int64_t right, int64_t result) {
    merges_[{left, right}] = {(int64_t)merges_.size(), result};
}

std::vector<std::pair<int64_t, int64_t>> BPETokenizer::merges() const {
    std::vector<std::pair<int64_t, int64_t>> out(merges_.size());
    for (const auto& [pair, rank_result] : merges_) out[rank_result.first] = pair;
    return out;
}


BPETokenizer BPETokenizer::train(const std::string& text, int64_t vocab_size) {
    if (vocab_size < 256) throw Error("BPE: the vocabulary must have at least the 256 byte tokens, got " + std::to_string(vocab_size));
    BPETokenizer tok;
    for (int b = 0; b < 256; ++b) {
        tok.token_bytes_.push_back(std::string(1, (char)b));
        tok.byte_token_[b] = b;
    }
    // Each distinct chunk once, with its count: merges are learned per word type.
    std::map<std::string, int64_t> counts;
    for (const std::string& c : chunks(text)) ++counts[c];
    std::vector<std::vector<int64_t>> words;
    std::vector<int64_t> freq;
    for (const auto& [chunk, count] : counts) {
        std::vector<int64_t> ids;
        for (unsigned char c : chunk) ids.push_back(c);
        words.push_back(ids);
        freq.push_back(count);
    }
    while (tok.vocab_size() < vocab_size) {
        std::map<std::pair<int64_t, int64_t>, int64_t> pairs;
        for (size_t w = 0; w < words.size(); ++w)
            for (size_t i = 0; i + 1 < words[w].size(); ++i) pairs[{words[w][i], words[w][i + 1]}] += freq[w];
        if (pairs.empty()) break;  // nothing left to merge
        // The most frequent pair; on a tie the smallest (the map is ordered, so the first seen).
        auto best = pairs.begin();
        for (auto it = pairs.begin(); it != pairs.end(); ++it)
            if (it->second > best->second) best = it;
        int64_t id = tok.vocab_size();
        tok.token_bytes_.push_back(tok.token_bytes_[best->first.first] + tok.token_bytes_[best->first.second]);
        tok.add_merge(best->first.first, best->first.second, id);
        for (auto& word : words) {  // apply the merge, left to right
            std::vector<int64_t> merged;
            for (size_t i = 0; i < word.size(); ++i) {
                if (i + 1 < word.size() && word[i] == best->first.first && word[i + 1] == best->first.second) {
                    merged.push_back(id);
                    ++i;
                } else {
                    merged.push_back(word[i]);
                }
            }
            word = merged;
        }
    }
    return tok;
}

std::vector<int64_t> BPETokenizer::encode_chunk(const std::string& chunk) const {
    std::vector<int64_t> ids;
    for (unsigned char c : chunk) ids.push_back(byte_token_[c]);
    while (ids.size() > 1) {
        // The adjacent pair with the lowest merge rank.
        int64_t best_rank = -1, best_at = -1, best_result = -1;
        for (size_t i = 0; i + 1 < ids.size(); ++i) {
            auto it = merges_.find({ids[i], ids[i + 1]});
            if (it != merges_.end() && (best_rank < 0 || it->second.first < best_rank)) {
                best_rank = it->second.first;
                best_at = (int64_t)i;
                best_result = it->second.second;
            }
        }
        if (best_rank < 0) break;
        ids[best_at] = best_result;
        ids.erase(ids.begin() + best_at + 1);
    }
    return ids;
}

std::vector<int64_t> BPETokenizer::encode(const std::string& text) const {
    std::vector<int64_t> out;
    for (const std::string& c : chunks(text)) {
        std::vector<int64_t> ids = encode_chunk(c);
        out.insert(out.end(), ids.begin(), ids.end());
    }
    return out;
}

std::string BPETokenizer::decode(const std::vector<int64_t>& ids) const {
    std::string out;
    for (int64_t id : ids) {
        if (id < 0 || id >= vocab_size()) throw Error("BPE decode: token " + std::to_string(id) + " is not in the vocabulary");
        out += token_bytes_[id];
    }
    return out;
}

// Our format: a header line, then one merge per line: "left right" ids.
// The base tokens are the 256 bytes, and merge i creates token 256 + i.
void BPETokenizer::save(const std::string& path) const {
    std::ofstream out(path + ".tmp");
    out << "normcore-bpe 1 " << merges_.size() << "\n";
    for (const auto& [left, right] : merges()) out << left << " " << right << "\n";
    out.close();
    if (!out) throw Error("BPE: cannot write '" + path + "'");
    if (std::rename((path + ".tmp").c_str(), path.c_str()) != 0) throw Error("BPE: cannot move the file into '" + path + "'");
}

BPETokenizer BPETokenizer::load(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("BPE: cannot open '" + path + "'");
    std::string magic;
    int version = 0;
    int64_t count = -1;
    in >> magic >> version >> count;
    if (magic != "normcore-bpe" || version != 1 || count < 0)
        throw Error("BPE: '" + path + "' is not a normcore BPE file (expected the header 'normcore-bpe 1 <merges>')");
    BPETokenizer tok;
    for (int b = 0; b < 256; ++b) {
        tok.token_bytes_.push_back(std::string(1, (char)b));
        tok.byte_token_[b] = b;
    }
    for (int64_t i = 0; i < count; ++i) {
        int64_t left = -1, right = -1;
        if (!(in >> left >> right) || left < 0 || right < 0 || left >= tok.vocab_size() || right >= tok.vocab_size())
            throw Error("BPE: '" + path + "': merge " + std::to_string(i) + " is missing or refers to an unknown token");
        tok.token_bytes_.push_back(tok.token_bytes_[left] + tok.token_bytes_[right]);
        tok.add_merge(left, right, tok.vocab_size() - 1);
    }
    return tok;
}

// GPT-2 writes bytes as printable Unicode characters (its bytes_to_unicode):
// printable Latin-1 bytes stand for themselves, the other 68 bytes are
// shifted to code points 256 and up. Returns the UTF-8 of each byte's character.
static std::vector<std::string> gpt2_byte_chars() {
    std::vector<int> code(256, -1);
    for (int b = 0; b < 256; ++b)
        if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) code[b] = b;
    int shift = 0;
    for (int b = 0; b < 256; ++b)
        if (code[b] < 0) code[b] = 256 + shift++;
    std::vector<std::string> utf8(256);
    for (int b = 0; b < 256; ++b) {
        int cp = code[b];
        if (cp < 0x80) utf8[b] = std::string(1, (char)cp);
        else utf8[b] = {(char)(0xC0 | (cp >> 6)), (char)(0x80 | (cp & 0x3F))};
    }
    return utf8;
}

// GPT-2 token text -> bytes, reading its characters back through the table.
static std::string gpt2_text_to_bytes(const std::string& text, const std::map<std::string, int>& char_to_byte,
                                      const std::string& where) {
    std::string bytes;
    for (size_t i = 0; i < text.size();) {
        size_t len = ((unsigned char)text[i] & 0xE0) == 0xC0 ? 2 : 1;
        auto it = char_to_byte.find(text.substr(i, len));
        if (it == char_to_byte.end()) throw Error("GPT-2 BPE: " + where + ": '" + text + "' has a character outside the byte table");
        bytes.push_back((char)it->second);
        i += len;
    }
    return bytes;
}

BPETokenizer BPETokenizer::load_gpt2(const std::string& vocab_json, const std::string& merges_txt) {
    std::ifstream vin(vocab_json);
    if (!vin) throw Error("GPT-2 BPE: cannot open '" + vocab_json + "'");
    nlohmann::json vocab;
    try {
        vin >> vocab;
    } catch (const nlohmann::json::exception& e) {
        throw Error("GPT-2 BPE: '" + vocab_json + "' is not valid JSON: " + e.what());
    }
    std::vector<std::string> byte_chars = gpt2_byte_chars();
    std::map<std::string, int> char_to_byte;
    for (int b = 0; b < 256; ++b) char_to_byte[byte_chars[b]] = b;

    BPETokenizer tok;
    std::map<std::string, int64_t> id_of;  // token text (GPT-2's characters) -> id
    tok.token_bytes_.assign(vocab.size(), "");
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        int64_t id = it.value().get<int64_t>();
        if (id < 0 || id >= (int64_t)vocab.size()) throw Error("GPT-2 BPE: '" + vocab_json + "': id " + std::to_string(id) + " out of range");
        tok.token_bytes_[id] = gpt2_text_to_bytes(it.key(), char_to_byte, vocab_json);
        id_of[it.key()] = id;
    }
    for (int b = 0; b < 256; ++b) {
        auto it = id_of.find(byte_chars[b]);
        if (it == id_of.end()) throw Error("GPT-2 BPE: '" + vocab_json + "' lacks the token for byte " + std::to_string(b));
        tok.byte_token_[b] = it->second;
    }
    std::ifstream min(merges_txt);
    if (!min) throw Error("GPT-2 BPE: cannot open '" + merges_txt + "'");
    std::string line;
    int64_t line_no = 0;
    while (std::getline(min, line)) {
        ++line_no;
        if (line.empty() || line.rfind("#version", 0) == 0) continue;
        size_t space = line.find(' ');
        if (space == std::string::npos) throw Error("GPT-2 BPE: '" + merges_txt + "' line " + std::to_string(line_no) + " is not 'left right'");
        std::string left = line.substr(0, space), right = line.substr(space + 1);
        auto l = id_of.find(left), r = id_of.find(right), m = id_of.find(left + right);
        if (l == id_of.end() || r == id_of.end() || m == id_of.end())
            throw Error("GPT-2 BPE: '" + merges_txt + "' line " + std::to_string(line_no) + ": '" + line +
                        "' uses tokens missing from the vocabulary");
        tok.add_merge(l->second, r->second, m->second);
    }
    return tok;
}

}  // namespace data
}  // namespace nc

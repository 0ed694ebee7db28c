#include "data/bpe.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "data/unicode.h"
#include "tensor/error.h"

namespace nc {
namespace data {

// The pre-tokenizer is GPT-2's pattern, matched by hand:
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// A regex engine tries the alternatives in order at each position and takes
// the first that matches. Which one can match is decided by the first one or
// two characters, so the matcher looks at those and runs the class to its
// end. The one backtracking case is \s+(?!\S): a run of whitespace followed
// by a non-space gives its last character back to the next chunk (so
// " world" keeps its space), unless the run is one character long, when
// \s+ takes it alone. "Hello\n\nWorld" thus cuts into "Hello", "\n", "\n",
// "World". Bytes that are not valid UTF-8 (GPT-2's Python never sees them)
// count as "other" characters, one per byte.
enum class CharClass { Letter, Number, Space, Other };

static CharClass class_of(const Utf8Char& c) {
    if (!c.valid) return CharClass::Other;
    if (is_unicode_letter(c.cp)) return CharClass::Letter;
    if (is_unicode_number(c.cp)) return CharClass::Number;
    if (is_unicode_space(c.cp)) return CharClass::Space;
    return CharClass::Other;
}

std::vector<std::string> BPETokenizer::chunks(const std::string& text) {
    std::vector<Utf8Char> chars = decode_utf8(text);
    size_t n = chars.size();
    std::vector<CharClass> cls(n);
    for (size_t i = 0; i < n; ++i) cls[i] = class_of(chars[i]);
    auto run_end = [&](size_t from, CharClass c) {
        while (from < n && cls[from] == c) ++from;
        return from;
    };
    auto is = [&](size_t k, char ascii) { return k < n && chars[k].valid && chars[k].cp == (uint32_t)ascii; };
    std::vector<std::string> out;
    size_t i = 0;
    while (i < n) {
        size_t end;
        if (is(i, '\'') && (is(i + 1, 's') || is(i + 1, 't') || is(i + 1, 'm') || is(i + 1, 'd'))) {
            end = i + 2;  // 's 't 'm 'd
        } else if (is(i, '\'') && ((is(i + 1, 'r') && is(i + 2, 'e')) || (is(i + 1, 'v') && is(i + 2, 'e')) ||
                                    (is(i + 1, 'l') && is(i + 2, 'l')))) {
            end = i + 3;  // 're 've 'll
        } else if (is(i, ' ') && i + 1 < n && cls[i + 1] != CharClass::Space) {
            end = run_end(i + 1, cls[i + 1]);  // " ?" then letters, numbers or others
        } else if (cls[i] != CharClass::Space) {
            end = run_end(i, cls[i]);
        } else {
            end = run_end(i, CharClass::Space);
            // \s+(?!\S): a run followed by a non-space leaves its last
            // character to the next chunk; a run of one is \s+ alone.
            if (end < n && end - i > 1) --end;
        }
        size_t first = chars[i].start, last = chars[end - 1].start + chars[end - 1].length;
        out.push_back(text.substr(first, last - first));
        i = end;
    }
    return out;
}

// Why such a cut is safe: in "X\nY" with X and Y not whitespace, X's chunk
// ends at X (a newline is in no class but whitespace), the newline is a run
// of one followed by a non-space, so \s+ takes it alone, and it is not the
// literal space that " ?..." could prefix to Y. At the end of a piece,
// \s+(?!\S) takes the same newline, so both pieces cut the same chunks.
size_t BPETokenizer::safe_cut_after(const std::string& text, size_t pos) {
    auto not_space_at = [&](size_t start, size_t end) {  // the one character in text[start, end)
        std::vector<Utf8Char> c = decode_utf8(text.substr(start, end - start));
        return !c.empty() && class_of(c[0]) != CharClass::Space;
    };
    for (size_t i = std::max<size_t>(pos, 2); i < text.size(); ++i) {
        if (text[i - 1] != '\n') continue;
        size_t before = i - 2;  // the start of the character that ends just before the newline
        while (before > 0 && i - 2 - before < 3 && ((unsigned char)text[before] & 0xC0) == 0x80) --before;
        if (not_space_at(before, i - 1) && not_space_at(i, std::min(text.size(), i + 4))) return i;
    }
    return text.size();
}

void BPETokenizer::add_merge(int64_t left, int64_t right, int64_t result) {
    // A pair merged twice would take a second rank and leave a hole in the
    // rank order (merges() would write past its end): a file saying so is bad.
    if (!merges_.emplace(std::make_pair(left, right), std::make_pair((int64_t)merges_.size(), result)).second)
        throw Error("the merge of tokens " + std::to_string(left) + " and " + std::to_string(right) + " appears twice");
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
            for (size_t i = 0; i + 1 < words[w].size(); ++i)
                // (tokens longer than a file may hold are never made: load would refuse them)
                if (tok.token_bytes_[words[w][i]].size() + tok.token_bytes_[words[w][i + 1]].size() <= kMaxTokenBytes)
                    pairs[{words[w][i], words[w][i + 1]}] += freq[w];
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

// GPT-2's merge loop (its encoder.py's bpe()): find the adjacent pair with
// the lowest merge rank, merge every occurrence of it from left to right,
// and repeat until no adjacent pair is a merge.
std::vector<int64_t> BPETokenizer::encode_chunk(const std::string& chunk) const {
    std::vector<int64_t> ids;
    for (unsigned char c : chunk) ids.push_back(byte_token_[c]);
    while (ids.size() > 1) {
        int64_t best_rank = -1;
        std::pair<int64_t, int64_t> best;
        int64_t result = -1;
        for (size_t i = 0; i + 1 < ids.size(); ++i) {
            auto it = merges_.find({ids[i], ids[i + 1]});
            if (it != merges_.end() && (best_rank < 0 || it->second.first < best_rank)) {
                best_rank = it->second.first;
                best = it->first;
                result = it->second.second;
            }
        }
        if (best_rank < 0) break;
        std::vector<int64_t> merged;
        for (size_t i = 0; i < ids.size(); ++i) {
            if (i + 1 < ids.size() && ids[i] == best.first && ids[i + 1] == best.second) {
                merged.push_back(result);
                ++i;
            } else {
                merged.push_back(ids[i]);
            }
        }
        ids.swap(merged);
    }
    return ids;
}

std::vector<int64_t> BPETokenizer::encode(const std::string& text) const {
    // Natural text repeats its words: each distinct chunk is merged once.
    std::unordered_map<std::string, std::vector<int64_t>> cache;
    std::vector<int64_t> out;
    for (const std::string& c : chunks(text)) {
        auto it = cache.find(c);
        if (it == cache.end()) it = cache.emplace(c, encode_chunk(c)).first;
        out.insert(out.end(), it->second.begin(), it->second.end());
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
    if (count > kMaxMerges)
        throw Error("BPE: '" + path + "' announces " + std::to_string(count) + " merges, more than the " +
                    std::to_string(kMaxMerges) + " a vocabulary may have");
    BPETokenizer tok;
    for (int b = 0; b < 256; ++b) {
        tok.token_bytes_.push_back(std::string(1, (char)b));
        tok.byte_token_[b] = b;
    }
    for (int64_t i = 0; i < count; ++i) {
        int64_t left = -1, right = -1;
        if (!(in >> left >> right) || left < 0 || right < 0 || left >= tok.vocab_size() || right >= tok.vocab_size())
            throw Error("BPE: '" + path + "': merge " + std::to_string(i) + " is missing or refers to an unknown token");
        // Each merge can double a token's length: 40 merges of a token with
        // itself would ask for 2^40 bytes.
        size_t length = tok.token_bytes_[left].size() + tok.token_bytes_[right].size();
        if (length > kMaxTokenBytes)
            throw Error("BPE: '" + path + "': merge " + std::to_string(i) + " makes a token of " + std::to_string(length) +
                        " bytes, more than " + std::to_string(kMaxTokenBytes));
        tok.token_bytes_.push_back(tok.token_bytes_[left] + tok.token_bytes_[right]);
        try {
            tok.add_merge(left, right, tok.vocab_size() - 1);
        } catch (const Error& e) {
            throw Error("BPE: '" + path + "': merge " + std::to_string(i) + ": " + e.what());
        }
    }
    std::string rest;
    if (in >> rest) throw Error("BPE: '" + path + "' has more than the " + std::to_string(count) + " merges its header announces");
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

    if (!vocab.is_object() || vocab.empty() || (int64_t)vocab.size() > kMaxMerges + 1024)
        throw Error("GPT-2 BPE: '" + vocab_json + "' must be a JSON object mapping each token to its id, with at most " +
                    std::to_string(kMaxMerges + 1024) + " tokens");
    BPETokenizer tok;
    std::map<std::string, int64_t> id_of;  // token text (GPT-2's characters) -> id
    tok.token_bytes_.assign(vocab.size(), "");
    std::vector<bool> seen(vocab.size(), false);
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        // is_number_unsigned: a whole number >= 0 that fits 64 bits (not 8.9e34, not "5", not 1.5).
        if (!it.value().is_number_unsigned() || it.value().get<uint64_t>() >= vocab.size())
            throw Error("GPT-2 BPE: '" + vocab_json + "': the id of token '" + it.key() + "' is " + it.value().dump() +
                        ", not a whole number from 0 to " + std::to_string(vocab.size() - 1));
        int64_t id = (int64_t)it.value().get<uint64_t>();
        if (seen[id]) throw Error("GPT-2 BPE: '" + vocab_json + "': id " + std::to_string(id) + " is given to two tokens");
        seen[id] = true;
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
        try {
            tok.add_merge(l->second, r->second, m->second);
        } catch (const Error& e) {
            throw Error("GPT-2 BPE: '" + merges_txt + "' line " + std::to_string(line_no) + ": " + e.what());
        }
    }
    return tok;
}

}  // namespace data
}  // namespace nc

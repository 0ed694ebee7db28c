// bpe.h — byte-pair encoding (Sennrich et al. 2016; GPT-2's byte-level form).
//
// Text is first cut into chunks by GPT-2's pre-tokenizer pattern exactly
// (contractions, words with their leading space, runs of numbers, of other
// symbols, of whitespace; Unicode letter and number classes), so merges never
// cross word boundaries. Each chunk starts as its bytes; then the adjacent
// pair with the lowest merge rank is merged wherever it occurs, and again,
// until no pair is a merge (GPT-2's own loop). With GPT-2's vocab.json and
// merges.txt the ids are GPT-2's (tests/test_gpt2_tokenizer.cpp checks them
// against an independent encoder). Decoding concatenates the tokens' bytes, so
// every byte string round-trips.
//
// Training counts adjacent pairs over the corpus's chunks and repeatedly
// merges the most frequent pair (ties: the smallest pair of ids) into a new
// token. A vocabulary saves as a small text file, and GPT-2's own files
// (vocab.json + merges.txt) load too.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace nc {
namespace data {

class BPETokenizer {
public:
    // Learns merges on `text` until the vocabulary has vocab_size tokens (>= 256).
    static BPETokenizer train(const std::string& text, int64_t vocab_size);
    // Bounds on what a vocabulary file may ask for (load, load_gpt2).
    static const int64_t kMaxMerges = int64_t(1) << 24;
    static const size_t kMaxTokenBytes = 1024;
    static BPETokenizer load(const std::string& path);  // our format (save)
    static BPETokenizer load_gpt2(const std::string& vocab_json, const std::string& merges_txt);
    void save(const std::string& path) const;

    std::vector<int64_t> encode(const std::string& text) const;
    std::string decode(const std::vector<int64_t>& ids) const;
    int64_t vocab_size() const { return (int64_t)token_bytes_.size(); }
    const std::string& token(int64_t id) const { return token_bytes_.at(id); }
    // The merges in rank order, as (left id, right id).
    std::vector<std::pair<int64_t, int64_t>> merges() const;

    // The pre-tokenizer's chunks of `text`.
    static std::vector<std::string> chunks(const std::string& text);
    // The first position >= pos where `text` can be cut into two pieces whose
    // chunks are exactly the whole text's chunks (text.size() if there is
    // none): just after a newline that sits between two visible ASCII
    // characters, where no alternative of the pattern can span the cut. Long
    // corpora are encoded piece by piece this way (normcore tokenize).
    static size_t safe_cut_after(const std::string& text, size_t pos);

private:
    void add_merge(int64_t left, int64_t right, int64_t result);
    std::vector<int64_t> encode_chunk(const std::string& chunk) const;

    std::vector<std::string> token_bytes_;  // id -> bytes
    int64_t byte_token_[256] = {};          // byte -> id
    std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> merges_;  // pair -> (rank, result id)
};

}  // namespace data
}  // namespace nc

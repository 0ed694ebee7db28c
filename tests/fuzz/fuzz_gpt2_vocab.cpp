// Fuzz target: data::BPETokenizer::load_gpt2 (vocab.json + merges.txt). The
// input holds both files, split at its first zero byte.
#include <cstdlib>
#include <cstring>

#include "data/bpe.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const uint8_t* split = static_cast<const uint8_t*>(std::memchr(data, 0, size));
    size_t vocab_size = split ? (size_t)(split - data) : size;
    std::string vocab = nc_fuzz::write_input("gpt2", data, vocab_size, ".json");
    std::string merges = nc_fuzz::write_input("gpt2", split ? split + 1 : data + size,
                                              split ? size - vocab_size - 1 : 0, ".txt");
    try {
        nc::data::BPETokenizer tok = nc::data::BPETokenizer::load_gpt2(vocab, merges);
        const std::string text = "Hello, world! It's 42 \xC3\xA9t\xC3\xA9s.\n\n  x";
        if (tok.decode(tok.encode(text)) != text) std::abort();
    } catch (const nc::Error&) {
    }
    return 0;
}

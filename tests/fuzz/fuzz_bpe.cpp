// Fuzz target: data::BPETokenizer::load (normcore's BPE file), then a round trip.
#include <cstdlib>

#include "data/bpe.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string path = nc_fuzz::write_input("bpe", data, size);
    try {
        nc::data::BPETokenizer tok = nc::data::BPETokenizer::load(path);
        const std::string text = "Hello, world! It's 42 \xC3\xA9t\xC3\xA9s.\n\n  x";
        if (tok.decode(tok.encode(text)) != text) std::abort();  // every byte string must round-trip
        (void)tok.merges();
    } catch (const nc::Error&) {
    }
    return 0;
}

// Fuzz target: data::map_token_file (the files `normcore tokenize` writes).
#include "data/token_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string path = nc_fuzz::write_input("tokens", data, size);
    try {
        nc::data::TokenFileInfo info;
        nc::data::TokenIds ids = nc::data::map_token_file(path, &info);
        int64_t total = 0;
        for (int64_t i = 0; i < ids.size(); ++i) total += ids[i];
        (void)ids.slice(0, ids.size() / 2).to_vector();
        (void)total;
    } catch (const nc::Error&) {
    }
    return 0;
}

// Fuzz target: data::read_safetensors (weights, checkpoints, --init files).
#include "data/safetensors.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string path = nc_fuzz::write_input("safetensors", data, size);
    try {
        nc::data::SafetensorsFile f = nc::data::read_safetensors(path);
        for (auto& [name, t] : f.tensors) (void)t.to_vector();  // touch every element read
    } catch (const nc::Error&) {
    }
    return 0;
}

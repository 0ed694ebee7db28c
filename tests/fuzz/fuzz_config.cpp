// Fuzz target: nn::config_from_hf_json (a model directory's config.json).
#include "fuzz_input.h"
#include "nn/hf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        nc::nn::TransformerConfig c = nc::nn::config_from_hf_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
        (void)nc::nn::count_parameters(c);
        (void)nc::nn::hf_config_json(c);
    } catch (const nc::Error&) {
    }
    return 0;
}

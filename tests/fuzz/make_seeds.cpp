// make_seeds.cpp — writes the fuzz targets' seed corpora (tests/fuzz/corpus/)
// with normcore's own writers: a few small valid files per parser, from
// which libFuzzer mutates. Run by hand when a format changes:
//     make fuzz-seeds
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#include "data/bpe.h"
#include "data/safetensors.h"
#include "data/token_file.h"
#include "nn/hf.h"
#include "tensor/raw_ops.h"

namespace fs = std::filesystem;
using namespace nc;

static fs::path dir(const std::string& target) {
    fs::path d = fs::path("tests/fuzz/corpus") / target;
    fs::create_directories(d);
    return d;
}

static void write(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

static std::string idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
    std::string s = {0, 0, 8, (char)dims.size()};
    for (uint32_t d : dims) s += {(char)(d >> 24), (char)(d >> 16), (char)(d >> 8), (char)d};
    return s + std::string(data.begin(), data.end());
}

int main() {
    // safetensors: float32, float64 and int64 tensors with metadata.
    data::write_safetensors((dir("safetensors") / "small.safetensors").string(),
                            {{"w", raw::from_vector(std::vector<float>{1, -2, 3.5f, 0}, {2, 2})},
                             {"d", raw::from_vector(std::vector<double>{0.25}, {1})},
                             {"i", raw::from_indices({7, 8, 9}, {3})}},
                            {{"format", "pt"}, {"step", "3"}});
    data::write_safetensors((dir("safetensors") / "empty.safetensors").string(), {});

    // normcore BPE: a vocabulary of 300 tokens trained on a sentence.
    data::BPETokenizer::train("the cat sat on the mat; the cat ate the rat. 12 345 6789!", 300)
        .save((dir("bpe") / "small.bpe").string());

    // GPT-2: the byte tokens and the first 40 merges of the real files, as one
    // input (vocab.json, a zero byte, merges.txt).
    nlohmann::json vocab = nlohmann::json::parse(read("tests/data/gpt2/vocab.json")), small = nlohmann::json::object();
    for (auto it = vocab.begin(); it != vocab.end(); ++it)
        if (it.value().get<int64_t>() < 256 + 40) small[it.key()] = it.value();
    std::string merges = read("tests/data/gpt2/merges.txt");
    size_t at = 0;
    for (int line = 0; line < 41; ++line) at = merges.find('\n', at) + 1;
    write(dir("gpt2_vocab") / "small.bin", small.dump() + std::string(1, '\0') + merges.substr(0, at));

    // config.json of each family, as --save DIR/ writes it.
    for (auto [name, cfg] : {std::pair<const char*, nn::TransformerConfig>{"gpt2", nn::gpt2_config()},
                             {"llama", nn::llama_config()}, {"vit", nn::vit_config()}})
        write(dir("config") / (std::string(name) + ".json"), nn::hf_config_json(cfg));

    // IDX: raw and gzipped.
    write(dir("idx") / "images.idx", idx_bytes({2, 2, 3}, {0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110}));
    {
        std::string bytes = idx_bytes({3}, {7, 0, 9});
        gzFile f = gzopen((dir("idx") / "labels.idx.gz").c_str(), "wb");
        gzwrite(f, bytes.data(), (unsigned)bytes.size());
        gzclose(f);
    }

    // Images: a PNG (RGB) and a JPEG (grey) of a few pixels.
    std::vector<uint8_t> rgb(5 * 3 * 3), grey(4 * 4);
    for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = (uint8_t)(i * 17);
    for (size_t i = 0; i < grey.size(); ++i) grey[i] = (uint8_t)(i * 13);
    stbi_write_png((dir("image") / "rgb.png").c_str(), 5, 3, 3, rgb.data(), 5 * 3);
    stbi_write_jpg((dir("image") / "grey.jpg").c_str(), 4, 4, 1, grey.data(), 90);

    // Token files: 2-byte and 4-byte ids.
    {
        data::TokenFileWriter w((dir("token_file") / "bytes.tok").string(), 256);
        w.append({72, 101, 108, 108, 111});
        w.finish();
        data::TokenFileWriter big((dir("token_file") / "wide.tok").string(), 100000);
        big.append({0, 99999, 65536});
        big.finish();
    }
    std::printf("seed corpora written under tests/fuzz/corpus/\n");
    return 0;
}

// Images: IDX files (gzipped or raw), image folders through stb_image,
// resizing, and labelled batches.
#include <zlib.h>

#include <filesystem>
#include <fstream>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#include "data/images.h"
#include "helpers.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_values;
using nc_test::temp_dir;
namespace fs = std::filesystem;

// An IDX file of unsigned bytes: magic 0x0000 08 ndim, big-endian dims, data.
static std::string idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
    std::string s = {0, 0, 8, (char)dims.size()};
    for (uint32_t d : dims) s += {(char)(d >> 24), (char)(d >> 16), (char)(d >> 8), (char)d};
    return s + std::string(data.begin(), data.end());
}

static void write_gz(const fs::path& path, const std::string& bytes) {
    gzFile f = gzopen(path.string().c_str(), "wb");
    gzwrite(f, bytes.data(), (unsigned)bytes.size());
    gzclose(f);
}

TEST_CASE("IDX files, gzipped or not, and a Fashion-MNIST-shaped directory", "[data][images]") {
    fs::path dir = temp_dir("normcore_idx");
    std::vector<uint8_t> pixels(3 * 2 * 2);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = (uint8_t)(i * 20);
    write_gz(dir / "train-images-idx3-ubyte.gz", idx_bytes({3, 2, 2}, pixels));
    write_gz(dir / "train-labels-idx1-ubyte.gz", idx_bytes({3}, {7, 0, 9}));
    std::ofstream(dir / "raw.idx", std::ios::binary) << idx_bytes({2}, {5, 6});
    std::vector<int64_t> dims;
    CHECK(data::read_idx((dir / "raw.idx").string(), dims) == std::vector<uint8_t>{5, 6});
    CHECK(dims == std::vector<int64_t>{2});
    data::ImageSet set = data::load_fashion_mnist(dir.string(), true);
    CHECK(set.images.shape() == Shape{3, 1, 2, 2});
    CHECK(set.labels == std::vector<int64_t>{7, 0, 9});
    CHECK(set.images.to_vector()[0] == -1.0);                          // 0 -> -1
    CHECK(set.images.to_vector()[5] == Approx(100 / 127.5 - 1));      // 100 -> 100/127.5 - 1
    CHECK(data::load_fashion_mnist(dir.string(), true, 2).labels.size() == 2);
    // Corrupt files.
    std::ofstream(dir / "bad_magic.idx", std::ios::binary) << std::string("\x00\x00\x09\x01\x00\x00\x00\x01x", 9);
    check_error([&] { data::read_idx((dir / "bad_magic.idx").string(), dims); }, {"bad_magic.idx", "magic"});
    std::ofstream(dir / "short.idx", std::ios::binary) << idx_bytes({10}, {1, 2, 3});
    check_error([&] { data::read_idx((dir / "short.idx").string(), dims); }, {"short.idx", "10 bytes", "3"});
    check_error([&] { data::read_idx((dir / "missing.gz").string(), dims); }, {"missing.gz", "cannot be opened"});
    fs::remove_all(dir);
}

TEST_CASE("image folders: PNG and JPEG, classes from directory names, resized", "[data][images]") {
    fs::path dir = temp_dir("normcore_folder");
    fs::create_directories(dir / "cats");
    fs::create_directories(dir / "dogs");
    // A 4x4 white PNG (RGB) and a 6x6 black JPEG.
    std::vector<uint8_t> white(4 * 4 * 3, 255), black(6 * 6 * 3, 0);
    REQUIRE(stbi_write_png((dir / "cats" / "a.png").string().c_str(), 4, 4, 3, white.data(), 4 * 3));
    REQUIRE(stbi_write_jpg((dir / "dogs" / "b.jpg").string().c_str(), 6, 6, 3, black.data(), 95));
    std::ofstream(dir / "dogs" / "notes.txt") << "not an image";
    data::ImageSet set = data::load_image_folder(dir.string(), 8, 3);
    CHECK(set.class_names == std::vector<std::string>{"cats", "dogs"});
    CHECK(set.labels == std::vector<int64_t>{0, 1});
    CHECK(set.images.shape() == Shape{2, 3, 8, 8});
    CHECK(-raw::max(raw::neg(raw::narrow(set.images, 0, 0, 1))).item() == Approx(1.0));  // white -> 1 everywhere
    CHECK(raw::max(raw::abs(raw::narrow(set.images, 0, 1, 1))).item() > 0.9);  // black -> about -1
    data::ImageSet gray = data::load_image_folder(dir.string(), 5, 1);
    CHECK(gray.images.shape() == Shape{2, 1, 5, 5});
    std::ofstream(dir / "cats" / "broken.png") << "garbage";
    check_error([&] { data::load_image_folder(dir.string(), 8, 3); }, {"broken.png", "cannot be read"});
    check_error([&] { data::load_image_folder((dir / "nope").string(), 8, 3); }, {"nope", "not a directory"});
    fs::remove_all(dir);
}

TEST_CASE("bilinear resize keeps constant images and averages neighbours", "[data][images]") {
    Tensor flat = raw::full({1, 1, 3, 3}, 0.25);
    check_values(data::resize_images(flat, 7), std::vector<double>(49, 0.25), 1e-7);
    Tensor two = raw::from_vector(std::vector<float>{0, 1, 0, 1}, {1, 1, 2, 2});  // columns 0 and 1
    check_values(data::resize_images(two, 1), {0.5}, 1e-7);
}

TEST_CASE("image batches: in order or shuffled from the seed", "[data][images]") {
    data::ImageSet set;
    set.images = raw::reshape(raw::arange(0, 5), {5, 1, 1, 1});
    set.labels = {0, 1, 2, 3, 4};
    data::ImageBatches ordered(set, 2, false, 0);
    data::ImageBatch b = ordered.next();
    CHECK(b.labels.to_int_vector() == std::vector<int64_t>{0, 1});
    CHECK(ordered.at(2).labels.to_int_vector() == std::vector<int64_t>{4, 0});  // wraps
    data::ImageBatches s1(set, 3, true, 9), s2(set, 3, true, 9);
    data::ImageBatch x = s1.next(), y = s2.next();
    CHECK(x.labels.to_int_vector() == y.labels.to_int_vector());
    std::vector<double> pix = x.images.to_vector();
    std::vector<int64_t> lab = x.labels.to_int_vector();
    for (size_t i = 0; i < lab.size(); ++i) CHECK(pix[i] == (double)lab[i]);  // image and label travel together
}

// Issue 15, items 2 and 3: IDX headers that overflow or lie, and image files
// that are not what their names say, are empty, huge, or 16-bit.
TEST_CASE("hostile IDX files and images are refused with bounded memory", "[data][images][hostile]") {
    fs::path dir = temp_dir("normcore_hostile_images");
    std::vector<int64_t> dims;
    // [4, 2^31, 2^31]: 2^64 bytes, which wrapped to 0 and matched an empty file.
    std::ofstream(dir / "wrap.idx", std::ios::binary) << idx_bytes({4, 2147483648u, 2147483648u}, {});
    check_error([&] { data::read_idx((dir / "wrap.idx").string(), dims); }, {"wrap.idx", "more than 2^32 bytes"});
    // A header claiming 4 GB of a 20-byte file: refused after reading what is there.
    std::ofstream(dir / "liar.idx", std::ios::binary) << idx_bytes({65536, 65535}, {1, 2, 3});
    check_error([&] { data::read_idx((dir / "liar.idx").string(), dims); }, {"liar.idx", "4294901760 bytes", "has 3"});
    std::ofstream(dir / "zero.idx", std::ios::binary) << idx_bytes({0, 5}, {});
    check_error([&] { data::read_idx((dir / "zero.idx").string(), dims); }, {"zero.idx", "dimension 0 is 0"});
    std::ofstream(dir / "extra.idx", std::ios::binary) << idx_bytes({2}, {1, 2, 3});
    check_error([&] { data::read_idx((dir / "extra.idx").string(), dims); }, {"extra.idx", "after the 2 bytes"});
    // Fashion-MNIST with a label that is no class.
    fs::create_directories(dir / "fm");
    write_gz(dir / "fm" / "train-images-idx3-ubyte.gz", idx_bytes({1, 2, 2}, {0, 0, 0, 0}));
    write_gz(dir / "fm" / "train-labels-idx1-ubyte.gz", idx_bytes({1}, {200}));
    check_error([&] { data::load_fashion_mnist((dir / "fm").string(), true); }, {"label 200"});
    // resize_images refuses empty sides instead of reading before its buffer.
    check_error([&] { data::resize_images(raw::zeros({1, 1, 0, 4}), 8); }, {"resize_images", "at least 1 pixel"});
    // Image folders: a 16-bit PPM named .png, a GIF header claiming 65294 x 4826
    // named .jpg, a PNG of 0 x 5 pixels, one too large, and a 16-bit PNG.
    fs::create_directories(dir / "imgs" / "a");
    auto folder_error = [&](const std::string& file, const std::string& bytes, std::vector<std::string> fragments) {
        fs::remove_all(dir / "imgs" / "a");
        fs::create_directories(dir / "imgs" / "a");
        std::ofstream(dir / "imgs" / "a" / file, std::ios::binary) << bytes;
        fragments.insert(fragments.begin(), file);
        check_error([&] { data::load_image_folder((dir / "imgs").string(), 8, 3); }, fragments);
    };
    folder_error("ppm.png", std::string("P6\n2 2\n65535\n") + std::string(10, '\xff'), {"not a PNG or JPEG"});
    folder_error("gif.jpg", std::string("GIF89a\x0e\xff\xda\x12", 10) + std::string(27, '\0'), {"not a PNG or JPEG"});
    // PNGs built chunk by chunk, with their CRCs.
    auto chunk = [](const std::string& type, const std::string& data) {
        std::string c;
        uint32_t n = (uint32_t)data.size();
        c += {(char)(n >> 24), (char)(n >> 16), (char)(n >> 8), (char)n};
        std::string body = type + data;
        uint32_t crc = (uint32_t)crc32(0, reinterpret_cast<const Bytef*>(body.data()), (uInt)body.size());
        return c + body + std::string{(char)(crc >> 24), (char)(crc >> 16), (char)(crc >> 8), (char)crc};
    };
    const std::string signature("\x89PNG\r\n\x1a\n", 8);
    auto ihdr = [](uint32_t w, uint32_t h, uint8_t depth) {
        std::string s;
        for (uint32_t v : {w, h}) s += {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v};
        return s + std::string{(char)depth, 2, 0, 0, 0};
    };
    auto idat = [](int w, int h, int bytes_per_pixel) {  // zlib-compressed rows of grey-ish pixels
        std::string rows;
        for (int y = 0; y < h; ++y) rows += std::string(1, '\0') + std::string((size_t)(w * bytes_per_pixel), '\x40');
        uLongf zlen = compressBound(rows.size());
        std::string z(zlen, '\0');
        compress(reinterpret_cast<Bytef*>(&z[0]), &zlen, reinterpret_cast<const Bytef*>(rows.data()), rows.size());
        z.resize(zlen);
        return z;
    };
    // A Huffman table whose code lengths are no prefix code (two codes of length 1
    // and more after them): stb 2.27 asserts on it (the fuzz campaign found it).
    {
        std::string dht("\xFF\xD8\xFF\xC4", 4);
        std::string counts(16, '\0');
        counts[0] = 2;  // two 1-bit codes: 0 and 1, and 1 is all ones
        counts[1] = 1;
        size_t length = 2 + 17 + 3;
        dht += {(char)(length >> 8), (char)length, 0x00};
        dht += counts + std::string("\x01\x02\x03", 3) + std::string("\xFF\xD9", 2);
        folder_error("prefix.jpg", dht, {"not a valid JPEG", "not a valid prefix code"});
    }
    // A scan that uses an AC table no DHT defined (stb decodes with garbage tables).
    {
        std::string jpeg("\xFF\xD8\xFF\xC4\x00\x14\x00", 7);  // DHT: DC table 0, one 1-bit code
        std::string counts(16, '\0');
        counts[0] = 1;
        jpeg += counts + std::string(1, '\x05');
        jpeg += std::string("\xFF\xDA\x00\x08\x01\x01\x00\x00\x3F\x00", 10);  // SOS: component 1 with DC 0 and AC 0
        jpeg += std::string("\x12\x34\xFF\xD9", 4);
        folder_error("undefined.jpg", jpeg, {"not a valid JPEG", "never defined"});
        // A baseline frame whose scan claims to cover the DC coefficient only:
        // stb still decodes it with both tables (CI's fuzz finding).
        std::string sof0("\xFF\xD8\xFF\xC0\x00\x0B\x08\x00\x01\x00\x01\x01\x01\x11\x00", 15);
        std::string dc_only = sof0 + jpeg.substr(2);
        size_t spectral_end = dc_only.find(std::string("\xFF\xDA", 2)) + 8;
        dc_only[spectral_end] = 0;
        folder_error("baseline_dc_only.jpg", dc_only, {"not a valid JPEG", "never defined"});
    }
    folder_error("empty.png", signature + chunk("IHDR", ihdr(0, 5, 8)) + chunk("IEND", ""), {"cannot be read"});
    folder_error("wide.png", signature + chunk("IHDR", ihdr(16000, 16000, 8)) + chunk("IEND", ""),
                 {"16000 x 16000", "at most 2^24 pixels"});
    std::string good = signature + chunk("IHDR", ihdr(2, 2, 8)) + chunk("IDAT", idat(2, 2, 3)) + chunk("IEND", "");
    std::string damaged = good;
    damaged[40] ^= 1;
    folder_error("damaged.png", damaged, {"not a valid PNG", "wrong CRC"});
    folder_error("cut.png", good.substr(0, good.size() - 12), {"not a valid PNG", "without an IEND"});
    folder_error("empty_idat.png", signature + chunk("IHDR", ihdr(2, 2, 8)) + chunk("IDAT", "") + chunk("IEND", ""),
                 {"first IDAT chunk is empty"});
    // A real 16-bit PNG: 2 x 2 RGB, 6 bytes per pixel.
    fs::remove_all(dir / "imgs" / "a");
    fs::create_directories(dir / "imgs" / "a");
    std::ofstream(dir / "imgs" / "a" / "deep.png", std::ios::binary)
        << signature + chunk("IHDR", ihdr(2, 2, 16)) + chunk("IDAT", idat(2, 2, 6)) + chunk("IEND", "");
    check_error([&] { data::load_image_folder((dir / "imgs").string(), 8, 3); }, {"deep.png", "16 bits per channel"});
    fs::remove_all(dir);
}

#include "data/images.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

// Only the decoders the loader accepts are compiled in (stb's PPM, GIF,
// PSD, ... readers have had memory errors on crafted files), and stb itself
// refuses a side longer than 16384 pixels.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_FAILURE_USERMSG
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_MAX_DIMENSIONS 16384
#include <stb/stb_image.h>

namespace nc {
namespace data {

const char* const kFashionMnist = "/usr/share/datasets/fashion-mnist";

// The most data an IDX file may hold: 2^32 bytes (Fashion-MNIST's training
// images are 47 MB). Reading stops there, so a gzip bomb or a header that
// claims exabytes costs no more memory than this.
static const int64_t kMaxIdxBytes = int64_t(1) << 32;

std::vector<uint8_t> read_idx(const std::string& path, std::vector<int64_t>& dims) {
    // gzread reads plain files too, so one path serves .gz and raw IDX files.
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f)
        throw Error("IDX file '" + path + "' cannot be opened" +
                    (path.find(kFashionMnist) == 0 ? " (install Debian's dataset-fashion-mnist: make setup)" : ""));
    auto bad = [&](const std::string& why) {
        gzclose(f);
        return Error("IDX file '" + path + "': " + why);
    };
    // Reads up to n bytes; returns how many there were.
    auto read_some = [&](uint8_t* out, int64_t n) {
        int64_t done = 0;
        while (done < n) {
            int got = gzread(f, out + done, (unsigned)std::min<int64_t>(n - done, 1 << 20));
            if (got <= 0) break;
            done += got;
        }
        return done;
    };
    auto read = [&](uint8_t* out, int64_t n) { return read_some(out, n) == n; };
    uint8_t magic[4];
    if (!read(magic, 4) || magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08)
        throw bad("not an IDX file of unsigned bytes (bad magic number)");
    int ndim = magic[3];
    if (ndim == 0) throw bad("the header has no dimensions");
    dims.clear();
    int64_t count = 1;
    for (int d = 0; d < ndim; ++d) {
        uint8_t p[4];
        if (!read(p, 4)) throw bad("truncated header");
        dims.push_back((int64_t)p[0] << 24 | (int64_t)p[1] << 16 | (int64_t)p[2] << 8 | (int64_t)p[3]);  // big-endian
        if (dims.back() == 0) throw bad("dimension " + std::to_string(d) + " is 0");
        if (__builtin_mul_overflow(count, dims.back(), &count) || count > kMaxIdxBytes)
            throw bad("the dimensions ask for more than 2^32 bytes of data");
    }
    // Grown as the bytes arrive: a header that claims 4 GB of a 20-byte file
    // costs 20 bytes, not 4 GB.
    std::vector<uint8_t> data;
    std::vector<uint8_t> chunk(1 << 20);
    while ((int64_t)data.size() < count) {
        int64_t got = read_some(chunk.data(), std::min<int64_t>((int64_t)chunk.size(), count - (int64_t)data.size()));
        if (got == 0) break;
        data.insert(data.end(), chunk.begin(), chunk.begin() + got);
    }
    int64_t got = (int64_t)data.size();
    if (got != count)
        throw bad("the header says " + std::to_string(count) + " bytes of data, the file has " + std::to_string(got));
    uint8_t extra;
    if (gzread(f, &extra, 1) != 0) throw bad("there is data after the " + std::to_string(count) + " bytes the header announces");
    gzclose(f);
    return data;
}

// uint8 pixels [N, C, H, W] -> float32 in [-1, 1].
static Tensor to_float_images(const std::vector<uint8_t>& pixels, const Shape& shape) {
    std::vector<float> values(pixels.size());
    for (size_t i = 0; i < pixels.size(); ++i) values[i] = (float)pixels[i] / 127.5f - 1.0f;
    return raw::from_vector(values, shape);
}

ImageSet load_fashion_mnist(const std::string& dir, bool train, int64_t limit, int64_t offset) {
    std::string prefix = dir + "/" + (train ? "train" : "t10k");
    std::vector<int64_t> image_dims, label_dims;
    std::vector<uint8_t> pixels = read_idx(prefix + "-images-idx3-ubyte.gz", image_dims);
    std::vector<uint8_t> labels = read_idx(prefix + "-labels-idx1-ubyte.gz", label_dims);
    if (image_dims.size() != 3 || label_dims.size() != 1 || image_dims[0] != label_dims[0])
        throw Error("Fashion-MNIST in '" + dir + "': images and labels do not match");
    for (uint8_t label : labels)
        if (label > 9) throw Error("Fashion-MNIST in '" + dir + "': label " + std::to_string(label) + " is not a class 0-9");
    if (offset < 0 || offset >= image_dims[0])
        throw Error("Fashion-MNIST in '" + dir + "': image " + std::to_string(offset) + " is past the " +
                    std::to_string(image_dims[0]) + " images of the " + (train ? "training" : "test") + " set");
    int64_t left = image_dims[0] - offset;
    int64_t n = limit > 0 ? std::min(limit, left) : left;
    int64_t h = image_dims[1], w = image_dims[2];
    ImageSet set;
    auto first = pixels.begin() + offset * h * w;
    set.images = to_float_images(std::vector<uint8_t>(first, first + n * h * w), {n, 1, h, w});
    set.labels.assign(labels.begin() + offset, labels.begin() + offset + n);
    set.class_names = {"t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot"};
    return set;
}

Tensor resize_images(const Tensor& images, int64_t size) {
    if (images.dim() != 4) fail("resize_images", "expects images [N, C, H, W], got " + shape_str(images.shape()));
    int64_t N = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
    if (H < 1 || W < 1 || size < 1)
        fail("resize_images", "images " + shape_str(images.shape()) + " to size " + std::to_string(size) +
                                  ": every side must be at least 1 pixel");
    if (H == size && W == size) return images;
    Tensor src = raw::contiguous(raw::to_dtype(images, kFloat32));
    const float* in = src.data<float>();
    Tensor out = empty({N, C, size, size}, kFloat32);
    float* o = out.data<float>();
    for (int64_t nc = 0; nc < N * C; ++nc)
        for (int64_t y = 0; y < size; ++y)
            for (int64_t x = 0; x < size; ++x) {
                // The source point under this pixel's centre, clamped to the image.
                double sy = std::clamp((y + 0.5) * (double)H / size - 0.5, 0.0, (double)H - 1);
                double sx = std::clamp((x + 0.5) * (double)W / size - 0.5, 0.0, (double)W - 1);
                int64_t y0 = (int64_t)sy, x0 = (int64_t)sx, y1 = std::min(y0 + 1, H - 1), x1 = std::min(x0 + 1, W - 1);
                double fy = sy - (double)y0, fx = sx - (double)x0;
                const float* p = in + nc * H * W;
                double top = p[y0 * W + x0] * (1 - fx) + p[y0 * W + x1] * fx;
                double bottom = p[y1 * W + x0] * (1 - fx) + p[y1 * W + x1] * fx;
                o[(nc * size + y) * size + x] = (float)(top * (1 - fy) + bottom * fy);
            }
    return out;
}

// An image may have at most 2^24 pixels (4096 x 4096): a crafted header
// must not make the loader allocate gigabytes.
static const int64_t kMaxImagePixels = int64_t(1) << 24;

// stb_image 2.27 (Debian 12's) trusts a JPEG's Huffman tables: a DHT
// segment whose 16 code counts add up to more than 256 symbols makes
// stbi__build_huffman write past its 257-entry table (found by
// tests/fuzz/fuzz_image.cpp). So the markers are walked first: every segment
// must fit the file, and every Huffman table must have at most 256 symbols.
// Between a scan's header (SOS) and the next marker lies entropy-coded data,
// in which FF is followed by 00 (a stuffed byte) or a restart marker.
static void check_jpeg_segments(const std::string& name, const std::vector<unsigned char>& b) {
    auto bad = [&](const std::string& why) { return Error("image '" + name + "' is not a valid JPEG: " + why); };
    size_t i = 2;  // after SOI (FF D8)
    bool defined[2][4] = {};  // which Huffman tables (DC/AC class, id 0-3) exist so far
    bool progressive = false;  // SOF2; baseline frames (SOF0, SOF1) decode every scan with both tables
    while (i + 4 <= b.size()) {
        if (b[i] != 0xFF) throw bad("expected a marker at byte " + std::to_string(i));
        unsigned char marker = b[i + 1];
        if (marker == 0xFF) { ++i; continue; }  // fill byte
        if (marker == 0xD9) return;              // EOI
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) { i += 2; continue; }  // no length
        size_t length = (size_t)b[i + 2] << 8 | b[i + 3];
        if (length < 2 || i + 2 + length > b.size()) throw bad("a segment runs past the end of the file");
        if (marker == 0xC2) progressive = true;
        if (marker == 0xC4) {  // DHT: tables of (class/id, 16 counts, symbols)
            size_t p = i + 4, end = i + 2 + length;
            while (p < end) {
                if (p + 17 > end) throw bad("a Huffman table is cut short");
                int table_class = b[p] >> 4, table_id = b[p] & 15;
                if (table_class > 1 || table_id > 3) throw bad("a Huffman table has class " + std::to_string(table_class) +
                                                            " and id " + std::to_string(table_id));
                defined[table_class][table_id] = true;
                size_t symbols = 0;
                for (int k = 1; k <= 16; ++k) symbols += b[p + k];
                if (symbols > 256) throw bad("a Huffman table has " + std::to_string(symbols) + " symbols (at most 256)");
                // The canonical codes these counts give (JPEG annex C) must
                // fit their lengths and never be all 1 bits; stb asserts on
                // tables that break this (the campaign's finding).
                uint32_t code = 0;
                for (int len = 1; len <= 16; ++len) {
                    for (int n = 0; n < b[p + len]; ++n, ++code)
                        if (code >= (1u << len) - 1) throw bad("a Huffman table's code lengths are not a valid prefix code");
                    code <<= 1;
                }
                p += 17 + symbols;
            }
            if (p != end) throw bad("a Huffman table is cut short");
        }
        if (marker == 0xDA) {
            // A scan may only use Huffman tables defined before it: stb decodes
            // with an undefined table's garbage and indexes past its arrays
            // (the campaign's finding). A progressive scan uses DC tables when
            // it starts at coefficient 0 and AC tables when it reaches past
            // it; a baseline scan always uses both, whatever its spectral
            // range says (stb then sets the range to 0..63: CI's finding).
            size_t ns = length >= 3 ? b[i + 4] : 0;
            if (ns < 1 || ns > 4 || length != 6 + 2 * ns) throw bad("a scan header has the wrong length");
            size_t ss = b[i + 5 + 2 * ns], se = b[i + 6 + 2 * ns];
            bool uses_dc = !progressive || ss == 0, uses_ac = !progressive || se > 0;
            for (size_t c = 0; c < ns; ++c) {
                int selectors = b[i + 6 + 2 * c], dc = selectors >> 4, ac = selectors & 15;
                if ((uses_dc && (dc > 3 || !defined[0][dc])) || (uses_ac && (ac > 3 || !defined[1][ac])))
                    throw bad("a scan uses a Huffman table that was never defined");
            }
        }
        i += 2 + length;
        if (marker == 0xDA) {  // SOS: skip the entropy-coded data up to the next real marker
            while (i + 1 < b.size() && !(b[i] == 0xFF && b[i + 1] != 0x00 && !(b[i + 1] >= 0xD0 && b[i + 1] <= 0xD7))) ++i;
        }
    }
}

// A PNG's chunks, walked before stb sees them: each fits the file and its
// CRC is right (stb ignores CRCs, so a damaged file decoded to garbage), the
// file ends with IEND, and the first IDAT is not empty (stb 2.27 then copies
// from a null pointer; found by tests/fuzz/fuzz_image.cpp).
static void check_png_chunks(const std::string& name, const std::vector<unsigned char>& b) {
    auto bad = [&](const std::string& why) { return Error("image '" + name + "' is not a valid PNG: " + why); };
    auto be32 = [&](size_t p) { return (uint32_t)b[p] << 24 | (uint32_t)b[p + 1] << 16 | (uint32_t)b[p + 2] << 8 | b[p + 3]; };
    size_t p = 8;
    bool seen_idat = false;
    while (p + 12 <= b.size()) {
        uint32_t length = be32(p);
        if (length > b.size() - p - 12) throw bad("a chunk runs past the end of the file");
        std::string type(b.begin() + (std::ptrdiff_t)p + 4, b.begin() + (std::ptrdiff_t)p + 8);
        uint32_t crc = (uint32_t)crc32(0, b.data() + p + 4, 4 + length);
        if (crc != be32(p + 8 + length)) throw bad("chunk " + type + " has a wrong CRC (damaged file)");
        if (type == "IDAT") {
            if (!seen_idat && length == 0) throw bad("its first IDAT chunk is empty");
            seen_idat = true;
        }
        if (type == "IEND") return;
        p += 12 + length;
    }
    throw bad("it ends without an IEND chunk (truncated file?)");
}

// The bytes of an image file, checked before decoding: a PNG or a JPEG by
// its first bytes (not only its name), 8 bits per channel, and a sane size.
// The decoder then reads these same bytes.
static std::vector<unsigned char> read_checked_image(const std::string& name) {
    std::ifstream in(name, std::ios::binary);
    if (!in) throw Error("image '" + name + "' cannot be opened");
    std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    bool is_png = bytes.size() >= 8 && std::memcmp(bytes.data(), png, 8) == 0;
    bool is_jpeg = bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
    if (!is_png && !is_jpeg) throw Error("image '" + name + "' cannot be read: it is not a PNG or JPEG file");
    // Before stb reads anything: stbi_info already parses a JPEG's Huffman tables.
    if (is_jpeg) check_jpeg_segments(name, bytes);
    if (is_png) check_png_chunks(name, bytes);
    int w = 0, h = 0, comp = 0;
    int size = (int)std::min<size_t>(bytes.size(), (size_t)INT32_MAX);
    if (!stbi_info_from_memory(bytes.data(), size, &w, &h, &comp))
        throw Error("image '" + name + "' cannot be read: " + stbi_failure_reason());
    if (w < 1 || h < 1 || (int64_t)w * h > kMaxImagePixels)
        throw Error("image '" + name + "' is " + std::to_string(w) + " x " + std::to_string(h) +
                    " pixels; images must have at least 1 and at most 2^24 pixels");
    if (stbi_is_16_bit_from_memory(bytes.data(), size))
        throw Error("image '" + name + "' has 16 bits per channel; convert it to 8 bits");
    return bytes;
}

bool is_image_file(const std::string& path) {
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

int64_t count_image_folder(const std::string& root) {
    namespace fs = std::filesystem;
    int64_t n = 0;
    for (const auto& cls : fs::directory_iterator(root))
        if (cls.is_directory())
            for (const auto& f : fs::directory_iterator(cls.path()))
                if (f.is_regular_file() && is_image_file(f.path().string())) ++n;
    return n;
}

ImageSet load_image_folder(const std::string& root, int64_t size, int64_t channels) {
    namespace fs = std::filesystem;
    if (channels != 1 && channels != 3) throw Error("image folder: --channels must be 1 or 3, got " + std::to_string(channels));
    if (!fs::is_directory(root)) throw Error("image folder '" + root + "' is not a directory (expected root/<class>/<image>)");
    ImageSet set;
    for (const auto& entry : fs::directory_iterator(root))
        if (entry.is_directory()) set.class_names.push_back(entry.path().filename().string());
    std::sort(set.class_names.begin(), set.class_names.end());
    if (set.class_names.empty()) throw Error("image folder '" + root + "' has no class subdirectories");
    std::vector<Tensor> images;
    for (size_t c = 0; c < set.class_names.size(); ++c) {
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(fs::path(root) / set.class_names[c])) {
            if (entry.is_regular_file() && is_image_file(entry.path().string())) files.push_back(entry.path());
        }
        std::sort(files.begin(), files.end());
        for (const fs::path& file : files) {
            std::string name = file.string();
            std::vector<unsigned char> bytes = read_checked_image(name);
            int w = 0, h = 0, n = 0;
            unsigned char* pixels = stbi_load_from_memory(bytes.data(), (int)bytes.size(), &w, &h, &n, (int)channels);
            if (!pixels) throw Error("image '" + name + "' cannot be read: " + stbi_failure_reason());
            if (w < 1 || h < 1 || (int64_t)w * h > kMaxImagePixels) {  // what stbi_info said, decoded
                stbi_image_free(pixels);
                throw Error("image '" + name + "' decoded to " + std::to_string(w) + " x " + std::to_string(h) + " pixels");
            }
            // stb gives rows of interleaved channels (HWC); we want CHW.
            std::vector<uint8_t> chw((size_t)(channels * h * w));
            for (int64_t ch = 0; ch < channels; ++ch)
                for (int64_t i = 0; i < (int64_t)h * w; ++i) chw[ch * h * w + i] = pixels[i * channels + ch];
            stbi_image_free(pixels);
            images.push_back(resize_images(to_float_images(chw, {1, channels, h, w}), size));
            set.labels.push_back((int64_t)c);
        }
    }
    if (images.empty()) throw Error("image folder '" + root + "' holds no .png or .jpg images");
    set.images = raw::cat(images, 0);
    return set;
}

ImageBatches::ImageBatches(const ImageSet& set, int64_t B, bool shuffle, uint64_t seed)
    : set_(set), B_(B), shuffle_(shuffle), gen_(seed) {
    if (B <= 0) throw Error("batches: --batch must be positive");
    if (set.labels.empty()) throw Error("batches: the image set is empty");
}

ImageBatch ImageBatches::make(const std::vector<int64_t>& rows) const {
    std::vector<int64_t> labels;
    for (int64_t r : rows) labels.push_back(set_.labels[r]);
    Tensor index = raw::from_indices(rows, {(int64_t)rows.size()});
    return {raw::index_select(set_.images, 0, index), raw::from_indices(labels, {(int64_t)labels.size()})};
}

ImageBatch ImageBatches::at(int64_t i) const {
    int64_t n = (int64_t)set_.labels.size();
    std::vector<int64_t> rows;
    for (int64_t j = 0; j < B_; ++j) rows.push_back((i * B_ + j) % n);
    return make(rows);
}

ImageBatch ImageBatches::next() {
    if (!shuffle_) return at(taken_++);
    ++taken_;
    int64_t n = (int64_t)set_.labels.size();
    std::vector<int64_t> rows;
    for (double u : raw::rand({B_}, gen_, kFloat64).to_vector()) rows.push_back(std::min(n - 1, (int64_t)(u * (double)n)));
    return make(rows);
}

}  // namespace data
}  // namespace nc

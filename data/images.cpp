#include "data/images.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_FAILURE_USERMSG
#include <stb/stb_image.h>

namespace nc {
namespace data {

const char* const kFashionMnist = "/usr/share/datasets/fashion-mnist";

std::vector<uint8_t> read_idx(const std::string& path, std::vector<int64_t>& dims) {
    // gzread reads plain files too, so one path serves .gz and raw IDX files.
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f)
        throw Error("IDX file '" + path + "' cannot be opened" +
                    (path.find(kFashionMnist) == 0 ? " (install Debian's dataset-fashion-mnist: make setup)" : ""));
    std::vector<uint8_t> bytes;
    uint8_t buffer[1 << 16];
    int n;
    while ((n = gzread(f, buffer, sizeof buffer)) > 0) bytes.insert(bytes.end(), buffer, buffer + n);
    bool failed = n < 0;
    gzclose(f);
    if (failed) throw Error("IDX file '" + path + "': corrupt compressed data");
    if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08)
        throw Error("IDX file '" + path + "': not an IDX file of unsigned bytes (bad magic number)");
    size_t ndim = bytes[3], header = 4 + 4 * ndim;
    if (ndim == 0 || bytes.size() < header) throw Error("IDX file '" + path + "': truncated header");
    dims.clear();
    int64_t count = 1;
    for (size_t d = 0; d < ndim; ++d) {
        const uint8_t* p = &bytes[4 + 4 * d];
        dims.push_back((int64_t)p[0] << 24 | (int64_t)p[1] << 16 | (int64_t)p[2] << 8 | (int64_t)p[3]);  // big-endian
        count *= dims.back();
    }
    if ((int64_t)(bytes.size() - header) != count)
        throw Error("IDX file '" + path + "': header says " + std::to_string(count) + " bytes of data, the file has " +
                    std::to_string(bytes.size() - header));
    return std::vector<uint8_t>(bytes.begin() + (std::ptrdiff_t)header, bytes.end());
}

// uint8 pixels [N, C, H, W] -> float32 in [-1, 1].
static Tensor to_float_images(const std::vector<uint8_t>& pixels, const Shape& shape) {
    std::vector<float> values(pixels.size());
    for (size_t i = 0; i < pixels.size(); ++i) values[i] = (float)pixels[i] / 127.5f - 1.0f;
    return raw::from_vector(values, shape);
}

ImageSet load_fashion_mnist(const std::string& dir, bool train, int64_t limit) {
    std::string prefix = dir + "/" + (train ? "train" : "t10k");
    std::vector<int64_t> image_dims, label_dims;
    std::vector<uint8_t> pixels = read_idx(prefix + "-images-idx3-ubyte.gz", image_dims);
    std::vector<uint8_t> labels = read_idx(prefix + "-labels-idx1-ubyte.gz", label_dims);
    if (image_dims.size() != 3 || label_dims.size() != 1 || image_dims[0] != label_dims[0])
        throw Error("Fashion-MNIST in '" + dir + "': images and labels do not match");
    int64_t n = limit > 0 ? std::min(limit, image_dims[0]) : image_dims[0];
    int64_t h = image_dims[1], w = image_dims[2];
    ImageSet set;
    set.images = to_float_images(std::vector<uint8_t>(pixels.begin(), pixels.begin() + n * h * w), {n, 1, h, w});
    set.labels.assign(labels.begin(), labels.begin() + n);
    set.class_names = {"t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot"};
    return set;
}

Tensor resize_images(const Tensor& images, int64_t size) {
    int64_t N = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
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
            std::string ext = entry.path().extension().string();
            std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
            if (entry.is_regular_file() && (ext == ".png" || ext == ".jpg" || ext == ".jpeg")) files.push_back(entry.path());
        }
        std::sort(files.begin(), files.end());
        for (const fs::path& file : files) {
            int w = 0, h = 0, n = 0;
            unsigned char* pixels = stbi_load(file.string().c_str(), &w, &h, &n, (int)channels);
            if (!pixels) throw Error("image '" + file.string() + "' cannot be read: " + stbi_failure_reason());
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

// images.h — labelled images for the ViT: Fashion-MNIST IDX files and
// image folders.
//
// Fashion-MNIST (Debian's dataset-fashion-mnist) is four gzipped IDX files:
// a big-endian header (magic, then the size of each dim) and raw uint8 data.
// An image folder is root/<class>/<image>.png|jpg (read with stb_image); the
// class names, sorted, give the labels. Every image is resized to the
// model's size (bilinear) and scaled to [-1, 1]: x / 127.5 - 1.
#pragma once

#include <string>
#include <vector>

#include "tensor/raw_ops.h"

namespace nc {
namespace data {

extern const char* const kFashionMnist;  // /usr/share/datasets/fashion-mnist

struct ImageSet {
    Tensor images;                         // float32 [N, channels, size, size]
    std::vector<int64_t> labels;           // N class indices
    std::vector<std::string> class_names;
};

// Reads an IDX file, gzipped or not: returns its dims and bytes.
std::vector<uint8_t> read_idx(const std::string& path, std::vector<int64_t>& dims);
// The training (or test) split; `limit` > 0 keeps the first `limit` images.
// Images offset .. offset + limit - 1 of the set (limit 0: to the end).
ImageSet load_fashion_mnist(const std::string& dir, bool train, int64_t limit = 0, int64_t offset = 0);
// Every image below root/<class>/, resized to size x size with `channels` (1 or 3).
ImageSet load_image_folder(const std::string& root, int64_t size, int64_t channels);
// Whether load_image_folder reads this file: .png, .jpg or .jpeg in any case.
bool is_image_file(const std::string& path);
// How many images load_image_folder would read, without reading them.
int64_t count_image_folder(const std::string& root);
// Resizes [N, C, H, W] images to size x size (bilinear, align_corners = false).
Tensor resize_images(const Tensor& images, int64_t size);

struct ImageBatch {
    Tensor images, labels;  // [B, C, S, S], int64 [B]
};

class ImageBatches {
public:
    ImageBatches(const ImageSet& set, int64_t B, bool shuffle, uint64_t seed);
    ImageBatch next();
    ImageBatch at(int64_t i) const;  // batch i in order (wrapping)
    Generator& generator() { return gen_; }
    int64_t batches_taken() const { return taken_; }
    void set_position(int64_t taken) { taken_ = taken; }

private:
    ImageBatch make(const std::vector<int64_t>& rows) const;
    const ImageSet& set_;
    int64_t B_;
    bool shuffle_;
    Generator gen_;
    int64_t taken_ = 0;
};

}  // namespace data
}  // namespace nc

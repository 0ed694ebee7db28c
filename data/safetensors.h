// safetensors.h — reading and writing the safetensors format.
//
// A file is: 8 bytes, the little-endian length N of a JSON header; N bytes of
// JSON mapping each tensor name to {"dtype", "shape", "data_offsets": [begin,
// end]} (offsets into the data that follows), plus an optional
// "__metadata__" object of strings; then the raw little-endian data.
// This is Hugging Face's format, so files written here open in PyTorch
// (`safetensors.torch.load_file`) and theirs open here.
#pragma once

#include <map>
#include <string>

#include "tensor/tensor.h"

namespace nc {
namespace data {

struct SafetensorsFile {
    std::map<std::string, Tensor> tensors;
    std::map<std::string, std::string> metadata;
};

// Reads every tensor (F32, F64, I64 as they are; F16 and BF16 converted to
// float32). A corrupt header, an unknown dtype, a shape that disagrees with
// the byte range or data cut short throws nc::Error naming the file and entry.
SafetensorsFile read_safetensors(const std::string& path);

// Writes the tensors (any dtype of ours, any device, any strides) sorted by
// name. The bytes go to `path.tmp` first and are renamed over `path` only when
// complete, so a crash never leaves a half-written file where a good one was.
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace data
}  // namespace nc

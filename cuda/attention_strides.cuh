// attention_strides.cuh — where the forward kernels find matrix n of q, k
// and v: at q_all + n * q (and so on), each matrix contiguous. The distances
// are the operands' strides()[0] (tensor/ops/attention.h): T * D for a
// contiguous batch, more for the first S positions of a key/value cache
// read in place. Shared by attention_tiled.cuh and attention_simple.cuh.
#pragma once

#include <cstdint>

namespace nc {
namespace cuda {

struct MatrixStrides {
    int64_t q, k, v;
};

}  // namespace cuda
}  // namespace nc

// storage.h — a flat block of memory on one device.
//
// Tensors never own memory directly: they point at a Storage through a
// shared_ptr, so views (transpose, slice, ...) can share it. The backend of
// the storage's device allocates and frees the bytes.
#pragma once

#include <cstddef>
#include <memory>

#include "tensor/dtype.h"

namespace nc {

struct Storage {
    void* data = nullptr;
    size_t nbytes = 0;
    Device device;

    Storage(size_t nbytes, Device device);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
};

}  // namespace nc

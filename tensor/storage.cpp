#include "tensor/storage.h"

#include "tensor/backend.h"

namespace nc {

Storage::Storage(size_t nbytes_, Device device_) : nbytes(nbytes_), device(device_) {
    data = backend_for(device).allocate(nbytes);
}

Storage::~Storage() { backend_for(device).deallocate(data); }

}  // namespace nc

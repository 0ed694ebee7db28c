// cublas_library.cu — dlopen and dlsym for cuBLAS (why: cublas_library.cuh).
#include "cuda/cublas_library.cuh"

#include <dlfcn.h>

#include <string>

#include "cuda/cuda_kernels.h"
#include "tensor/error.h"

namespace nc {
namespace cuda {

namespace {

// The library file of the cuBLAS this program was compiled against: its
// major version is its ABI (CUDA 12's libcublas.so.12, CUDA 13's .so.13).
std::string cublas_file() { return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR); }

// One function of the open library, cast to the pointer type it is stored
// in (dlsym returns void*; the pointer's type carries the signature).
template <typename Function>
void find(void* library, const char* name, Function& function) {
    function = reinterpret_cast<Function>(dlsym(library, name));
    if (!function)
        throw Error("cuBLAS: " + cublas_file() + " has no function " + name +
                    " (a cuBLAS older than the CUDA toolkit normcore was built with?)");
}

// dlopen, with the loader's reason when it fails.
void* open_file(const std::string& file, std::string& why) {
    // RTLD_NOW: every symbol resolved here, so a broken installation fails
    // now with the loader's message, not inside the first product.
    void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char* reason = dlerror();
        why = reason ? reason : "no reason given";
    }
    return library;
}

// Every function normcore calls, by the name the library exports.
void find_all(void* library, CublasLibrary& f) {
    find(library, "cublasCreate_v2", f.create);
    find(library, "cublasSetStream_v2", f.set_stream);
    find(library, "cublasSetMathMode", f.set_math_mode);
    find(library, "cublasSgemm_v2", f.sgemm);
    find(library, "cublasDgemm_v2", f.dgemm);
    find(library, "cublasGemmEx", f.gemm_ex);
    find(library, "cublasSgemmStridedBatched", f.sgemm_strided_batched);
    find(library, "cublasDgemmStridedBatched", f.dgemm_strided_batched);
    find(library, "cublasGemmStridedBatchedEx", f.gemm_strided_batched_ex);
}

CublasLibrary open_library() {
    std::string why, why_in_toolkit;
    void* library = open_file(cublas_file(), why);
#ifdef NORMCORE_CUDA_LIB_DIR
    const std::string in_toolkit = std::string(NORMCORE_CUDA_LIB_DIR) + "/" + cublas_file();
    if (!library) library = open_file(in_toolkit, why_in_toolkit);
    if (!library) why += "; " + why_in_toolkit;
#endif
    if (!library)
        throw Error("cuBLAS: cannot open " + cublas_file() + " (" + why + "): put the folder that holds it (the CUDA " +
                    "toolkit's lib64, or PyTorch's nvidia/cublas/lib) on LD_LIBRARY_PATH");
    // Kept open: the handle and the functions live until the program ends.
    CublasLibrary f;
    try {
        find_all(library, f);
    } catch (const Error&) {
        dlclose(library);
        throw;
    }
    return f;
}

}  // namespace

const CublasLibrary& cublas_library() {
    static const CublasLibrary library = open_library();  // thread-safe, once; a failure is retried next call
    return library;
}

void open_cublas() { cublas_library(); }

}  // namespace cuda
}  // namespace nc

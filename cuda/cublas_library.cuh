// cublas_library.cuh — cuBLAS, opened the first time a product runs on the GPU.
//
// Linked the usual way (-lcublas), cuBLAS and the libcublasLt it depends on
// (about 600 MB of code) are loaded and relocated when the program starts,
// before main: 0.4 s and 218 MB of memory per process on a 2-core virtual
// machine (a program that does nothing, linked with -lcublas), paid by
// every command, including the many that never touch a GPU. So the backend
// opens the library itself (dlopen) the first time it needs a cuBLAS handle
// (cublas() in cuda_backend.cu), finds the functions it calls by name
// (dlsym), and calls them through the pointers below.
#pragma once

#include <cublas_v2.h>

#include <type_traits>

namespace nc {
namespace cuda {

// cublasGemmEx and cublasGemmStridedBatchedEx are overloaded in C++ (an
// inline form kept for old code takes the compute type as a cudaDataType),
// so their pointer types are spelled out: the library's functions, whose
// compute type is a cublasComputeType_t.
using GemmExFunction = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType, int lda, const void* B,
                                          cudaDataType, int ldb, const void* beta, void* C, cudaDataType, int ldc,
                                          cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFunction = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k, const void* alpha, const void* A,
    cudaDataType, int lda, long long stride_a, const void* B, cudaDataType, int ldb, long long stride_b,
    const void* beta, void* C, cudaDataType, int ldc, long long stride_c, int batch_count, cublasComputeType_t,
    cublasGemmAlgo_t);
// What is checked here is the cast, not the comparison (which always holds):
// static_cast to a function pointer type picks the overload of exactly that
// type and fails to compile when the header declares none. Inside decltype
// nothing is called or linked.
static_assert(std::is_same_v<decltype(static_cast<GemmExFunction>(cublasGemmEx)), GemmExFunction>);
static_assert(std::is_same_v<decltype(static_cast<GemmStridedBatchedExFunction>(cublasGemmStridedBatchedEx)),
                             GemmStridedBatchedExFunction>);

// The cuBLAS functions normcore calls, each pointer of the type of the
// function the header declares (the header's cublasCreate, cublasSetStream,
// cublasSgemm and cublasDgemm are macros for the _v2 functions, the
// library's current ABI).
struct CublasLibrary {
    decltype(&cublasCreate_v2) create;
    decltype(&cublasSetStream_v2) set_stream;
    decltype(&cublasSetMathMode) set_math_mode;
    decltype(&cublasSgemm_v2) sgemm;
    decltype(&cublasDgemm_v2) dgemm;
    GemmExFunction gemm_ex;
    decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
    decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
    GemmStridedBatchedExFunction gemm_strided_batched_ex;
};

// Opens libcublas.so.<the major version compiled against> on the first call:
// by name (the dynamic loader's search: LD_LIBRARY_PATH, the program's run
// path, which the Makefile sets to the toolkit's lib64, the system's
// library cache), then, failing that, in the toolkit's lib64 folder this
// program was built against (NORMCORE_CUDA_LIB_DIR; under AddressSanitizer,
// which intercepts dlopen, the run path is not searched). Throws nc::Error
// naming the file and the loader's reason when it cannot be opened, or the
// function it lacks.
const CublasLibrary& cublas_library();

}  // namespace cuda
}  // namespace nc

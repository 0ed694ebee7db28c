// The check of exercise 10: the GPU sum against a float64 sum on the CPU,
// for sizes from 1 to more than one pass of the grid, and its speed beside
// the backend's version 1 (one block). Without a GPU it says so and skips.
#include <string>

#include "exercises/10_sum_v2/sum_v2.h"
#include "exercises/exercise.h"
#include "tensor/backend.h"
#include "tensor/raw_ops.h"

using namespace nc;

int main() {
    return exercise::run("10 (sum, version 2)", [] {
        std::string why;
        if (!cuda_available(&why)) throw exercise::Skipped("no GPU here (" + why + ")");
        const Device cuda{DeviceType::CUDA, 0};
        Generator gen(10);
        for (int64_t n : {1, 255, 256, 257, 100000, 1 << 20, 38597376}) {
            Tensor x = raw::add(raw::randn({n}, gen), 0.25);
            Tensor x_gpu = raw::to_device(x, cuda);
            raw::sum(x_gpu).item();  // the upload has finished before your kernel reads x
            double want = raw::sum(raw::to_dtype(x, kFloat64)).item();
            double size = raw::sum(raw::abs(raw::to_dtype(x, kFloat64))).item();
            const float* on_gpu = static_cast<const float*>(x_gpu.raw_data());  // a device pointer
            double got = exercise::sum_v2(on_gpu, n);
            // Sums in double: within about n 2^-53 of sum |x| (a generous 1e-9 here).
            exercise::expect(std::fabs(got - want) <= 1e-9 * size,
                             "n = " + std::to_string(n) + ": got " + exercise::number(got) + ", the CPU's float64 sum is " +
                                 exercise::number(want));
            if (n == 38597376) {
                exercise::sum_v2(on_gpu, n);  // the first call pays for module loading
                double yours = exercise::best_seconds([&] { exercise::sum_v2(on_gpu, n); }, 5);
                setenv("NORMCORE_REDUCTION", "rows", 1);
                raw::sum(x_gpu).item();
                double v1 = exercise::best_seconds([&] { raw::sum(x_gpu).item(); }, 5);
                unsetenv("NORMCORE_REDUCTION");
                std::printf("38.6M floats: yours %.3f ms (with its own allocations), the backend's version 1 (one block) %.3f ms\n", yours * 1e3,
                            v1 * 1e3);
            }
        }
    });
}

// host_device.h — NC_HOST_DEVICE marks small math functions that both the
// CPU backend (g++) and the CUDA backend (nvcc, as __host__ __device__) use,
// so each formula is written once.
#pragma once

#ifdef __CUDACC__
#define NC_HOST_DEVICE __host__ __device__
#else
#define NC_HOST_DEVICE
#endif

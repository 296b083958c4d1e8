// Storage types of the delegate's kernels: float32 as it is, float16 as its binary16 bit
// pattern (the NVRTC of the pip wheel ships no cuda_fp16.h), both computed in float32.
// Each .cu that needs these says `#include "storage.cuh"`; sources.read_source splices this
// text in there (so NVRTC needs no include path) and g++ includes it through the host shim.

__device__ __forceinline__ float load_as_float(const float* p) { return *p; }
__device__ __forceinline__ void store_from_float(float* p, float v) { *p = v; }

__device__ __forceinline__ float load_as_float(const unsigned short* p) {
#ifdef CUDA_HOST_SHIM
    return cuda_host::half_bits_to_float(*p);
#else
    float value;
    asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(*p));
    return value;
#endif
}

__device__ __forceinline__ void store_from_float(unsigned short* p, float v) {
#ifdef CUDA_HOST_SHIM
    *p = cuda_host::float_to_half_bits(v);
#else
    unsigned short bits;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(v));  // round to nearest even
    *p = bits;
#endif
}

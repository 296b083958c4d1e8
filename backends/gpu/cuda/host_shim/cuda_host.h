// cuda_host.h: compile a CUDA kernel source (*.cu) with g++ (C++20) and run it on the CPU.
//
// Include this header, then the .cu file, then export each kernel:
//
//     #include "cuda_host.h"
//     #include "depthwise_conv2d.cu"
//     CUDA_HOST_EXPORT_KERNEL(depthwise_conv2d_f32)
//
// which defines, with C linkage (for ctypes):
//
//     int cuda_host_launch_<kernel>(const unsigned grid[3], const unsigned block[3], void** args);
//     int cuda_host_params_<kernel>(unsigned long long* sizes, int capacity);
//
// `args` is cuLaunchKernel's kernelParams: args[i] points at the value of parameter i.
// cuda_host_params_ writes sizeof of each parameter (up to `capacity`) and returns the
// parameter count, so that the caller can check its argument list. The launcher returns 0,
// or cudaErrorInvalidConfiguration (9) for a launch configuration a GPU would refuse.
//
// Two execution modes, chosen at compile time:
//
// * sequential (default): the launcher loops over the blocks of the grid and, in each
//   block, over its threads, one after the other on the calling thread; threadIdx,
//   blockIdx, blockDim and gridDim are thread_local globals set before each call. Correct
//   for kernels whose threads do not communicate. A kernel that uses __syncthreads() or
//   __shared__ does not compile in this mode (a static_assert says so).
//
// * cooperative (-DCUDA_HOST_COOPERATIVE): each launch starts one std::thread per thread of
//   a block; they run the blocks of the grid one block at a time, in lock-step at block
//   boundaries. __syncthreads() is a std::barrier (C++20) of the block's threads (a thread
//   that returns from the kernel drops out of it, as an exited GPU thread does);
//   __shared__ variables are function-local statics, which is per-block memory because
//   only one block runs at a time (launches of one library are serialized by a mutex).
//   Atomics are std::atomic_ref. Dynamic shared memory (extern __shared__ T x[]) is not
//   supported.
//
// Not emulated at all (a kernel using them does not compile): warp intrinsics
// (__shfl_*, __ballot_sync, ...), textures, cooperative groups, dynamic parallelism.
// Numerics differ from a GPU in two known ways: no flush-to-zero of subnormals (CuPy
// compiles with -ftz=true) and no fused multiply-add contraction (NVRTC's --fmad=true).

#pragma once

#include <math.h>

#include <atomic>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#define CUDA_HOST_SHIM 1

// ---- execution-space qualifiers ------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
// __restrict__ is a GNU keyword already.

// ---- built-in vector types and variables ---------------------------------------------------
struct uint3 {
    unsigned int x, y, z;
};

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

inline thread_local uint3 threadIdx = {0, 0, 0};
inline thread_local uint3 blockIdx = {0, 0, 0};
inline thread_local dim3 blockDim = {1, 1, 1};
inline thread_local dim3 gridDim = {1, 1, 1};
constexpr int warpSize = 32;

// ---- math: <cmath>'s float functions are the CUDA ones; the fast intrinsics are exact here --
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }

// CUDA's min/max are overloaded functions (not std's templates): min(int, unsigned) works.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

namespace cuda_host {

// ---- float16 storage (IEEE binary16 bit patterns) --------------------------------------------
#if defined(__FLT16_MANT_DIG__)
inline float half_bits_to_float(unsigned short bits) { return static_cast<float>(std::bit_cast<_Float16>(bits)); }
inline unsigned short float_to_half_bits(float value) {
    return std::bit_cast<unsigned short>(static_cast<_Float16>(value));  // round to nearest even
}
#else
inline float half_bits_to_float(unsigned short bits) {
    const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1fu;
    const std::uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal or zero
    return sign ? -magnitude : magnitude;
}
inline unsigned short float_to_half_bits(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x7f800000u)  // inf or NaN (keep NaN quiet and non-zero)
        return sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u | ((magnitude >> 13) & 0x3ffu) : 0u);
    if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
    if (magnitude < 0x38800000u) {  // below the smallest normal half: subnormal, round to even
        const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;  // * 2^24, exact
        return sign | static_cast<std::uint16_t>(std::nearbyint(scaled));
    }
    std::uint32_t half = ((magnitude - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
    const std::uint32_t rest = magnitude & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return sign | static_cast<std::uint16_t>(half);
}
#endif

// ---- launching ---------------------------------------------------------------------------------
constexpr int kSuccess = 0;
constexpr int kErrorInvalidConfiguration = 9;  // cudaErrorInvalidConfiguration

inline bool valid_configuration(dim3 grid, dim3 block) {
    const unsigned long long threads = 1ull * block.x * block.y * block.z;
    return grid.x >= 1 && grid.y >= 1 && grid.z >= 1 && grid.y <= 65535 && grid.z <= 65535 &&
           block.x >= 1 && block.y >= 1 && block.z >= 1 && block.x <= 1024 && block.y <= 1024 &&
           block.z <= 64 && threads <= 1024;
}

inline uint3 unflatten(unsigned long long flat, dim3 extent) {
    uint3 index;
    index.x = static_cast<unsigned int>(flat % extent.x);
    flat /= extent.x;
    index.y = static_cast<unsigned int>(flat % extent.y);
    index.z = static_cast<unsigned int>(flat / extent.y);
    return index;
}

// kernel(*(P0*)args[0], *(P1*)args[1], ...): cuLaunchKernel's convention.
template <typename... Params, std::size_t... I>
inline void call_with_args(void (*kernel)(Params...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_cv_t<Params>*>(args[I])...);
}

template <typename... Params>
inline int param_sizes(void (*)(Params...), unsigned long long* sizes, int capacity) {
    const unsigned long long each[] = {0ull, static_cast<unsigned long long>(sizeof(Params))...};
    const int count = static_cast<int>(sizeof...(Params));
    for (int i = 0; i < count && i < capacity; ++i) sizes[i] = each[i + 1];
    return count;
}

#ifndef CUDA_HOST_COOPERATIVE

template <typename... Params>
inline int launch(void (*kernel)(Params...), dim3 grid, dim3 block, void** args) {
    if (!valid_configuration(grid, block)) return kErrorInvalidConfiguration;
    gridDim = grid;
    blockDim = block;
    const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
    const unsigned long long threads = 1ull * block.x * block.y * block.z;
    for (unsigned long long b = 0; b < blocks; ++b) {
        blockIdx = unflatten(b, grid);
        for (unsigned long long t = 0; t < threads; ++t) {
            threadIdx = unflatten(t, block);
            call_with_args(kernel, args, std::index_sequence_for<Params...>{});
        }
    }
    return kSuccess;
}

}  // namespace cuda_host

#define __syncthreads()                                                                        \
    static_assert(false, "cuda_host.h: __syncthreads() needs the cooperative mode; build with " \
                         "-DCUDA_HOST_COOPERATIVE (host.py: cooperative=True)")
#define __shared__                                                                                   \
    static_assert(false, "cuda_host.h: __shared__ memory needs the cooperative mode; build with " \
                         "-DCUDA_HOST_COOPERATIVE (host.py: cooperative=True)");                    \
    static

#else  // CUDA_HOST_COOPERATIVE

namespace detail {
inline thread_local std::barrier<>* block_barrier = nullptr;

inline std::mutex& launch_mutex() {
    static std::mutex mutex;
    return mutex;
}
}  // namespace detail

template <typename... Params>
inline int launch(void (*kernel)(Params...), dim3 grid, dim3 block, void** args) {
    if (!valid_configuration(grid, block)) return kErrorInvalidConfiguration;
    std::lock_guard<std::mutex> serialize(detail::launch_mutex());  // statics are the shared memory
    const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
    const std::ptrdiff_t threads = static_cast<std::ptrdiff_t>(block.x) * block.y * block.z;

    // State of the block being run, replaced between blocks by the completion step of
    // `block_done` (which runs after every thread arrived and before any is released).
    unsigned long long current = 0;
    auto syncthreads = std::make_unique<std::barrier<>>(threads);
    auto next_block = [&]() noexcept {
        ++current;
        syncthreads = std::make_unique<std::barrier<>>(threads);
    };
    std::barrier<decltype(next_block)> block_done(threads, next_block);

    auto worker = [&](std::ptrdiff_t t) {
        gridDim = grid;
        blockDim = block;
        threadIdx = unflatten(static_cast<unsigned long long>(t), block);
        while (current < blocks) {
            blockIdx = unflatten(current, grid);
            detail::block_barrier = syncthreads.get();
            call_with_args(kernel, args, std::index_sequence_for<Params...>{});
            detail::block_barrier->arrive_and_drop();  // this thread has exited the kernel
            block_done.arrive_and_wait();
        }
        detail::block_barrier = nullptr;
    };
    {
        std::vector<std::jthread> workers;
        workers.reserve(static_cast<std::size_t>(threads));
        for (std::ptrdiff_t t = 0; t < threads; ++t) workers.emplace_back(worker, t);
    }  // jthreads join here
    return kSuccess;
}

}  // namespace cuda_host

inline void __syncthreads() {
    if (cuda_host::detail::block_barrier == nullptr) {
        std::fprintf(stderr, "cuda_host.h: __syncthreads() called outside a cooperative launch\n");
        std::abort();
    }
    cuda_host::detail::block_barrier->arrive_and_wait();
}
#define __shared__ static

#endif  // CUDA_HOST_COOPERATIVE

// ---- atomics and fences (correct in both modes) ----------------------------------------------
template <typename T>
inline T atomicAdd(T* address, T value) {
    return std::atomic_ref<T>(*address).fetch_add(value);
}
template <typename T>
inline T atomicSub(T* address, T value) {
    return std::atomic_ref<T>(*address).fetch_sub(value);
}
template <typename T>
inline T atomicExch(T* address, T value) {
    return std::atomic_ref<T>(*address).exchange(value);
}
template <typename T>
inline T atomicMax(T* address, T value) {
    std::atomic_ref<T> ref(*address);
    T old = ref.load();
    while (old < value && !ref.compare_exchange_weak(old, value)) {
    }
    return old;
}
template <typename T>
inline T atomicMin(T* address, T value) {
    std::atomic_ref<T> ref(*address);
    T old = ref.load();
    while (value < old && !ref.compare_exchange_weak(old, value)) {
    }
    return old;
}
template <typename T>
inline T atomicCAS(T* address, T compare, T value) {
    std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
    return compare;  // the old value, whether or not the exchange happened
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---- exporting a kernel -----------------------------------------------------------------------
#define CUDA_HOST_EXPORT_KERNEL(kernel)                                                              \
    extern "C" int cuda_host_launch_##kernel(const unsigned* grid, const unsigned* block, void** args) { \
        return cuda_host::launch(&kernel, dim3(grid[0], grid[1], grid[2]),                            \
                                 dim3(block[0], block[1], block[2]), args);                           \
    }                                                                                                 \
    extern "C" int cuda_host_params_##kernel(unsigned long long* sizes, int capacity) {             \
        return cuda_host::param_sizes(&kernel, sizes, capacity);                                      \
    }

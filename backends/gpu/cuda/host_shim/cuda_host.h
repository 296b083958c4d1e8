// cuda_host.h: compile a CUDA kernel source (*.cu) with g++ (C++20, -pthread) and run it on the CPU.
//
// Include this header, then the .cu file (rewritten by host.py's host_source(), see
// "Shared memory" below), then export each kernel:
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
// cudaErrorInvalidConfiguration (9) for a launch configuration a GPU would refuse, or
// cudaErrorInvalidValue (1) when CUDA_HOST_SEED or CUDA_HOST_WORKERS is malformed. The
// header also exports `unsigned long long cuda_host_last_seed(void)`: the block-order seed
// of the calling thread's last launch.
//
// The execution model copies what a GPU does and a plain loop over the threads would
// forgive, so that a kernel that is right only by luck also fails on the CPU:
//
// * Blocks run in a shuffled order. A GPU promises no order between the blocks of a launch,
//   so the launcher runs them in a pseudo-random permutation of the grid (a Fisher-Yates
//   shuffle driven by splitmix64, so that a seed gives the same order with any compiler).
//   The seed is $CUDA_HOST_SEED (a decimal unsigned integer), read at each launch, when it
//   is set: that replays an order. Otherwise it is the process's launch counter (0, 1, 2,
//   ...), so successive launches differ and a process that repeats its launches repeats its
//   orders. cuda_host_last_seed() (host.py: HostKernel.last_seed) says which seed a launch
//   used.
//
// * Launches run one at a time (a mutex), as kernels on one stream do.
//
// The counter, the mutex and the __shared__ registry below are one per process, not one per
// library: g++ emits inline variables and the statics of inline functions as STB_GNU_UNIQUE
// symbols, which the dynamic loader merges across libraries (even RTLD_LOCAL ones, as ctypes
// loads them) and which keep those libraries loaded until exit.
//
// Two execution modes, chosen at compile time:
//
// * sequential (default): several OS worker threads take blocks from the shuffled list and
//   run them concurrently; a worker runs the threads of its block one after the other.
//   Threads of *different* blocks therefore race as on a GPU: a non-atomic read-modify-write
//   of global memory (`out[0] += x[i]`) loses updates. The workers start together (they
//   spin until all are running) so that their blocks overlap. $CUDA_HOST_WORKERS (1 to 1024, read at each launch) sets
//   their number; the default is the hardware threads, clamped to 2..8; never more than the
//   blocks. CUDA_HOST_WORKERS=1 runs one block at a time, in the shuffled order. threadIdx,
//   blockIdx, blockDim and gridDim are thread_local globals set before each call. A kernel
//   that uses __syncthreads() or __shared__ does not compile in this mode (a static_assert
//   says so).
//
// * cooperative (-DCUDA_HOST_COOPERATIVE): each launch starts one std::thread per thread of
//   a block. They run the blocks of the grid one block at a time, in the shuffled order.
//   Within a block, the threads are grouped in warps of 32 (by linear thread index, x fastest,
//   as on a GPU), and the warps take turns: one warp runs, its 32 threads concurrently (they
//   race with each other as on a GPU), until each of its threads waits at __syncthreads() or
//   has returned; then the next warp runs. Once every warp has had its turn, the barrier opens
//   and the warps run again, one after the other. The warps' order is shuffled per block (from
//   the launch's seed). So a warp always runs as far as it can before any other warp of its
//   block sees its writes or writes over what it reads: whatever needs a __syncthreads() that
//   is missing (a warp reading a tile another warp has not staged yet, or a warp staging the
//   next tile over one that the others have not read yet) reads the wrong values, every time,
//   not only under an unlucky interleaving. A GPU may also interleave warps, which hides
//   nothing more. __syncthreads() is a barrier of the block's threads that have not returned
//   (a thread that returns from the kernel drops out of it, as an exited GPU thread does);
//   __syncwarp() a barrier of the warp's threads that have not returned (full mask only).
//   A __syncwarp() that some of its warp's threads never reach (they wait at __syncthreads())
//   deadlocks, as it may on a GPU. Blocks never overlap here (their __shared__ memory is one
//   static copy), so races *between* blocks show only in the sequential mode.
//   CUDA_HOST_WORKERS is checked but not used.
//
// Shared memory (cooperative mode) is poisoned at the start of every block: all its bytes
// are 0xFF (a float reads NaN, an int -1). On a GPU a block's shared memory starts with
// whatever was there, so a kernel that reads __shared__ before writing it, or that expects
// a value to survive from another block or launch, must read garbage here too, not zeros
// or the previous block's values. How: a __shared__ variable is a static variable followed
// by CUDA_HOST_SHARED_REGISTER(name), a static object whose constructor runs when control
// first reaches the declaration: it poisons the variable (for the block that got there
// first) and adds its address and size to a registry, which the launcher poisons before
// each block. The registration must name the variable, which a macro in front of the
// declaration cannot do (and g++ before 14 drops section attributes on statics of function
// templates, so a linker section cannot collect them either). host.py's host_source()
// therefore rewrites each declaration, on the same line (compiler messages keep their line
// numbers):
//
//     __shared__ float tile[16][17];   ->   CUDA_HOST_SHARED float tile[16][17]; CUDA_HOST_SHARED_REGISTER(tile)
//
// A __shared__ that host_source() did not rewrite (one written inside a #define) does not
// compile (a static_assert says so); neither does dynamic shared memory (extern __shared__).
//
// Atomics are real atomics (std::atomic_ref) in both modes; __threadfence() is a full fence.
//
// Not emulated at all (a kernel using them does not compile): warp intrinsics other than
// __syncwarp() (__shfl_*, __ballot_sync, ...), textures, cooperative groups, dynamic parallelism.
// Numerics differ from a GPU in two known ways: no flush-to-zero of subnormals (CuPy
// compiles with -ftz=true) and no fused multiply-add contraction (NVRTC's --fmad=true).

#pragma once

#include <math.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <semaphore>
#include <numeric>
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
#define __align__(n) __attribute__((aligned(n)))
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
constexpr int kErrorInvalidValue = 1;          // cudaErrorInvalidValue: a malformed CUDA_HOST_* variable
constexpr int kErrorInvalidConfiguration = 9;  // cudaErrorInvalidConfiguration
constexpr unsigned kMaxWorkers = 1024;
constexpr unsigned char kSharedPoison = 0xFF;  // every byte of __shared__ memory at block start

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

namespace detail {

inline std::mutex& launch_mutex() {
    static std::mutex mutex;
    return mutex;
}

inline std::atomic<unsigned long long> launch_count{0};  // the seeds of launches without CUDA_HOST_SEED
inline thread_local unsigned long long last_seed = 0;   // read back by cuda_host_last_seed()

// An environment variable holding a decimal unsigned integer. False when it is set (and not
// empty) but is not one: a typo must not silently fall back to the default.
inline bool read_unsigned_env(const char* name, bool& present, unsigned long long& value) {
    const char* text = std::getenv(name);
    present = text != nullptr && *text != '\0';
    if (!present) return true;
    if (*text < '0' || *text > '9') return false;  // strtoull would accept " 1" and "-1"
    errno = 0;
    char* end = nullptr;
    value = std::strtoull(text, &end, 10);
    return errno == 0 && *end == '\0';
}

struct LaunchSettings {
    unsigned long long seed;
    unsigned workers;
};

inline int read_settings(LaunchSettings& settings) {
    bool present = false;
    unsigned long long value = 0;
    if (!read_unsigned_env("CUDA_HOST_SEED", present, value)) return kErrorInvalidValue;
    settings.seed = present ? value : launch_count.fetch_add(1);
    if (!read_unsigned_env("CUDA_HOST_WORKERS", present, value)) return kErrorInvalidValue;
    if (present && (value < 1 || value > kMaxWorkers)) return kErrorInvalidValue;
    // At least 2 even on one core: the OS then interleaves the workers, and races still show.
    settings.workers = present ? static_cast<unsigned>(value) : std::clamp(std::thread::hardware_concurrency(), 2u, 8u);
    last_seed = settings.seed;
    return kSuccess;
}

// splitmix64 (Steele, Lea and Flood): fixed by this header, unlike the std:: distributions,
// so that a seed names the same block order with every compiler and standard library.
inline std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// The order in which a launch runs its blocks: a Fisher-Yates shuffle of the flat block
// indices 0 .. blocks-1 (modulo bias is irrelevant here).
inline std::vector<unsigned long long> block_order(unsigned long long blocks, unsigned long long seed) {
    std::vector<unsigned long long> order(blocks);
    std::iota(order.begin(), order.end(), 0ull);
    std::uint64_t state = seed;
    for (unsigned long long i = blocks; i > 1; --i) std::swap(order[i - 1], order[splitmix64(state) % i]);
    return order;
}

}  // namespace detail

#ifndef CUDA_HOST_COOPERATIVE

template <typename... Params>
inline int launch(void (*kernel)(Params...), dim3 grid, dim3 block, void** args) {
    if (!valid_configuration(grid, block)) return kErrorInvalidConfiguration;
    detail::LaunchSettings settings;
    if (const int status = detail::read_settings(settings); status != kSuccess) return status;
    std::lock_guard<std::mutex> serialize(detail::launch_mutex());
    const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
    const unsigned long long threads = 1ull * block.x * block.y * block.z;
    const std::vector<unsigned long long> order = detail::block_order(blocks, settings.seed);
    const unsigned workers = static_cast<unsigned>(std::min<unsigned long long>(settings.workers, blocks));

    std::atomic<unsigned long long> next{0};  // position in `order` of the next block to take
    std::atomic<unsigned> ready{0};
    auto worker = [&]() {
        gridDim = grid;
        blockDim = block;
        // Begin together, so that the blocks of different workers overlap: a launch's work is
        // often shorter than waking a thread blocked in a futex (a latch), so the first worker
        // would finish alone. Spinning keeps the workers on their cores; yielding now and then
        // lets a worker that has no core yet get one.
        ready.fetch_add(1);
        for (unsigned spin = 1; ready.load() < workers; ++spin)
            if (spin % 4096 == 0) std::this_thread::yield();
        for (unsigned long long i = next.fetch_add(1); i < blocks; i = next.fetch_add(1)) {
            blockIdx = unflatten(order[i], grid);
            for (unsigned long long t = 0; t < threads; ++t) {
                threadIdx = unflatten(t, block);
                call_with_args(kernel, args, std::index_sequence_for<Params...>{});
            }
        }
    };
    {
        std::vector<std::jthread> pool;
        pool.reserve(workers);
        for (unsigned w = 0; w < workers; ++w) pool.emplace_back(worker);
    }  // jthreads join here: the kernel's writes are visible to the caller
    return kSuccess;
}

}  // namespace cuda_host

#define __syncthreads()                                                                        \
    static_assert(false, "cuda_host.h: __syncthreads() needs the cooperative mode; build with " \
                         "-DCUDA_HOST_COOPERATIVE (host.py: cooperative=True)")
#define __syncwarp(...)                                                                      \
    static_assert(false, "cuda_host.h: __syncwarp() needs the cooperative mode; build with " \
                         "-DCUDA_HOST_COOPERATIVE (host.py: cooperative=True)")
#define CUDA_HOST_SHARED                                                                             \
    static_assert(false, "cuda_host.h: __shared__ memory needs the cooperative mode; build with " \
                         "-DCUDA_HOST_COOPERATIVE (host.py: cooperative=True)");                    \
    static
#define CUDA_HOST_SHARED_REGISTER(name)
#define __shared__ CUDA_HOST_SHARED

#else  // CUDA_HOST_COOPERATIVE

namespace detail {

// The __shared__ variables met so far (address, size), poisoned before each block: of every
// host library of the process (see the top of this file), which is harmless, as launches
// are serialized and those libraries are never unloaded.
struct SharedRegistry {
    std::mutex mutex;
    std::vector<std::pair<unsigned char*, std::size_t>> ranges;
};

inline SharedRegistry& shared_registry() {
    static SharedRegistry registry;  // a function static: ready before any namespace-scope __shared__
    return registry;
}

// Declared (by CUDA_HOST_SHARED_REGISTER) right after each __shared__ variable, as a static:
// constructed once, when the first thread gets there (the other threads of the block wait
// for the construction: a static's initialization is thread-safe, and it comes before any
// access to the variable).
struct SharedRange {
    SharedRange(const volatile void* address, std::size_t size) {
        unsigned char* begin = static_cast<unsigned char*>(const_cast<void*>(address));
        std::memset(begin, kSharedPoison, size);  // the block that got here first sees poison too
        SharedRegistry& registry = shared_registry();
        std::lock_guard<std::mutex> lock(registry.mutex);
        registry.ranges.emplace_back(begin, size);
    }
};

// Only while no thread of the launch runs the kernel (before the first block, and in the
// completion step of the block barrier).
inline void poison_shared_memory() {
    SharedRegistry& registry = shared_registry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    for (const auto& [begin, size] : registry.ranges) std::memset(begin, kSharedPoison, size);
}
}  // namespace detail

namespace detail {

constexpr unsigned kWarpSize = 32;

// The turns of one launch's warps (see the top of this file). Every field is guarded by
// `mutex_`; a thread waits for its turn on its own semaphore, outside the mutex (one semaphore
// per thread, so that a thread that runs ahead to the next barrier cannot take a sibling's turn).
class WarpSchedule {
public:
    WarpSchedule(unsigned long long blocks, unsigned threads, unsigned long long seed)
        : blocks_(blocks), threads_(threads), seed_(seed), warps_((threads + kWarpSize - 1) / kWarpSize),
          block_order_(block_order(blocks, seed)), size_(warps_), exited_(warps_), parked_(warps_),
          thread_parked_(threads) {
        for (unsigned w = 0; w < warps_; ++w) size_[w] = std::min(kWarpSize, threads - w * kWarpSize);
        for (unsigned t = 0; t < threads; ++t) go_.push_back(std::make_unique<std::binary_semaphore>(0));
        std::lock_guard<std::mutex> lock(mutex_);
        begin_block();
    }

    // Thread t, before each block: false when the launch is over.
    bool wait_for_block(unsigned t) {
        go_[t]->acquire();
        std::lock_guard<std::mutex> lock(mutex_);
        return current_ < blocks_;
    }
    unsigned long long block() {  // the flat index of the block being run
        std::lock_guard<std::mutex> lock(mutex_);
        return block_order_[current_];
    }
    std::barrier<>& warp_barrier(unsigned t) {
        std::lock_guard<std::mutex> lock(mutex_);
        return *warp_barriers_[t / kWarpSize];
    }

    // __syncthreads() by thread t.
    void syncthreads(unsigned t) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            const unsigned w = t / kWarpSize;
            thread_parked_[t] = true;
            ++parked_[w];
            if (parked_[w] + exited_[w] == size_[w]) end_turn();
        }
        go_[t]->acquire();
    }

    // Thread t returned from the kernel.
    void thread_exited(unsigned t) {
        std::lock_guard<std::mutex> lock(mutex_);
        const unsigned w = t / kWarpSize;
        ++exited_[w];
        warp_barriers_[w]->arrive_and_drop();  // __syncwarp() no longer waits for it
        if (parked_[w] + exited_[w] == size_[w]) end_turn();
    }

private:
    // Under the mutex, with no thread running the kernel: every thread waits on its semaphore.
    void begin_block() {
        if (current_ >= blocks_) {  // the launch is over: let every thread out
            for (unsigned t = 0; t < threads_; ++t) go_[t]->release();
            return;
        }
        std::fill(exited_.begin(), exited_.end(), 0u);
        std::fill(parked_.begin(), parked_.end(), 0u);
        warp_barriers_.clear();
        for (unsigned w = 0; w < warps_; ++w) warp_barriers_.push_back(std::make_unique<std::barrier<>>(size_[w]));
        // The warps' turns in a shuffled order of their own for each block.
        warp_order_ = block_order(warps_, seed_ ^ (0x5851f42d4c957f2dull * (current_ + 1)));
        poison_shared_memory();
        first_phase_ = true;
        position_ = 0;
        start_warp(static_cast<unsigned>(warp_order_[0]));
    }

    // Under the mutex: warp w's turn, for its threads that wait (all of them, before the first
    // barrier; afterwards those parked at the barrier).
    void start_warp(unsigned w) {
        for (unsigned t = w * kWarpSize; t < w * kWarpSize + size_[w]; ++t) {
            if (first_phase_ || thread_parked_[t]) {
                thread_parked_[t] = false;
                go_[t]->release();
            }
        }
        parked_[w] = 0;
    }

    // Under the mutex: the warp whose turn it was has each thread parked or exited.
    void end_turn() {
        for (++position_; position_ < warps_; ++position_) {
            const unsigned w = static_cast<unsigned>(warp_order_[position_]);
            if (first_phase_ || parked_[w] > 0) {  // a warp with threads left
                start_warp(w);
                return;
            }
        }
        // Every warp had its turn: the barrier opens, or the block is done.
        first_phase_ = false;
        for (position_ = 0; position_ < warps_; ++position_) {
            const unsigned w = static_cast<unsigned>(warp_order_[position_]);
            if (parked_[w] > 0) {
                start_warp(w);
                return;
            }
        }
        ++current_;
        begin_block();
    }

    std::mutex mutex_;
    const unsigned long long blocks_;
    const unsigned threads_;
    const unsigned long long seed_;
    const unsigned warps_;
    const std::vector<unsigned long long> block_order_;
    std::vector<unsigned> size_, exited_, parked_;  // per warp
    std::vector<bool> thread_parked_;              // per thread: waiting at __syncthreads()
    std::vector<std::unique_ptr<std::binary_semaphore>> go_;  // per thread: its turn
    std::vector<std::unique_ptr<std::barrier<>>> warp_barriers_;
    std::vector<unsigned long long> warp_order_;
    unsigned long long current_ = 0;  // position in block_order_
    unsigned position_ = 0;           // position in warp_order_ of the warp whose turn it is
    bool first_phase_ = true;         // before the block's first __syncthreads() opened
};

inline thread_local WarpSchedule* schedule = nullptr;  // of the calling thread's launch
inline thread_local unsigned thread_index = 0;          // the calling thread's linear index in its block
}  // namespace detail

template <typename... Params>
inline int launch(void (*kernel)(Params...), dim3 grid, dim3 block, void** args) {
    if (!valid_configuration(grid, block)) return kErrorInvalidConfiguration;
    detail::LaunchSettings settings;
    if (const int status = detail::read_settings(settings); status != kSuccess) return status;
    std::lock_guard<std::mutex> serialize(detail::launch_mutex());  // statics are the shared memory
    const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
    const unsigned threads = block.x * block.y * block.z;
    detail::WarpSchedule schedule(blocks, threads, settings.seed);  // poisons shared memory, first warp's turn

    auto worker = [&](unsigned t) {
        gridDim = grid;
        blockDim = block;
        threadIdx = unflatten(t, block);
        detail::schedule = &schedule;
        detail::thread_index = t;
        while (schedule.wait_for_block(t)) {
            blockIdx = unflatten(schedule.block(), grid);
            call_with_args(kernel, args, std::index_sequence_for<Params...>{});
            schedule.thread_exited(t);
        }
        detail::schedule = nullptr;
    };
    {
        std::vector<std::jthread> workers;
        workers.reserve(threads);
        for (unsigned t = 0; t < threads; ++t) workers.emplace_back(worker, t);
    }  // jthreads join here
    return kSuccess;
}

}  // namespace cuda_host

inline void __syncthreads() {
    if (cuda_host::detail::schedule == nullptr) {
        std::fprintf(stderr, "cuda_host.h: __syncthreads() called outside a cooperative launch\n");
        std::abort();
    }
    cuda_host::detail::schedule->syncthreads(cuda_host::detail::thread_index);
}

// The full-mask __syncwarp() only: a barrier of the calling warp's threads that have not returned.
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    if (cuda_host::detail::schedule == nullptr || mask != 0xffffffffu) {
        std::fprintf(stderr, "cuda_host.h: __syncwarp() outside a cooperative launch, or with a partial mask\n");
        std::abort();
    }
    cuda_host::detail::schedule->warp_barrier(cuda_host::detail::thread_index).arrive_and_wait();
}
#define CUDA_HOST_SHARED static
#define CUDA_HOST_SHARED_REGISTER(name) \
    static const cuda_host::detail::SharedRange cuda_host_shared_##name(__builtin_addressof(name), sizeof(name));
#define __shared__                                                                                   \
    static_assert(false, "cuda_host.h: this __shared__ was not rewritten by host.py's host_source() " \
                         "(is it inside a #define?), so it would not be poisoned at block start");   \
    static

#endif  // CUDA_HOST_COOPERATIVE

extern "C" inline __attribute__((used)) unsigned long long cuda_host_last_seed(void) {
    return cuda_host::detail::last_seed;
}

// ---- atomics and fences (real atomics in both modes: blocks run concurrently) ---------------
// The value's type comes from the pointer (std::type_identity_t), as with CUDA's overloads:
// atomicAdd(unsigned_pointer, 1) compiles.
template <typename T>
inline T atomicAdd(T* address, std::type_identity_t<T> value) {
    return std::atomic_ref<T>(*address).fetch_add(value);
}
template <typename T>
inline T atomicSub(T* address, std::type_identity_t<T> value) {
    return std::atomic_ref<T>(*address).fetch_sub(value);
}
template <typename T>
inline T atomicExch(T* address, std::type_identity_t<T> value) {
    return std::atomic_ref<T>(*address).exchange(value);
}
template <typename T>
inline T atomicMax(T* address, std::type_identity_t<T> value) {
    std::atomic_ref<T> ref(*address);
    T old = ref.load();
    while (old < value && !ref.compare_exchange_weak(old, value)) {
    }
    return old;
}
template <typename T>
inline T atomicMin(T* address, std::type_identity_t<T> value) {
    std::atomic_ref<T> ref(*address);
    T old = ref.load();
    while (value < old && !ref.compare_exchange_weak(old, value)) {
    }
    return old;
}
template <typename T>
inline T atomicAnd(T* address, std::type_identity_t<T> value) {
    return std::atomic_ref<T>(*address).fetch_and(value);
}
template <typename T>
inline T atomicOr(T* address, std::type_identity_t<T> value) {
    return std::atomic_ref<T>(*address).fetch_or(value);
}
template <typename T>
inline T atomicXor(T* address, std::type_identity_t<T> value) {
    return std::atomic_ref<T>(*address).fetch_xor(value);
}
template <typename T>
inline T atomicCAS(T* address, std::type_identity_t<T> compare, std::type_identity_t<T> value) {
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

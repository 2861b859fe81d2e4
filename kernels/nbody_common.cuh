// Shared helpers of the GPU engine's kernels: warp scans and a single-pass scan across blocks
// (decoupled look-back), used where an array's length lives only on the device.
#include <stdint.h>

#define FULL_MASK 0xffffffffu
// MAX_LEVEL, the status words ST_*, the FLAG_* bits, STACK_CAP and the sort and scan tile
// sizes come from galaxyview/engines/gpu/constants.py as nvcc -D flags (defined once).
#if !defined(MAX_LEVEL) || !defined(ST_FLAGS) || !defined(FLAG_NONFINITE) || !defined(STACK_CAP) \
    || !defined(SORT_TILE) || !defined(SCAN_TILE)
#error "compile the kernels through galaxyview (engines/gpu/constants.py passes the constants)"
#endif
static_assert(SCAN_THREADS == 256 && RADIX == SORT_THREADS, "block_excl_scan256, radix_hist");

__device__ __forceinline__ int warp_incl_scan(int v, int lane)
{
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        int t = __shfl_up_sync(FULL_MASK, v, o);
        if (lane >= o) v += t;
    }
    return v;
}

__device__ __forceinline__ unsigned warp_sum(unsigned v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

// Sums of K doubles a[] over a block of at most 256 threads (s: K x 8 shared scratch); thread
// k < K returns the block's sum of a[k], the others 0. Warps in order: a deterministic sum.
template <int K>
__device__ __forceinline__ double block_sum_f64(double* a, double (*s)[8])
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < K; k++) {
        for (int o = 16; o > 0; o >>= 1) a[k] += __shfl_xor_sync(FULL_MASK, a[k], o);
        if (lane == 0) s[k][warp] = a[k];
    }
    __syncthreads();
    double v = 0;
    if (threadIdx.x < K)
        for (int w = 0; w < (int)(blockDim.x / 32); w++) v += s[threadIdx.x][w];
    return v;
}

// Exclusive scan of one int per thread over a block of 256 threads; returns the exclusive
// prefix and writes the block total to *total (all threads). scratch: 9 ints of shared memory.
__device__ __forceinline__ int block_excl_scan256(int v, int* scratch, int* total)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int incl = warp_incl_scan(v, lane);
    if (lane == 31) scratch[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        int w = lane < 8 ? scratch[lane] : 0;
        int wi = warp_incl_scan(w, lane);
        if (lane < 8) scratch[lane] = wi - w;
        if (lane == 7) scratch[8] = wi;
    }
    __syncthreads();
    int excl = incl - v + scratch[warp];
    *total = scratch[8];
    __syncthreads();
    return excl;
}

// ---- decoupled look-back (Merrill & Garland) --------------------------------------------
// Each tile publishes a 64-bit descriptor: status (2 bits) | epoch (30 bits) | value (32 bits).
// status 1: the tile's own aggregate, 2: the inclusive prefix. A fresh epoch per launch means
// the descriptors never need clearing.
__device__ __forceinline__ unsigned long long lb_pack(unsigned status, unsigned epoch, unsigned v)
{
    return ((unsigned long long)((status << 30) | (epoch & 0x3fffffffu)) << 32) | v;
}

// Exclusive prefix of tile `tile` given its aggregate; call with the whole block.
__device__ unsigned lookback_prefix(unsigned long long* desc, int tile, unsigned aggregate,
                                    unsigned epoch, unsigned* s_prefix)
{
    if (threadIdx.x < 32) {
        const int lane = threadIdx.x;
        if (tile == 0) {
            if (lane == 0) {
                atomicExch(&desc[0], lb_pack(2, epoch, aggregate));
                *s_prefix = 0;
            }
        } else {
            if (lane == 0) atomicExch(&desc[tile], lb_pack(1, epoch, aggregate));
            const unsigned want_a = (1u << 30) | (epoch & 0x3fffffffu);
            const unsigned want_p = (2u << 30) | (epoch & 0x3fffffffu);
            unsigned excl = 0;
            int base = tile - 1;
            while (true) {
                int idx = base - lane;
                unsigned long long d = idx >= 0
                    ? *(volatile unsigned long long*)&desc[idx] : lb_pack(2, epoch, 0);
                unsigned hi = (unsigned)(d >> 32);
                bool ready = hi == want_a || hi == want_p;
                if (__any_sync(FULL_MASK, !ready)) continue;  // a predecessor has not published
                unsigned done = __ballot_sync(FULL_MASK, hi == want_p);
                int stop = done ? __ffs(done) - 1 : 31;
                unsigned v = lane <= stop ? (unsigned)d : 0u;
                excl += warp_sum(v);
                if (done) break;
                base -= 32;
            }
            if (lane == 0) {
                atomicExch(&desc[tile], lb_pack(2, epoch, excl + aggregate));
                *s_prefix = excl;
            }
        }
    }
    __syncthreads();
    unsigned p = *s_prefix;
    __syncthreads();
    return p;
}

// Next tile for a persistent block (tiles are taken in order, so look-back cannot deadlock).
__device__ __forceinline__ int next_tile(unsigned long long* counter, int* s_tile)
{
    if (threadIdx.x == 0) *s_tile = (int)atomicAdd(counter, 1ull);
    __syncthreads();
    int t = *s_tile;
    __syncthreads();
    return t;
}

// keys_sort phase: bounding cube, 63-bit Morton keys, LSD radix sort (8 bits a pass, CUB's
// block-level sort inside each tile), reorder of the particle arrays.
#include <cub/block/block_radix_sort.cuh>

// frame: lo.x, lo.y, lo.z, L, scale (float32, the shared layout's bounding cube)
#define BOX_THREADS 256

extern "C" __global__ void __launch_bounds__(BOX_THREADS)
bbox_partial(const float4* __restrict__ pos, int n, float* __restrict__ partial,
             unsigned long long* status)
{
    float mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    bool bad = false;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 p = pos[i];
        bad |= !isfinite(p.x + p.y + p.z);
        mn[0] = fminf(mn[0], p.x); mn[1] = fminf(mn[1], p.y); mn[2] = fminf(mn[2], p.z);
        mx[0] = fmaxf(mx[0], p.x); mx[1] = fmaxf(mx[1], p.y); mx[2] = fmaxf(mx[2], p.z);
    }
    if (__syncthreads_or(bad) && threadIdx.x == 0)
        atomicOr(&status[ST_FLAGS], (unsigned long long)FLAG_NONFINITE);
    __shared__ float s[6][BOX_THREADS / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int a = 0; a < 3; a++) {
        for (int o = 16; o > 0; o >>= 1) {
            mn[a] = fminf(mn[a], __shfl_xor_sync(FULL_MASK, mn[a], o));
            mx[a] = fmaxf(mx[a], __shfl_xor_sync(FULL_MASK, mx[a], o));
        }
        if (lane == 0) { s[a][warp] = mn[a]; s[3 + a][warp] = mx[a]; }
    }
    __syncthreads();
    if (threadIdx.x < 6) {
        float v = s[threadIdx.x][0];
        for (int w = 1; w < BOX_THREADS / 32; w++)
            v = threadIdx.x < 3 ? fminf(v, s[threadIdx.x][w]) : fmaxf(v, s[threadIdx.x][w]);
        partial[blockIdx.x * 6 + threadIdx.x] = v;
    }
}

// one warp: each lane the min and max of a stride of the partials, then the warp's (min and
// max in any order: the same frame as one thread's sweep, which took 50 us for 528 partials)
extern "C" __global__ void bbox_final(const float* __restrict__ partial, int nblocks,
                                      float* __restrict__ frame)
{
    const int lane = threadIdx.x;
    if (lane >= 32) return;
    float mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int b = lane; b < nblocks; b += 32)
        for (int a = 0; a < 3; a++) {
            mn[a] = fminf(mn[a], partial[b * 6 + a]);
            mx[a] = fmaxf(mx[a], partial[b * 6 + 3 + a]);
        }
    for (int a = 0; a < 3; a++)
        for (int o = 16; o > 0; o >>= 1) {
            mn[a] = fminf(mn[a], __shfl_xor_sync(FULL_MASK, mn[a], o));
            mx[a] = fmaxf(mx[a], __shfl_xor_sync(FULL_MASK, mx[a], o));
        }
    if (lane != 0) return;
    float ext = fmaxf(fmaxf(__fsub_rn(mx[0], mn[0]), __fsub_rn(mx[1], mn[1])),
                      __fsub_rn(mx[2], mn[2]));
    float L = ext > 0.f ? __fmul_rn(ext, 1.0f + 1e-5f) : 1.0f;
    frame[0] = mn[0]; frame[1] = mn[1]; frame[2] = mn[2];
    frame[3] = L;
    frame[4] = __fdiv_rn(2097152.0f, L);
}

__device__ __forceinline__ unsigned long long spread3(unsigned long long v)
{
    v &= 0x1fffffull;
    v = (v | (v << 32)) & 0x1f00000000ffffull;
    v = (v | (v << 16)) & 0x1f0000ff0000ffull;
    v = (v | (v << 8)) & 0x100f00f00f00f00full;
    v = (v | (v << 4)) & 0x10c30c30c30c30c3ull;
    v = (v | (v << 2)) & 0x1249249249249249ull;
    return v;
}

__device__ __forceinline__ unsigned grid_coord(float x, float lo, float scale)
{
    float c = floorf(__fmul_rn(__fsub_rn(x, lo), scale));  // no FMA: matches the CPU oracle
    c = fminf(fmaxf(c, 0.0f), 2097151.0f);
    return (unsigned)c;
}

extern "C" __global__ void make_keys(const float4* __restrict__ pos, int n,
                                     const float* __restrict__ frame,
                                     unsigned long long* __restrict__ keys,
                                     unsigned* __restrict__ vals)
{
    const float lx = frame[0], ly = frame[1], lz = frame[2], scale = frame[4];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 p = pos[i];
        keys[i] = (spread3(grid_coord(p.x, lx, scale)) << 2)
                | (spread3(grid_coord(p.y, ly, scale)) << 1) | spread3(grid_coord(p.z, lz, scale));
        vals[i] = i;
    }
}

// ---- radix sort ---------------------------------------------------------------------------
// counts[d * ntiles + tile] = occurrences of digit d in the tile
extern "C" __global__ void __launch_bounds__(SORT_THREADS)
radix_hist(const unsigned long long* __restrict__ keys, int n, int shift,
           unsigned* __restrict__ counts, int ntiles)
{
    __shared__ unsigned h[RADIX];
    h[threadIdx.x] = 0;
    __syncthreads();
    const int base = blockIdx.x * SORT_TILE;
    for (int k = 0; k < SORT_ITEMS; k++) {
        int i = base + k * SORT_THREADS + threadIdx.x;
        if (i < n) atomicAdd(&h[(unsigned)(keys[i] >> shift) & 0xffu], 1u);
    }
    __syncthreads();
    counts[threadIdx.x * ntiles + blockIdx.x] = h[threadIdx.x];
}

// Exclusive scan of `n` uint32 (single pass, look-back): out may alias in.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
scan_excl(const unsigned* in, unsigned* out, int n, unsigned long long* desc,
          unsigned long long* counter, unsigned epoch)
{
    __shared__ int scratch[9];
    __shared__ unsigned s_prefix;
    __shared__ int s_tile;
    const int per_tile = SCAN_TILE;
    const int ntiles = (n + per_tile - 1) / per_tile;
    for (int tile = next_tile(counter, &s_tile); tile < ntiles; tile = next_tile(counter, &s_tile)) {
        const int base = tile * per_tile + threadIdx.x * SCAN_ITEMS;
        unsigned v[SCAN_ITEMS];
        int sum = 0;
#pragma unroll
        for (int k = 0; k < SCAN_ITEMS; k++) {
            v[k] = base + k < n ? in[base + k] : 0u;
            sum += v[k];
        }
        int total;
        int excl = block_excl_scan256(sum, scratch, &total);
        unsigned prefix = lookback_prefix(desc, tile, (unsigned)total, epoch, &s_prefix);
        unsigned run = prefix + excl;
#pragma unroll
        for (int k = 0; k < SCAN_ITEMS; k++) {
            if (base + k < n) out[base + k] = run;
            run += v[k];
        }
    }
}

typedef cub::BlockRadixSort<unsigned long long, SORT_THREADS, SORT_ITEMS, unsigned> BlockSort;

// Stable scatter of one pass: the tile is sorted by the digit inside the block, then each item
// goes to offsets[digit][tile] + (its rank among the tile's items of that digit).
extern "C" __global__ void __launch_bounds__(SORT_THREADS)
radix_scatter(const unsigned long long* __restrict__ keys_in, const unsigned* __restrict__ vals_in,
              unsigned long long* __restrict__ keys_out, unsigned* __restrict__ vals_out,
              int n, int shift, const unsigned* __restrict__ counts,
              const unsigned* __restrict__ offsets, int ntiles)
{
    __shared__ typename BlockSort::TempStorage temp;
    __shared__ int s_base[RADIX];
    __shared__ int scratch[9];
    const int tile = blockIdx.x, base = tile * SORT_TILE;
    unsigned long long k[SORT_ITEMS];
    unsigned v[SORT_ITEMS];
    const int first = base + threadIdx.x * SORT_ITEMS;  // blocked: keeps the input order
#pragma unroll
    for (int j = 0; j < SORT_ITEMS; j++) {
        bool ok = first + j < n;
        k[j] = ok ? keys_in[first + j] : ~0ull;
        v[j] = ok ? vals_in[first + j] : 0u;
    }
    {   // start of each digit inside the sorted tile, and its place in the output
        const int d = threadIdx.x;
        int c = (int)counts[d * ntiles + tile], total;
        int start = block_excl_scan256(c, scratch, &total);
        s_base[d] = (int)offsets[d * ntiles + tile] - start;
    }
    __syncthreads();
    const int end_bit = shift + 8 > 64 ? 64 : shift + 8;
    BlockSort(temp).SortBlockedToStriped(k, v, shift, end_bit);
    const int valid = min(SORT_TILE, n - base);
#pragma unroll
    for (int j = 0; j < SORT_ITEMS; j++) {
        int r = j * SORT_THREADS + threadIdx.x;
        if (r < valid) {
            int dst = s_base[(unsigned)(k[j] >> shift) & 0xffu] + r;
            keys_out[dst] = k[j];
            vals_out[dst] = v[j];
        }
    }
}

// New particle order: out[i] = in[perm[i]] for positions, velocities and original indices.
extern "C" __global__ void reorder(const unsigned* __restrict__ perm, int n,
                                   const float4* __restrict__ pos_in, const float4* __restrict__ vel_in,
                                   const unsigned* __restrict__ id_in, float4* __restrict__ pos_out,
                                   float4* __restrict__ vel_out, unsigned* __restrict__ id_out)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        unsigned j = perm[i];
        pos_out[i] = pos_in[j];
        vel_out[i] = vel_in[j];
        id_out[i] = id_in[j];
    }
}

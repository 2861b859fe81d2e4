// The local density of a GPU rank's particles (engines/parallel/density_device.py): the set is
// the rank's particles in its stretch of the Peano-Hilbert curve and the strays that came
// (keys from domain_flags, in the decomposition's cube), sorted by key; a particle's density
// is the mass of its smallest cell with >= DENSITY_N_MIN particles over the cell's volume
// (model/density.py key_density), with the other ranks' share of the set's end cells (`ends`).
// Appended after parallel_domain.cu.

#define DENS_W (DENSITY_N_MIN - 1)  // a window of DENSITY_N_MIN sorted particles: j .. j + W
#define DENS_LEVELS (DENSITY_MAX_LEVEL + 1)

// The number of levels whose cells hold both keys (at most DENSITY_MAX_LEVEL); 63-bit keys.
__device__ __forceinline__ int dens_shared(unsigned long long a, unsigned long long b)
{
    const unsigned long long x = a ^ b;
    return x ? min((__clzll((long long)x) - 1) / 3, DENSITY_MAX_LEVEL) : DENSITY_MAX_LEVEL;
}

__device__ __forceinline__ int dens_shift(int level) { return 3 * (MAX_LEVEL - level); }

// The last sorted position of the cell (key >> sh == c) that holds position i, going from i
// in direction dir (+1 or -1): galloping, then bisection.
__device__ int dens_cell_edge(const unsigned long long* __restrict__ keys, int n, int i, int sh,
                              unsigned long long c, int dir)
{
    int good = i, bad = dir > 0 ? n : -1;
    for (int step = 1;; step <<= 1) {
        const int p = good + dir * step;
        if (p < 0 || p >= n) break;
        if ((keys[p] >> sh) != c) { bad = p; break; }
        good = p;
    }
    while (abs(bad - good) > 1) {
        const int mid = good + (bad - good) / 2;
        if ((keys[mid] >> sh) == c) good = mid; else bad = mid;
    }
    return good;
}

// The sort's input: vals[i] = i, mass[i]; a stray (flag: not this rank's) goes to the outbox
// (key, mass, index: 16 bytes; the first cap) and sorts last (key ~0).
extern "C" __global__ void density_input(const float4* __restrict__ pos, int n,
                                         const int* __restrict__ flag,
                                         const unsigned long long* __restrict__ keys_in,
                                         unsigned long long* __restrict__ keys,
                                         unsigned* __restrict__ vals, float* __restrict__ mass,
                                         uint4* __restrict__ strays, int cap, int* count)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const unsigned long long key = keys_in[i];
        const float m = pos[i].w;
        vals[i] = i;
        mass[i] = m;
        keys[i] = key;
        if (flag[i]) {
            const int j = atomicAdd(count, 1);
            if (j < cap)
                strays[j] = make_uint4((unsigned)key, (unsigned)(key >> 32), __float_as_uint(m),
                                       (unsigned)i);
            keys[i] = ~0ull;
        }
    }
}

// sums[b] = the masses of sorted positions [b * 2048, (b + 1) * 2048) (256 threads x 8).
extern "C" __global__ void __launch_bounds__(256)
density_block_sums(const unsigned* __restrict__ vals, const float* __restrict__ mass, int n,
                   double* __restrict__ sums)
{
    __shared__ double warp[8];
    const int base = blockIdx.x * 2048 + threadIdx.x * 8;
    double s = 0;
    for (int k = 0; k < 8; k++)
        if (base + k < n) s += mass[vals[base + k]];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) warp[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0;
        for (int w = 0; w < 8; w++) t += warp[w];
        sums[blockIdx.x] = t;
    }
}

// The exclusive scan of sums[0, blocks) in place (one block of 1024 threads).
extern "C" __global__ void density_scan_sums(double* sums, int blocks)
{
    __shared__ double s[1024];
    __shared__ double carry;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (int base = 0; base < blocks; base += 1024) {
        const int i = base + threadIdx.x;
        const double v = i < blocks ? sums[i] : 0.0;
        s[threadIdx.x] = v;
        __syncthreads();
        for (int o = 1; o < 1024; o <<= 1) {
            const double t = threadIdx.x >= o ? s[threadIdx.x - o] : 0.0;
            __syncthreads();
            s[threadIdx.x] += t;
            __syncthreads();
        }
        if (i < blocks) sums[i] = carry + s[threadIdx.x] - v;
        __syncthreads();
        if (threadIdx.x == 0) carry += s[1023];
        __syncthreads();
    }
}

// P[i] = the masses of sorted positions [0, i) for i <= n (float64).
extern "C" __global__ void __launch_bounds__(256)
density_prefix(const unsigned* __restrict__ vals, const float* __restrict__ mass, int n,
               const double* __restrict__ sums, double* __restrict__ P)
{
    __shared__ double warp[8];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int base = blockIdx.x * 2048 + threadIdx.x * 8;
    double v[8], s = 0;
    for (int k = 0; k < 8; k++) {
        v[k] = base + k < n ? (double)mass[vals[base + k]] : 0.0;
        s += v[k];
    }
    double x = s;  // the warp's inclusive scan of the threads' sums
    for (int o = 1; o < 32; o <<= 1) {
        const double y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp[w] = x;
    __syncthreads();
    double run = sums[blockIdx.x] + x - s;
    for (int u = 0; u < w; u++) run += warp[u];
    for (int k = 0; k < 8; k++) {
        if (base + k <= n) P[base + k] = run;
        run += v[k];
    }
}

// ends[level] (uint64 x 6): the first and the last cell of the sorted set, the end of the
// first (sorted position) and the start of the last, and their masses' float64 bits.
extern "C" __global__ void density_ends(const unsigned long long* __restrict__ keys, int n,
                                        const double* __restrict__ P,
                                        unsigned long long* __restrict__ ends)
{
    const int level = threadIdx.x;
    if (level >= DENS_LEVELS || n == 0) return;
    const int sh = dens_shift(level);
    const unsigned long long f = keys[0] >> sh, g = keys[n - 1] >> sh;
    const int f_end = dens_cell_edge(keys, n, 0, sh, f, 1) + 1;
    const int g_start = dens_cell_edge(keys, n, n - 1, sh, g, -1);
    unsigned long long* e = ends + 6 * level;
    e[0] = f; e[1] = g; e[2] = (unsigned long long)f_end; e[3] = (unsigned long long)g_start;
    e[4] = __double_as_longlong(P[f_end] - P[0]);
    e[5] = __double_as_longlong(P[n] - P[g_start]);
}

// Each sorted position's density (log10, float32) into out[vals[i]] (this rank's particles,
// vals < n_local) or out_strays[vals[i] - n_local] (the strays that came). The finest level
// whose cell holds >= DENSITY_N_MIN of the set is the finest with a window of that many sorted
// particles in one cell; the end cells count the others' too: glob (DENS_LEVELS x 6 float64)
// the end of the first cell, the start of the last, the first's count and mass (all ranks'),
// the last's. One block of 256 positions a tile.
extern "C" __global__ void __launch_bounds__(256)
density_values(const unsigned long long* __restrict__ keys, const unsigned* __restrict__ vals,
               int n, const double* __restrict__ P, const double* __restrict__ glob,
               double side, int n_local, float* __restrict__ out,
               float* __restrict__ out_strays)
{
    __shared__ unsigned long long s_key[256 + 2 * DENS_W];
    __shared__ signed char s_d[256 + 2 * DENS_W], s_w[256 + DENS_W];
    __shared__ double s_glob[6 * DENS_LEVELS];
    const int b0 = blockIdx.x * 256, t0 = b0 - DENS_W;  // s_key[t]: position t0 + t
    for (int t = threadIdx.x; t < 256 + 2 * DENS_W; t += 256) {
        const int p = t0 + t;
        s_key[t] = p >= 0 && p < n ? keys[p] : 0ull;
    }
    for (int t = threadIdx.x; t < 6 * DENS_LEVELS; t += 256) s_glob[t] = glob[t];
    __syncthreads();
    for (int t = threadIdx.x; t < 256 + 2 * DENS_W; t += 256) {  // the pair (p - 1, p)
        const int p = t0 + t;
        s_d[t] = t > 0 && p >= 1 && p < n ? dens_shared(s_key[t - 1], s_key[t]) : -1;
    }
    __syncthreads();
    for (int u = threadIdx.x; u < 256 + DENS_W; u += 256) {  // the window j .. j + W
        const int j = t0 + u;
        int m = 0;
        if (j >= 0 && j + DENS_W < n) {
            m = DENSITY_MAX_LEVEL;
            for (int d = 1; d <= DENS_W; d++) m = min(m, (int)s_d[u + d]);
        }
        s_w[u] = (signed char)m;
    }
    __syncthreads();
    const int i = b0 + threadIdx.x;
    if (i >= n) return;
    int level = 0;
    for (int d = 0; d <= DENS_W; d++) level = max(level, (int)s_w[threadIdx.x + d]);
    for (int l = DENSITY_MAX_LEVEL; l > level; l--) {  // an end cell, full with the others'
        const double* g = s_glob + 6 * l;
        if ((i < (int)g[0] && g[2] >= DENSITY_N_MIN) || (i >= (int)g[1] && g[4] >= DENSITY_N_MIN)) {
            level = l;
            break;
        }
    }
    const double* g = s_glob + 6 * level;
    double m;
    if (i < (int)g[0]) m = g[3];
    else if (i >= (int)g[1]) m = g[5];
    else {
        const int sh = dens_shift(level);
        const unsigned long long c = s_key[threadIdx.x + DENS_W] >> sh;
        const int first = dens_cell_edge(keys, n, i, sh, c, -1);
        m = P[dens_cell_edge(keys, n, i, sh, c, 1) + 1] - P[first];
    }
    const double l = side / (double)(1ll << level);
    const float d = (float)log10(fmax(m / (l * l * l), 1e-300));
    const unsigned v = vals[i];
    if (v < (unsigned)n_local) out[v] = d; else out_strays[v - n_local] = d;
}

// out[idx[j]] = values[j]: this rank's strays' density, sent back by their hosts.
extern "C" __global__ void density_put(float* __restrict__ out, const unsigned* __restrict__ idx,
                                       const float* __restrict__ values, int m)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += gridDim.x * blockDim.x)
        out[idx[j]] = values[j];
}

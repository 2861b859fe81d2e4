// Kick-drift-kick leapfrog with block time steps (engines/integrators/leapfrog_hier_gpu.py).
// level[id]: each particle's level k (step dt / 2^k), indexed by particle id so that it needs
// no reorder when the tree sorts the particles; counts[k]: particles on level k.

// The level for the step sqrt(2 eta eps / |a|): the largest step dt / 2^k not above it (as
// blocks.initial_levels).
__device__ __forceinline__ double hl_crit(float4 a, double eps, double eta)
{
    const double a2 = (double)a.x * a.x + (double)a.y * a.y + (double)a.z * a.z;
    return a2 > 0 ? sqrt(2.0 * eta * eps / sqrt(a2)) : INFINITY;
}

__device__ __forceinline__ int hl_finer(double h, double crit, int L)
{
    const double k = ceil(log2(h / crit));
    return isfinite(k) ? (int)fmin(fmax(k, 0.0), (double)L) : (crit > 0 ? 0 : L);
}

// Add each block's level histogram (shared, 64 bins) to counts.
__device__ __forceinline__ void hl_flush(int* s_counts, int* counts)
{
    __syncthreads();
    if (threadIdx.x < 64 && s_counts[threadIdx.x]) atomicAdd(&counts[threadIdx.x], s_counts[threadIdx.x]);
}

extern "C" __global__ void hl_init(const float4* __restrict__ acc, const unsigned* __restrict__ ids,
                                   int n, double eps, double eta, double dt, int L,
                                   int* __restrict__ level, int* __restrict__ counts)
{
    __shared__ int s_counts[64];
    if (threadIdx.x < 64) s_counts[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int k = hl_finer(dt, hl_crit(acc[i], eps, eta), L);
        level[ids[i]] = k;
        atomicAdd(&s_counts[k], 1);
    }
    hl_flush(s_counts, counts);
}

// Levels moved by `shift` (a new largest step) and clipped to 0..L, counted again.
extern "C" __global__ void hl_shift(int n, int shift, int L, int* __restrict__ level,
                                    int* __restrict__ counts)
{
    __shared__ int s_counts[64];
    if (threadIdx.x < 64) s_counts[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int k = min(max(level[i] + shift, 0), L);
        level[i] = k;
        atomicAdd(&s_counts[k], 1);
    }
    hl_flush(s_counts, counts);
}

// The opening half kicks of every particle: v += a dt / 2^(k+1).
extern "C" __global__ void hl_open(float4* __restrict__ vel, const float4* __restrict__ acc,
                                   const unsigned* __restrict__ ids, const int* __restrict__ level,
                                   int n, float half_dt)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float h = ldexpf(half_dt, -level[ids[i]]);
        float4 v = vel[i];
        const float4 a = acc[i];
        v.x += a.x * h; v.y += a.y * h; v.z += a.z * h;
        vel[i] = v;
    }
}

// At block time t (ticks of dt / 2^L): the active particles (level >= kmin) close their step
// with the new accelerations, take a new level (halved as needed, doubled when t allows: as
// blocks.new_levels) and, when `open`, open the next step; counts follow the level changes.
extern "C" __global__ void hl_close(float4* __restrict__ vel, const float4* __restrict__ acc,
                                    const unsigned* __restrict__ ids, int* __restrict__ level,
                                    int n, int kmin, float half_dt, long long t, int L, double dt,
                                    double eps, double eta, int open, int* __restrict__ counts)
{
    __shared__ int s_counts[64];
    if (threadIdx.x < 64) s_counts[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const unsigned id = ids[i];
        const int k = level[id];
        if (k < kmin) continue;
        const float4 a = acc[i];
        float4 v = vel[i];
        float hk = ldexpf(half_dt, -k);
        v.x += a.x * hk; v.y += a.y * hk; v.z += a.z * hk;
        const double h = ldexp(dt, -k), crit = hl_crit(a, eps, eta);
        int kn = k + hl_finer(h, crit, L);
        if (k > 0 && crit >= 2 * h && t % (1ll << (L - k + 1)) == 0) kn = k - 1;
        kn = min(max(kn, 0), L);
        if (open) {
            hk = ldexpf(half_dt, -kn);
            v.x += a.x * hk; v.y += a.y * hk; v.z += a.z * hk;
        }
        vel[i] = v;
        if (kn != k) {
            level[id] = kn;
            atomicAdd(&s_counts[k], -1);
            atomicAdd(&s_counts[kn], 1);
        }
    }
    hl_flush(s_counts, counts);
}

// All-pairs gravity (GPU Gems 3, ch. 31): one thread per particle, sources streamed through
// shared-memory tiles. Also a float64-accumulated reference for a sample of target particles.
#define DIRECT_THREADS 256

extern "C" __global__ void __launch_bounds__(DIRECT_THREADS)
direct_forces(const float4* __restrict__ pos, int n, float eps2, float G, float4* __restrict__ acc)
{
    __shared__ float4 tile[DIRECT_THREADS];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4 p = pos[min(i, n - 1)];
    float ax = 0.f, ay = 0.f, az = 0.f, pot = 0.f;
    for (int base = 0; base < n; base += DIRECT_THREADS) {
        const int j = base + threadIdx.x;
        tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        __syncthreads();
        const int m = min(DIRECT_THREADS, n - base);
#pragma unroll 8
        for (int k = 0; k < m; k++) {
            const float4 q = tile[k];
            const float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
            const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2)));
            const float rinv = r2 > 0.f ? rsqrtf(r2) : 0.f;
            const float mr = q.w * rinv;
            const float mr3 = mr * rinv * rinv;
            ax = fmaf(mr3, dx, ax); ay = fmaf(mr3, dy, ay); az = fmaf(mr3, dz, az);
            pot -= mr;
        }
        __syncthreads();
    }
    if (i < n) {
        if (eps2 > 0.f) pot += p.w * rsqrtf(eps2);  // the self pair's potential
        acc[i] = make_float4(G * ax, G * ay, G * az, G * pot);
    }
}

// Reference: accelerations and potentials of particles `targets` in float64 arithmetic (one
// block per target), self pair excluded. out: 4 doubles per target.
extern "C" __global__ void __launch_bounds__(256)
direct_sample_f64(const float4* __restrict__ pos, int n, const int* __restrict__ targets,
                  double eps2, double G, double* __restrict__ out)
{
    __shared__ double s[4][8];
    const int t = targets[blockIdx.x];
    const float4 p = pos[t];
    double a[4] = {0, 0, 0, 0};
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        if (j == t) continue;
        const float4 q = pos[j];
        const double dx = (double)q.x - p.x, dy = (double)q.y - p.y, dz = (double)q.z - p.z;
        const double r2 = dx * dx + dy * dy + dz * dz + eps2;
        if (r2 <= 0.0) continue;
        const double rinv = 1.0 / sqrt(r2), mr = q.w * rinv, mr3 = mr * rinv * rinv;
        a[0] += mr3 * dx; a[1] += mr3 * dy; a[2] += mr3 * dz; a[3] -= mr;
    }
    const double v = block_sum_f64<4>(a, s);
    if (threadIdx.x < 4) out[blockIdx.x * 4 + threadIdx.x] = G * v;
}

// Where each particle sits in the current (sorted) order: where[id[i]] = i.
extern "C" __global__ void invert_ids(const unsigned* __restrict__ id, int n, int* __restrict__ where)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        where[id[i]] = i;
}

// The live accuracy readout: for the particles `targets` (loaded order), one block each, the
// direct sum in float32 pair terms with float64 sums (relative error ~1e-7, far below any tree
// error it is compared with) and the engine's own acceleration. out: 6 doubles a target
// (reference ax ay az, added to what is there; engine ax ay az). (ox, oy, oz): the sources
// shifted by a ghost box's offset (the shearing sheet's images; a particle's own image then
// counts): one launch a box, summing into out.
extern "C" __global__ void __launch_bounds__(256)
sample_forces_mixed(const float4* __restrict__ pos, const float4* __restrict__ acc, int n,
                    const int* __restrict__ where, const int* __restrict__ targets, float eps2,
                    float ox, float oy, float oz, double G, double* __restrict__ out)
{
    const bool image = ox != 0.f || oy != 0.f || oz != 0.f;
    __shared__ double s[3][8];
    const int t = where[targets[blockIdx.x]];
    const float4 p = pos[t];
    double a[3] = {0, 0, 0};
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const float4 q = pos[j];
        const float dx = (q.x + ox) - p.x, dy = (q.y + oy) - p.y, dz = (q.z + oz) - p.z;
        const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2)));
        if ((j == t && !image) || r2 <= 0.f) continue;
        const float rinv = rsqrtf(r2), mr3 = q.w * rinv * rinv * rinv;
        a[0] += mr3 * dx; a[1] += mr3 * dy; a[2] += mr3 * dz;
    }
    const double v = block_sum_f64<3>(a, s);
    if (threadIdx.x < 3) {
        out[6 * blockIdx.x + threadIdx.x] += G * v;
        const float4 e = acc[t];
        out[6 * blockIdx.x + 3 + threadIdx.x] = threadIdx.x == 0 ? e.x : (threadIdx.x == 1 ? e.y : e.z);
    }
}

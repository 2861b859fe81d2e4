// Reductions over the particle state (energies, a masked centre of mass) and the octree overlay
// boxes. The integrators' kernels live in kernels/integrator_*.cu.

// sums[0] += sum m v^2 / 2, sums[1] += sum m phi / 2 (float64)
extern "C" __global__ void __launch_bounds__(256)
energy_sums(const float4* __restrict__ pos, const float4* __restrict__ vel,
            const float4* __restrict__ acc, int n, double* sums)
{
    __shared__ double s[2][8];
    double e[2] = {0, 0};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float4 v = vel[i];
        const double m = pos[i].w;
        e[0] += 0.5 * m * ((double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z);
        e[1] += 0.5 * m * (double)acc[i].w;
    }
    const double t = block_sum_f64<2>(e, s);
    if (threadIdx.x < 2) atomicAdd(&sums[threadIdx.x], t);
}

// sums[0..3] += sum m x, m y, m z, m over the particles whose original index is marked in mask
// (the follow camera's centre of mass, without copying the state to the host).
extern "C" __global__ void __launch_bounds__(256)
masked_com(const float4* __restrict__ pos, const unsigned* __restrict__ ids,
           const unsigned char* __restrict__ mask, int n, double* sums)
{
    __shared__ double s[4][8];
    double a[4] = {0, 0, 0, 0};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (!mask[ids[i]]) continue;
        const float4 p = pos[i];
        const double m = p.w;
        a[0] += m * p.x; a[1] += m * p.y; a[2] += m * p.z; a[3] += m;
    }
    const double t = block_sum_f64<4>(a, s);
    if (threadIdx.x < 4) atomicAdd(&sums[threadIdx.x], t);
}

// Geometric centre and size (x, y, z, size) of cells [c0, c1) for the octree overlay.
extern "C" __global__ void cell_boxes(int c0, int c1, const int* __restrict__ level,
                                      const int* __restrict__ begin,
                                      const unsigned long long* __restrict__ keys,
                                      const float* __restrict__ frame, float4* __restrict__ out)
{
    for (int c = c0 + blockIdx.x * blockDim.x + threadIdx.x; c < c1; c += gridDim.x * blockDim.x) {
        double g[3], size;
        cell_center(keys[begin[c]], level[c], frame, g, &size);
        out[c - c0] = make_float4((float)g[0], (float)g[1], (float)g[2], (float)size);
    }
}

// Colour by density on the device (render/colour.py): each particle gets log10 of the mass
// density of the smallest cell around it with at least n_min particles, from the engine's tree
// (model/density.py's estimate). One launch per level, coarse to fine, a warp per cell: finer
// cells overwrite; the root always writes. The level's cells are lb[level]..lb[level + 1] as the
// build left them on the device (no host copy). out is in the current (sorted) order.
extern "C" __global__ void cell_density(int level, const int* __restrict__ lb, int n_min,
                                        const int* __restrict__ begin,
                                        const int* __restrict__ count,
                                        const float4* __restrict__ q1,
                                        const float* __restrict__ frame, float* __restrict__ out)
{
    const int lane = threadIdx.x & 31, c0 = lb[level], c1 = lb[level + 1];
    const double side = (double)frame[3] / (double)(1ll << level);
    for (int c = c0 + ((blockIdx.x * blockDim.x + threadIdx.x) >> 5); c < c1;
         c += (gridDim.x * blockDim.x) >> 5) {
        const int k = count[c];
        if (k < n_min && level > 0) continue;
        const float d = (float)log10(fmax((double)q1[c].w / (side * side * side), 1e-300));
        for (int p = begin[c] + lane; p < begin[c] + k; p += 32) out[p] = d;
    }
}

// Colour by galaxy on the device: out[i] = src[id[i]] (a loaded-order array, current order).
extern "C" __global__ void gather_by_id(const float* __restrict__ src,
                                        const unsigned* __restrict__ id, int n,
                                        float* __restrict__ out)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = src[id[i]];
}

// sums[0] += 1/2 sum_i m_i phi_i with phi by direct summation over all pairs: float32 pair
// terms, float64 sums (an energy free of the tree's potential error; Engine.direct_energies).
extern "C" __global__ void __launch_bounds__(256)
direct_potential_energy(const float4* __restrict__ pos, int n, float eps2, double* sums)
{
    __shared__ float4 tile[256];
    __shared__ double s[1][8];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4 p = pos[min(i, n - 1)];
    double pot = 0;
    for (int base = 0; base < n; base += 256) {
        const int j = base + threadIdx.x;
        tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        __syncthreads();
        const int m = min(256, n - base);
        float part = 0.f;  // at most 256 terms in float32, then float64
        for (int k = 0; k < m; k++) {
            const float4 q = tile[k];
            const float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
            const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2)));
            part -= r2 > 0.f ? q.w * rsqrtf(r2) : 0.f;
        }
        pot += part;
        __syncthreads();
    }
    if (eps2 > 0.f) pot += p.w * rsqrtf(eps2);  // the self pair's
    double e[1] = {i < n ? 0.5 * (double)p.w * pot : 0.0};
    const double t = block_sum_f64<1>(e, s);
    if (threadIdx.x == 0) atomicAdd(&sums[0], t);
}

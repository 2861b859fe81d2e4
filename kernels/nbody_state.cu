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

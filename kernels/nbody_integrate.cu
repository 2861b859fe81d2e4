// integrate phase: kick-drift-kick leapfrog (shared step), energy sums, octree overlay boxes.
// vel4.w carries the particle's Component code and is left untouched.

extern "C" __global__ void kick_drift(float4* __restrict__ pos, float4* __restrict__ vel,
                                      const float4* __restrict__ acc, int n, float hdt, float dt)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 v = vel[i], p = pos[i];
        const float4 a = acc[i];
        v.x += a.x * hdt; v.y += a.y * hdt; v.z += a.z * hdt;
        p.x += v.x * dt; p.y += v.y * dt; p.z += v.z * dt;
        vel[i] = v;
        pos[i] = p;
    }
}

// The closing half kick; skipped when the tree did not fit (the host grows it and redoes it).
extern "C" __global__ void kick(float4* __restrict__ vel, const float4* __restrict__ acc, int n,
                                float hdt, const unsigned long long* __restrict__ status)
{
    if (status[ST_FLAGS] & (FLAG_CELLS | FLAG_GROUPS)) return;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 v = vel[i];
        const float4 a = acc[i];
        v.x += a.x * hdt; v.y += a.y * hdt; v.z += a.z * hdt;
        vel[i] = v;
    }
}

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

// Hard-sphere collisions on the GPU (engines/collisions/hard_spheres_gpu.py; model/collide.py
// is the CPU version and the reference). Search: a cell list of columns in x-y at least one
// contact distance wide (the ring is thin); a particle looks into the 3 x 3 columns around it
// in the box and, near an edge, around its position in the frame of the neighbour box (the
// shear-periodic images: x +/- Lx with y -/+ s(t), y periodic). Each touching pair is kept
// once, by the particle of the lower original index. Resolve: in rounds, every pending pair
// that has the highest priority (a hash of the two indices and the step) at both its
// particles is resolved at once; the result is that of resolving the pairs one after the
// other in priority order (model/collide.py priority: the same hash, seeded by the time).
// vel4.w (the component) is left alone.

extern "C" __global__ void cl_count(const float4* __restrict__ pos, int n, double lx, double ly,
                                    int nx, int ny, int* __restrict__ cell,
                                    int* __restrict__ rank, int* __restrict__ counts)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float4 p = pos[i];
        int cx = (int)floor(((double)p.x + 0.5 * lx) * nx / lx);
        int cy = (int)floor(((double)p.y + 0.5 * ly) * ny / ly);
        cx = min(max(cx, 0), nx - 1);  // the boundary keeps particles in the box; rounding
        cy = min(max(cy, 0), ny - 1);
        const int c = cy * nx + cx;
        cell[i] = c;
        rank[i] = atomicAdd(&counts[c], 1);
    }
}

// Exclusive scan of counts[0, m) into starts: one block, a chunk a thread.
extern "C" __global__ void cl_scan(const int* __restrict__ counts, int m, int* __restrict__ starts)
{
    __shared__ int part[1024];
    const int t = threadIdx.x, nt = blockDim.x;
    const int chunk = (m + nt - 1) / nt;
    const int a = min(m, t * chunk), b = min(m, a + chunk);
    int s = 0;
    for (int c = a; c < b; c++) s += counts[c];
    part[t] = s;
    __syncthreads();
    for (int off = 1; off < nt; off <<= 1) {
        const int v = t >= off ? part[t - off] : 0;
        __syncthreads();
        part[t] += v;
        __syncthreads();
    }
    int run = part[t] - s;
    for (int c = a; c < b; c++) {
        starts[c] = run;
        run += counts[c];
    }
}

extern "C" __global__ void cl_fill(const int* __restrict__ cell, const int* __restrict__ rank,
                                   const int* __restrict__ starts, int n, int* __restrict__ sorted)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        sorted[starts[cell[i]] + rank[i]] = i;
}

// Touching pairs: (i, j, offset x, offset y of j's image as floats) into pairs[0, cap);
// *npairs counts them all (more than cap: the host grows the list and searches again).
extern "C" __global__ void cl_pairs(const float4* __restrict__ pos,
                                    const float* __restrict__ radius,
                                    const unsigned* __restrict__ ids, int n, double lx,
                                    double ly, int nx, int ny, double shift,
                                    const int* __restrict__ starts,
                                    const int* __restrict__ counts,
                                    const int* __restrict__ sorted, int4* __restrict__ pairs,
                                    int cap, unsigned long long* __restrict__ npairs)
{
    const double hx = lx / nx, hy = ly / ny;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float4 p = pos[i];
        const float ri = radius[i];
        const unsigned idi = ids[i];
        for (int ix = -1; ix <= 1; ix++) {
            // i seen from the box at ix Lx (whose content sits at y - ix s)
            const double qx = (double)p.x - ix * lx, qy = (double)p.y + ix * shift;
            const int cqx = (int)floor((qx + 0.5 * lx) / hx);
            if (cqx < -1 || cqx > nx) continue;
            const int cqy = (int)floor((qy + 0.5 * ly) / hy);
            for (int dx = -1; dx <= 1; dx++) {
                const int cx = cqx + dx;
                if (cx < 0 || cx >= nx) continue;
                for (int dy = -1; dy <= 1; dy++) {
                    const int r = cqy + dy;
                    const int rw = ((r % ny) + ny) % ny;
                    const int wy = (r - rw) / ny;
                    const int c = rw * nx + cx;
                    const double ox = ix * lx, oy = -ix * shift + wy * ly;
                    const int k1 = starts[c] + counts[c];
                    for (int k = starts[c]; k < k1; k++) {
                        const int j = sorted[k];
                        if (ids[j] <= idi) continue;  // each pair once; never i with itself
                        const float4 q = pos[j];
                        const double ddx = (double)q.x + ox - p.x;
                        const double ddy = (double)q.y + oy - p.y;
                        const double ddz = (double)q.z - p.z;
                        const double rr = (double)ri + radius[j];
                        if (ddx * ddx + ddy * ddy + ddz * ddz < rr * rr) {
                            const unsigned long long slot = atomicAdd(npairs, 1ull);
                            if (slot < (unsigned long long)cap)
                                pairs[slot] = make_int4(i, j, __float_as_int((float)ox),
                                                        __float_as_int((float)oy));
                        }
                    }
                }
            }
        }
    }
}

__device__ __forceinline__ unsigned col_hash(unsigned a, unsigned b, unsigned seed)
{
    unsigned h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ seed * 0xC2B2AE3Du;
    h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u; h ^= h >> 16;
    return h;
}

__device__ __forceinline__ unsigned long long col_priority(const int4 q, int k,
                                                           const unsigned* ids, unsigned seed)
{
    return ((unsigned long long)col_hash(ids[q.x], ids[q.y], seed) << 32) | (unsigned)k;
}

extern "C" __global__ void col_fill(unsigned long long* __restrict__ first, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        first[i] = ~0ull;
}

// state: 1 pending, 2 resolved in this round, 0 done.
extern "C" __global__ void col_claim(const int4* __restrict__ pairs, int np,
                                     const unsigned char* __restrict__ state,
                                     const unsigned* __restrict__ ids, unsigned seed,
                                     unsigned long long* __restrict__ first)
{
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < np; k += gridDim.x * blockDim.x) {
        if (state[k] != 1) continue;
        const int4 q = pairs[k];
        const unsigned long long prio = col_priority(q, k, ids, seed);
        atomicMin(&first[q.x], prio);
        atomicMin(&first[q.y], prio);
    }
}

// counters[0]: pairs resolved (approaching at their turn); counters[1]: pairs still pending.
// law 0: constant eps_n; 1: Bridges et al. (1984), (|v_n| / v_c)^-0.234 at most 1.
extern "C" __global__ void col_apply(const int4* __restrict__ pairs, int np,
                                     unsigned char* __restrict__ state,
                                     const unsigned* __restrict__ ids, unsigned seed,
                                     const unsigned long long* __restrict__ first,
                                     const float4* __restrict__ pos, float4* __restrict__ vel,
                                     double shear, int law, double eps_n, double v_c,
                                     unsigned long long* __restrict__ counters)
{
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < np; k += gridDim.x * blockDim.x) {
        if (state[k] != 1) continue;
        const int4 q = pairs[k];
        const unsigned long long prio = col_priority(q, k, ids, seed);
        if (first[q.x] != prio || first[q.y] != prio) {
            atomicAdd(&counters[1], 1ull);
            continue;
        }
        state[k] = 2;
        const int i = q.x, j = q.y;
        const double ox = __int_as_float(q.z), oy = __int_as_float(q.w);
        const float4 pi = pos[i], pj = pos[j];
        float4 vi = vel[i], vj = vel[j];
        const double dx = (double)pj.x + ox - pi.x, dy = (double)pj.y + oy - pi.y,
                     dz = (double)pj.z - pi.z;
        const double d = sqrt(dx * dx + dy * dy + dz * dz);
        if (!(d > 0.0)) continue;
        const double nx = dx / d, ny = dy / d, nz = dz / d;
        // the image moves with the shear of its box: v_y - 3/2 Omega ox (shear = -3/2 Omega)
        const double vn = ((double)vj.x - vi.x) * nx + ((double)vj.y + shear * ox - vi.y) * ny
                        + ((double)vj.z - vi.z) * nz;
        if (vn >= 0.0) continue;  // receding at its turn: left alone
        const double e = law == 0 ? eps_n : fmin(1.0, pow(fabs(vn) / v_c, -0.234));
        const double dv = -(1.0 + e) * vn;
        const double mi = pi.w, mj = pj.w;
        const double wi = dv * mj / (mi + mj), wj = dv * mi / (mi + mj);
        vi.x = (float)(vi.x - wi * nx); vi.y = (float)(vi.y - wi * ny); vi.z = (float)(vi.z - wi * nz);
        vj.x = (float)(vj.x + wj * nx); vj.y = (float)(vj.y + wj * ny); vj.z = (float)(vj.z + wj * nz);
        vel[i] = vi;
        vel[j] = vj;
        atomicAdd(&counters[0], 1ull);
    }
}

extern "C" __global__ void col_reset(const int4* __restrict__ pairs, int np,
                                     unsigned char* __restrict__ state,
                                     unsigned long long* __restrict__ first)
{
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < np; k += gridDim.x * blockDim.x) {
        const unsigned char s = state[k];
        if (s == 0) continue;
        const int4 q = pairs[k];
        first[q.x] = ~0ull;
        first[q.y] = ~0ull;
        if (s == 2) state[k] = 0;
    }
}

// Domain migration on the device (engines/parallel/migrate.py): each particle's Peano-Hilbert
// key in the global cube (Skilling's transform, as engines/parallel/hilbert.py), its owner
// among the splitters, the leavers' rows in the outbox (which the other ranks read), the
// loaded slots the arrivals take and the arrivals themselves, in the holes the leavers left
// (the stayers stay where they are, but those beyond a set that shrank). Appended to the engine's
// module after nbody_keys.cu (spread3, grid_coord).
//
// meta (int4 a particle, loaded order): the global id (low, high word), the radius's bits,
// component | galaxy << 8. A row (4 float4): pos, vel, acc, meta.

__device__ __forceinline__ unsigned long long hilbert_key(unsigned x0, unsigned x1, unsigned x2)
{
    for (unsigned q = 1u << 20; q > 1; q >>= 1) {  // undo excess work
        const unsigned p = q - 1;
        if (x0 & q) x0 ^= p;
        if (x1 & q) x0 ^= p;
        else { const unsigned t = (x0 ^ x1) & p; x0 ^= t; x1 ^= t; }
        if (x2 & q) x0 ^= p;
        else { const unsigned t = (x0 ^ x2) & p; x0 ^= t; x2 ^= t; }
    }
    x1 ^= x0;  // Gray encode
    x2 ^= x1;
    unsigned t = 0;
    for (unsigned q = 1u << 20; q > 1; q >>= 1)
        if (x2 & q) t ^= q - 1;
    return (spread3(x0 ^ t) << 2) | (spread3(x1 ^ t) << 1) | spread3(x2 ^ t);
}

// owner[i]: the number of splitters <= the key (decompose.owners); flag[i] = owner != rank.
// With vel (else null), the key of where the leapfrog's kick and drift of dt take the particle
// (leapfrog_kick_drift of integrator_leapfrog.cu, compiled before this file in the engine's
// module): the migration sends it to the domain it will be in at the step's force evaluation.
extern "C" __global__ void domain_flags(const float4* __restrict__ pos, int n, float lx,
                                        float ly, float lz, float scale,
                                        const unsigned long long* __restrict__ cuts, int ncuts,
                                        int rank, int* __restrict__ flag, int* __restrict__ owner,
                                        unsigned long long* __restrict__ keys,
                                        const float4* __restrict__ vel,
                                        const float4* __restrict__ acc, float hdt, float dt)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 p = pos[i];
        if (vel) {  // where kick_drift takes it (the parallel engine runs the leapfrog alone)
            float4 v = vel[i];
            leapfrog_kick_drift(p, v, acc[i], hdt, dt);
        }
        const unsigned long long key = hilbert_key(grid_coord(p.x, lx, scale),
                                                   grid_coord(p.y, ly, scale),
                                                   grid_coord(p.z, lz, scale));
        int o = 0;
        while (o < ncuts && cuts[o] <= key) o++;
        owner[i] = o;
        flag[i] = o != rank;
        if (keys) keys[i] = key;
    }
}

// keys[j]: the key of particle j * stride (a rank's sample for the splitters)
extern "C" __global__ void domain_sample_keys(const float4* __restrict__ pos, int rows,
                                              int stride, float lx, float ly, float lz,
                                              float scale, unsigned long long* __restrict__ keys)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < rows; j += gridDim.x * blockDim.x) {
        const float4 p = pos[(size_t)j * stride];
        keys[j] = hilbert_key(grid_coord(p.x, lx, scale), grid_coord(p.y, ly, scale),
                              grid_coord(p.z, lz, scale));
    }
}

// offs: the exclusive scan of flag. The leavers (the first cap) to the outbox: rows[offs[i]],
// their owners, loaded slots (lid) and places in the set (lpos, ascending). The stayers stay.
extern "C" __global__ void domain_leavers(int n, const int* __restrict__ flag,
                                          const int* __restrict__ offs,
                                          const int* __restrict__ owner,
                                          const float4* __restrict__ pos,
                                          const float4* __restrict__ vel,
                                          const float4* __restrict__ acc,
                                          const unsigned* __restrict__ id,
                                          const int4* __restrict__ meta,
                                          float4* __restrict__ rows,
                                          int* __restrict__ row_owner, unsigned* __restrict__ lid,
                                          unsigned* __restrict__ lpos, int cap)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (!flag[i]) continue;
        const int j = offs[i];
        if (j >= cap) continue;
        const unsigned s = id[i];
        rows[4 * j] = pos[i]; rows[4 * j + 1] = vel[i]; rows[4 * j + 2] = acc[i];
        reinterpret_cast<int4*>(rows)[4 * j + 3] = meta[s];
        row_owner[j] = owner[i]; lid[j] = s; lpos[j] = i;
    }
}

// The set shrank to n_new: a stayer at n_new + t fills a hole the leavers left below n_new,
// behind those the arrivals take (holes: lpos[0..], ascending; its rank s among the stayers
// beyond n_new from the scan of flag): pos, vel, acc and its loaded slot move
extern "C" __global__ void domain_fill(int span, int n_new, const int* __restrict__ flag,
                                       const int* __restrict__ offs,
                                       const unsigned* __restrict__ lpos, int arrivals,
                                       float4* __restrict__ pos, float4* __restrict__ vel,
                                       float4* __restrict__ acc, unsigned* __restrict__ id)
{
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < span; t += gridDim.x * blockDim.x) {
        const int i = n_new + t;
        if (flag[i]) continue;
        const unsigned d = lpos[arrivals + t - (offs[i] - offs[n_new])];
        pos[d] = pos[i]; vel[d] = vel[i]; acc[d] = acc[i]; id[d] = id[i];
    }
}

// counts[o] += the leavers (the first min(*n_ptr, cap) rows) going to rank o < ranks <= 1024
extern "C" __global__ void domain_owner_counts(const int* __restrict__ row_owner,
                                               const int* n_ptr, int cap, int ranks,
                                               int* __restrict__ counts)
{
    __shared__ int hist[1024];
    for (int o = threadIdx.x; o < ranks; o += blockDim.x) hist[o] = 0;
    __syncthreads();
    const int n = min(*n_ptr, cap);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&hist[row_owner[i]], 1);
    __syncthreads();
    for (int o = threadIdx.x; o < ranks; o += blockDim.x)
        if (hist[o]) atomicAdd(&counts[o], hist[o]);
}

// flag[i]: inbox row i is for this rank
extern "C" __global__ void domain_mine(const int* __restrict__ row_owner, int m, int rank,
                                       int* __restrict__ flag)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x)
        flag[i] = row_owner[i] == rank;
}

// -- the arrivals' loaded slots (migrate.slots on the device). The set grew or kept its size
// -- (n_new >= n): the leavers' slots, then n, n + 1, ...
extern "C" __global__ void slot_grow(const unsigned* __restrict__ lid, int left, int n,
                                     int arrivals, unsigned* __restrict__ at)
{
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < arrivals; k += gridDim.x * blockDim.x)
        at[k] = k < left ? lid[k] : (unsigned)(n + k - left);
}

// It shrank: hflag[j] = the leaver's slot is below n_new; surv[v - n_new] = 0 for a slot v >=
// n_new that a leaver freed (surv set to 1 before: the survivors there)
extern "C" __global__ void slot_flags(const unsigned* __restrict__ lid, int left, unsigned n_new,
                                      int* __restrict__ hflag, int* __restrict__ surv)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < left; j += gridDim.x * blockDim.x) {
        const unsigned v = lid[j];
        hflag[j] = v < n_new;
        if (v >= n_new) surv[v - n_new] = 0;
    }
}

// the freed slots below n_new (in leaver order): the first `arrivals` to the arrivals, the
// rest to the survivors beyond n_new
extern "C" __global__ void slot_holes(const unsigned* __restrict__ lid, int left,
                                      const int* __restrict__ hflag, const int* __restrict__ hoff,
                                      int arrivals, unsigned* __restrict__ at,
                                      unsigned* __restrict__ move_to)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < left; j += gridDim.x * blockDim.x) {
        if (!hflag[j]) continue;
        const int p = hoff[j];
        if (p < arrivals) at[p] = lid[j];
        else move_to[p - arrivals] = lid[j];
    }
}

// a survivor at slot n_new + k moves to a freed slot: remap[k] (for domain_remap), its meta
extern "C" __global__ void slot_survivors(const int* __restrict__ surv,
                                          const int* __restrict__ soff, int range,
                                          unsigned n_new, const unsigned* __restrict__ move_to,
                                          unsigned* __restrict__ remap, int4* __restrict__ meta)
{
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < range; k += gridDim.x * blockDim.x) {
        if (!surv[k]) continue;
        const unsigned to = move_to[soff[k]];
        remap[k] = to;
        meta[to] = meta[n_new + k];
    }
}

// ids at or beyond n_new (the set shrank) move to the slots the leavers freed
extern "C" __global__ void domain_remap(unsigned* __restrict__ id, int n, unsigned n_new,
                                        const unsigned* __restrict__ remap)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const unsigned v = id[i];
        if (v >= n_new) id[i] = remap[v - n_new];
    }
}

// the inbox's rows for this rank (flag, offs: their scan), the k-th into the k-th hole the
// leavers left (lpos; past them n, n + 1, ...); their loaded slots at[k] and meta there
extern "C" __global__ void domain_arrive(int m, const float4* __restrict__ rows,
                                         const int* __restrict__ flag,
                                         const int* __restrict__ offs, int n, int left,
                                         const unsigned* __restrict__ lpos,
                                         const unsigned* __restrict__ at,
                                         float4* __restrict__ pos, float4* __restrict__ vel,
                                         float4* __restrict__ acc, unsigned* __restrict__ id,
                                         int4* __restrict__ meta)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x) {
        if (!flag[i]) continue;
        const int k = offs[i];
        const unsigned d = k < left ? lpos[k] : (unsigned)(n + k - left), s = at[k];
        pos[d] = rows[4 * i]; vel[d] = rows[4 * i + 1]; acc[d] = rows[4 * i + 2];
        id[d] = s;
        meta[s] = reinterpret_cast<const int4*>(rows)[4 * i + 3];
    }
}

// the galaxy of origin (meta) of each particle in the current order, as the light's value
// The follow camera's set on a rank (model/state.py Selection), read from the device's meta:
// the particles of `galaxy` (-1: any) whose component's bit is set in `components`. sums[0..7]
// += m x, m y, m z, m, x, y, z, 1 (the plain sums for a massless set).
extern "C" __global__ void __launch_bounds__(256)
selected_com(const float4* __restrict__ pos, const int4* __restrict__ meta,
             const unsigned* __restrict__ id, int n, int galaxy, unsigned components,
             double* sums)
{
    __shared__ double s[8][8];
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int w = meta[id[i]].w;
        const int g = (short)((w >> 8) & 0xFFFF);
        if ((galaxy >= 0 && g != galaxy) || !((components >> (w & 0x1F)) & 1u)) continue;
        const float4 p = pos[i];
        const double m = p.w;
        a[0] += m * p.x; a[1] += m * p.y; a[2] += m * p.z; a[3] += m;
        a[4] += p.x; a[5] += p.y; a[6] += p.z; a[7] += 1.0;
    }
    const double t = block_sum_f64<8>(a, s);
    if (threadIdx.x < 8) atomicAdd(&sums[threadIdx.x], t);
}

extern "C" __global__ void meta_galaxy(const int4* __restrict__ meta,
                                       const unsigned* __restrict__ id, int n,
                                       float* __restrict__ out)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = (float)(short)((meta[id[i]].w >> 8) & 0xFFFF);
}

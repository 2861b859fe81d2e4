// Domain migration on the device (engines/parallel/migrate.py): each particle's Peano-Hilbert
// key in the global cube (Skilling's transform, as engines/parallel/hilbert.py), its owner
// among the splitters, and the split of the particle set into the ones that stay (compacted,
// in order, into the idle set) and the ones that leave (rows for the host). Appended to the
// engine's module after nbody_keys.cu (spread3, grid_coord).

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

// owner[i]: the number of splitters <= the key (decompose.owners); flag[i] = owner != rank
extern "C" __global__ void domain_flags(const float4* __restrict__ pos, int n, float lx,
                                        float ly, float lz, float scale,
                                        const unsigned long long* __restrict__ cuts, int ncuts,
                                        int rank, int* __restrict__ flag, int* __restrict__ owner,
                                        unsigned long long* __restrict__ keys)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float4 p = pos[i];
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

// offs: the exclusive scan of flag. Stayers to (spos, svel, sacc, sid)[i - offs[i]], leavers
// to rows[offs[i]] (pos4, vel4, acc4) with their ids and owners.
extern "C" __global__ void domain_split(int n, const int* __restrict__ flag,
                                        const int* __restrict__ offs,
                                        const int* __restrict__ owner,
                                        const float4* __restrict__ pos,
                                        const float4* __restrict__ vel,
                                        const float4* __restrict__ acc,
                                        const unsigned* __restrict__ id, float4* __restrict__ spos,
                                        float4* __restrict__ svel, float4* __restrict__ sacc,
                                        unsigned* __restrict__ sid, float4* __restrict__ rows,
                                        unsigned* __restrict__ lid, int* __restrict__ lowner)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int j = offs[i];
        if (flag[i]) {
            rows[3 * j] = pos[i]; rows[3 * j + 1] = vel[i]; rows[3 * j + 2] = acc[i];
            lid[j] = id[i]; lowner[j] = owner[i];
        } else {
            const int k = i - j;
            spos[k] = pos[i]; svel[k] = vel[i]; sacc[k] = acc[i]; sid[k] = id[i];
        }
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

// Forces on an active subset (block time steps): the active particles of the sorted order
// compacted (indices and keys, for the groups and the walk), and the accelerations carried
// through a sort (the relative MAC reads each particle's last acceleration).

// Particles whose level (by particle id) is >= kmin, in the sorted order: active_idx[j] = i,
// active_keys[j] = keys[i]. Tiles of 256 in order, offsets by decoupled look-back.
extern "C" __global__ void __launch_bounds__(TREE_THREADS)
compact_active(int n, const unsigned* __restrict__ ids, const int* __restrict__ level, int kmin,
               const unsigned long long* __restrict__ keys, int* __restrict__ active_idx,
               unsigned long long* __restrict__ active_keys, unsigned long long* desc,
               unsigned long long* counter, unsigned epoch)
{
    __shared__ int scratch[9];
    __shared__ unsigned s_prefix;
    __shared__ int s_tile;
    const int ntiles = (n + TREE_THREADS - 1) / TREE_THREADS;
    for (int tile = next_tile(counter, &s_tile); tile < ntiles; tile = next_tile(counter, &s_tile)) {
        const int i = tile * TREE_THREADS + threadIdx.x;
        const int a = i < n && level[ids[i]] >= kmin;
        int total;
        const int excl = block_excl_scan256(a, scratch, &total);
        const unsigned prefix = lookback_prefix(desc, tile, (unsigned)total, epoch, &s_prefix);
        if (a) {
            active_idx[prefix + excl] = i;
            active_keys[prefix + excl] = keys[i];
        }
    }
}

// acc[i] = acc_in[perm[i]]: the accelerations follow the particles through a reorder.
extern "C" __global__ void reorder_acc(const unsigned* __restrict__ perm, int n,
                                       const float4* __restrict__ acc_in,
                                       float4* __restrict__ acc_out)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        acc_out[i] = acc_in[perm[i]];
}

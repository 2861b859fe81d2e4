// build and multipoles phases: the octree level by level from the sorted keys (breadth-first
// numbering, children contiguous and in key order), groups, and multipoles in float64.
//
// Cells (capacity cap): level, begin, count, child, nchild, parent (int32); lb[l] = first cell
// of level l (lb[l + 1] - lb[l] cells), lb[MAX_LEVEL + 2] = number of cells.
#define TREE_THREADS 256

// Root cell, level begins, and the status words of a step.
extern "C" __global__ void tree_init(int n, int* lb, int* level, int* begin, int* count,
                                     int* parent)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        level[0] = 0; begin[0] = 0; count[0] = n; parent[0] = -1;
        lb[0] = 0; lb[1] = 1;
    }
}

__device__ __forceinline__ int child_digit(unsigned long long key, int level)
{
    return (int)(key >> (63 - 3 * level)) & 7;
}

// first index in [lo, hi) whose digit at `level` is >= d (keys sorted, one parent's range)
__device__ __forceinline__ int lower_digit(const unsigned long long* keys, int lo, int hi,
                                           int level, int d)
{
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (child_digit(keys[mid], level) < d) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// the same by a warp: 32 probes a round cut the range 33-fold (5 rounds for 16M keys, not 24
// dependent loads); every lane gets the index
__device__ __forceinline__ int warp_lower_digit(const unsigned long long* keys, int lo, int hi,
                                                int level, int d)
{
    const int lane = threadIdx.x & 31;
    while (hi - lo > 32) {
        const int q = lo + (int)((long long)(hi - lo) * (lane + 1) / 33);
        const int t = __popc(__ballot_sync(FULL_MASK, child_digit(keys[q], level) < d));
        const int before = __shfl_sync(FULL_MASK, q, t > 0 ? t - 1 : 0);
        const int after = __shfl_sync(FULL_MASK, q, t < 32 ? t : 31);
        if (t > 0) lo = before + 1;
        if (t < 32) hi = after;
    }
    const int q = lo + lane;
    return lo + __popc(__ballot_sync(FULL_MASK, q < hi && child_digit(keys[q], level) < d));
}

// Split the cells of level l into their non-empty children (level l + 1), numbered after
// lb[l + 1] in parent order; one launch per level, a single pass thanks to look-back.
// The seven child boundaries of a cell are binary searches. A level of few cells for the
// grid (the upper levels: few cells of many particles) is cut into tiles of 128, 64 or 32
// cells, whose searches 2, 4 or 8 threads a cell share, so more blocks work and the chain
// of dependent loads is one or two searches long instead of seven; with no more cells than
// blocks, a tile is a cell and a warp makes each search (warp_lower_digit).
extern "C" __global__ void __launch_bounds__(TREE_THREADS)
build_level(int l, int n_leaf, int cap, const unsigned long long* __restrict__ keys, int* lb,
            int* level, int* begin, int* count, int* child, int* nchild, int* parent,
            unsigned long long* status, unsigned long long* desc,
            unsigned long long* counter, unsigned epoch)
{
    __shared__ int scratch[9];
    __shared__ unsigned s_prefix;
    __shared__ int s_tile;
    __shared__ int s_bound[TREE_THREADS][8];  // a cell's child starts: digits 1..7
    if (status[ST_FLAGS] & FLAG_CELLS) return;  // an earlier level overflowed: rebuild follows
    const int lo = lb[l], hi = lb[l + 1], cells = hi - lo, grid = (int)gridDim.x;
    const int share = cells <= grid ? TREE_THREADS : cells <= 32 * grid ? 8
                    : cells <= 64 * grid ? 4 : cells <= 128 * grid ? 2 : 1;
    const int per_tile = TREE_THREADS / share;  // cells a tile (the buffers' desc: cap / 32)
    const int ntiles = (cells + per_tile - 1) / per_tile;
    if (ntiles == 0) {
        if (blockIdx.x == 0 && threadIdx.x == 0) lb[l + 2] = hi;
        return;
    }
    for (int tile = next_tile(counter, &s_tile); tile < ntiles; tile = next_tile(counter, &s_tile)) {
        const int first_cell = lo + tile * per_tile;
        const int m = min(per_tile, hi - first_cell);  // cells in this tile
        if (share == TREE_THREADS) {  // warp w: digit w + 1 of the tile's cell
            const int b = begin[first_cell], c = count[first_cell], d = 1 + (threadIdx.x >> 5);
            if (d <= 7 && c > n_leaf && l < MAX_LEVEL) {
                const int at = warp_lower_digit(keys, b, b + c, l + 1, d);
                if ((threadIdx.x & 31) == 0) s_bound[0][d] = at;
            }
        } else {
            for (int t = threadIdx.x; t < m * share; t += TREE_THREADS) {
                const int i = t / share, part = t % share, q = first_cell + i;
                const int b = begin[q], c = count[q];
                if (c > n_leaf && l < MAX_LEVEL) {
                    int at = b;  // this thread's digits: a contiguous run of 1..7
                    for (int d = 1 + 7 * part / share; d <= 7 * (part + 1) / share; d++)
                        s_bound[i][d] = at = lower_digit(keys, at, b + c, l + 1, d);
                }
            }
        }
        __syncthreads();
        const int p = first_cell + threadIdx.x;  // this thread's cell where threadIdx.x < m
        const bool mine = (int)threadIdx.x < m;
        int b = 0, c = 0, nch = 0;
        if (mine) { b = begin[p]; c = count[p]; }
        const bool splits = mine && c > n_leaf && l < MAX_LEVEL;
        if (splits) {
            int prev = b;
            for (int d = 1; d <= 8; d++) {
                const int s = d < 8 ? s_bound[threadIdx.x][d] : b + c;
                nch += s > prev;
                prev = s;
            }
        }
        int total;
        int excl = block_excl_scan256(nch, scratch, &total);
        unsigned prefix = lookback_prefix(desc, tile, (unsigned)total, epoch, &s_prefix);
        int first = hi + (int)prefix + excl;
        if (mine) {
            const bool fits = first + nch <= cap;
            child[p] = nch && fits ? first : 0;
            nchild[p] = fits ? nch : 0;
            if (!fits) atomicOr(&status[ST_FLAGS], (unsigned long long)FLAG_CELLS);
            else if (nch) {
                int prev = b, j = first;
                for (int d = 1; d <= 8; d++) {
                    const int s = d < 8 ? s_bound[threadIdx.x][d] : b + c;
                    if (s > prev) {
                        level[j] = l + 1; begin[j] = prev; count[j] = s - prev; parent[j] = p;
                        j++;
                    }
                    prev = s;
                }
            }
        }
        if (tile == ntiles - 1 && threadIdx.x == 0) {
            int end = hi + (int)prefix + total;
            lb[l + 2] = end < cap ? end : cap;
        }
    }
}

// ---- groups: runs of gmax sorted particles, split where they are spatially loose -----------
// The Morton order is cut into runs of gmax. A range is kept when its smallest enclosing cell
// (common key prefix of its first and last particle) holds at most `split` particles; otherwise
// it spans the boundary of two children of a populous cell (a jump of about a child's size),
// and it is cut at the end of its first particle's child. Greedy from the left of each run.

// If the smallest cell enclosing [a, e) holds more than `split` particles, the first level at
// which keys[a] and keys[e - 1] differ (1..21); otherwise 0 (also when the keys are equal).
__device__ int loose_range(const unsigned long long* keys, int n, int a, int e, int split)
{
    const unsigned long long diff = keys[a] ^ keys[e - 1];
    if (diff == 0) return 0;
    const int ld = (65 - (63 - __clzll((long long)diff))) / 3;
    const int s = 63 - 3 * (ld - 1);  // prefix shift of the enclosing cell (level ld - 1)
    const unsigned long long P = keys[a] >> s;
    const int w0 = max(0, a - split), w1 = min(n, e + split);
    if (w0 > 0 && (keys[w0] >> s) == P) return ld;      // reaches below a - split
    if (w1 < n && (keys[w1 - 1] >> s) == P) return ld;  // reaches beyond e + split
    int lo = w0, hi = a;                                   // first index with prefix P
    while (lo < hi) { const int m = (lo + hi) >> 1; if ((keys[m] >> s) < P) lo = m + 1; else hi = m; }
    int lo2 = e, hi2 = w1;                                 // first index past the cell
    while (lo2 < hi2) { const int m = (lo2 + hi2) >> 1; if ((keys[m] >> s) <= P) lo2 = m + 1; else hi2 = m; }
    return lo2 - lo > split ? ld : 0;
}

__device__ int run_groups(const unsigned long long* keys, int n, int a, int b, int split, int* gb,
                          int* gc, bool write)
{
    int ng = 0;
    while (a < b) {
        int e = b, ld;
        while (e - a > 1 && (ld = loose_range(keys, n, a, e, split)) > 0) {
            const int s = 63 - 3 * ld;  // cut at the end of keys[a]'s child at level ld
            const unsigned long long P = keys[a] >> s;
            int lo = a + 1, hi = e - 1;
            while (lo < hi) { const int m = (lo + hi) >> 1; if ((keys[m] >> s) <= P) lo = m + 1; else hi = m; }
            e = lo;
        }
        if (write) { gb[ng] = a; gc[ng] = e - a; }
        ng++;
        a = e;
    }
    return ng;
}

extern "C" __global__ void __launch_bounds__(TREE_THREADS)
make_groups(int n, int gmax, int split, int gcap, const int* __restrict__ lb,
            const unsigned long long* __restrict__ keys, int* group_begin, int* group_count,
            unsigned long long* status, unsigned long long* desc, unsigned long long* counter,
            unsigned epoch)
{
    __shared__ int scratch[9];
    __shared__ unsigned s_prefix;
    __shared__ int s_tile;
    if (status[ST_FLAGS] & FLAG_CELLS) return;
    if (blockIdx.x == 0 && threadIdx.x == 0) status[ST_CELLS] = (unsigned long long)lb[MAX_LEVEL + 2];
    const int nruns = (n + gmax - 1) / gmax;
    const int ntiles = (nruns + TREE_THREADS - 1) / TREE_THREADS;
    for (int tile = next_tile(counter, &s_tile); tile < ntiles; tile = next_tile(counter, &s_tile)) {
        const int r = tile * TREE_THREADS + threadIdx.x;
        const int a = r * gmax, b = min(n, a + gmax);
        const int ng = r < nruns ? run_groups(keys, n, a, b, split, 0, 0, false) : 0;
        int total;
        const int excl = block_excl_scan256(ng, scratch, &total);
        const unsigned prefix = lookback_prefix(desc, tile, (unsigned)total, epoch, &s_prefix);
        const int first = (int)prefix + excl;
        if (ng) {
            if (first + ng > gcap) atomicOr(&status[ST_FLAGS], (unsigned long long)FLAG_GROUPS);
            else run_groups(keys, n, a, b, split, group_begin + first, group_count + first, true);
        }
        if (tile == ntiles - 1 && threadIdx.x == 0) {
            const int end = (int)prefix + total;
            status[ST_GROUPS] = (unsigned long long)(end < gcap ? end : gcap);
        }
    }
}

// ---- multipoles ---------------------------------------------------------------------------
// Float64 moments of a cell: mass, centre of mass, Q about it (xx, yy, zz, xy, xz, yz).
struct Moments { double m, cx, cy, cz, q[6]; };

__device__ __forceinline__ double out_c(const Moments& q, int a)
{
    return a == 0 ? q.cx : (a == 1 ? q.cy : q.cz);
}

// Geometric centre of a cell (as the CPU oracle: lo + (corner / 2**(21-l) + 0.5) * L / 2**l).
__device__ __forceinline__ unsigned compact3(unsigned long long v)
{
    v &= 0x1249249249249249ull;
    v = (v | (v >> 2)) & 0x10c30c30c30c30c3ull;
    v = (v | (v >> 4)) & 0x100f00f00f00f00full;
    v = (v | (v >> 8)) & 0x1f0000ff0000ffull;
    v = (v | (v >> 16)) & 0x1f00000000ffffull;
    v = (v | (v >> 32)) & 0x1fffffull;
    return (unsigned)v;
}

__device__ __forceinline__ void cell_center(unsigned long long key, int l, const float* frame,
                                            double* g, double* size)
{
    const int shift = 3 * (MAX_LEVEL - l);
    unsigned long long pre = shift >= 64 ? 0ull : (key >> shift) << shift;
    const double s = (double)frame[3] / (double)(1 << l), cells = (double)(1 << (MAX_LEVEL - l));
    g[0] = (double)frame[0] + ((double)compact3(pre >> 2) / cells + 0.5) * s;
    g[1] = (double)frame[1] + ((double)compact3(pre >> 1) / cells + 0.5) * s;
    g[2] = (double)frame[2] + ((double)compact3(pre) / cells + 0.5) * s;
    *size = s;
}

// One level, deepest first: leaves sum their particles about the geometric centre, parents
// combine their children (parallel axes); both finish as the CPU oracle does. Stored for the
// walk: cell_mac (com, r_open^2), cell_q0 (3Q xx yy zz xy), cell_q1 (3Q xz yz, trQ/2, mass).
// The opening radius l/theta + delta takes l and delta from the box of the cell's particles
// (box: 6 floats a cell, the children's boxes for their parents), as Bonsai's: the longest
// side, and the centre of mass's distance from the box's centre. A refit (the particles moved
// since the cells were built: same order, no new keys) so bounds where they are now.
// ml2 (or null): M l^2 a cell, for the relative MAC.
// A cell has 2 lanes of a warp, 4 or 8 where a level has few cells for the grid (the upper
// levels): they load its children (or particles) at once instead of one after another and
// sum them by shuffles (one H100, 4M: 2 lanes against 1 on the big levels 0.39 -> 0.36 ms,
// 4 lanes 0.42).
extern "C" __global__ void __launch_bounds__(TREE_THREADS)
multipoles_level(int l, double theta, const int* __restrict__ lb,
                 const int* __restrict__ begin, const int* __restrict__ count,
                 const int* __restrict__ child, const int* __restrict__ nchild,
                 const unsigned long long* __restrict__ keys, const float4* __restrict__ pos,
                 const float* __restrict__ frame, Moments* mom, float4* __restrict__ cell_mac,
                 float4* __restrict__ cell_q0, float4* __restrict__ cell_q1,
                 int2* __restrict__ cell_link, const unsigned long long* __restrict__ status,
                 float* __restrict__ box, float* __restrict__ ml2)
{
    if (status[ST_FLAGS] & FLAG_CELLS) return;
    const int lo = lb[l], hi = lb[l + 1], cells = hi - lo, threads = gridDim.x * blockDim.x;
    const int lanes = cells <= threads / 8 ? 8 : cells <= threads / 4 ? 4 : 2;
    const int per_warp = 32 / lanes, sub = threadIdx.x % lanes;  // a warp's cells, the lane's
    const int warps = threads >> 5, warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    for (int c0 = lo + warp * per_warp; c0 < hi; c0 += warps * per_warp) {  // warp-uniform
        const int c = c0 + (int)(threadIdx.x & 31) / lanes;
        const bool valid = c < hi;
        double g[3] = {0, 0, 0}, size = 0;
        const int b = valid ? begin[c] : 0, nk = valid ? nchild[c] : 0;
        if (valid) cell_center(keys[b], l, frame, g, &size);  // size: then the box's longest side
        double m = 0, f[3] = {0, 0, 0}, s[6] = {0, 0, 0, 0, 0, 0};
        float bl[3] = {INFINITY, INFINITY, INFINITY}, bh[3] = {-INFINITY, -INFINITY, -INFINITY};
        if (!valid) {
        } else if (nk == 0) {
            for (int i = b + sub; i < b + count[c]; i += lanes) {
                float4 p = pos[i];
                bl[0] = fminf(bl[0], p.x); bl[1] = fminf(bl[1], p.y); bl[2] = fminf(bl[2], p.z);
                bh[0] = fmaxf(bh[0], p.x); bh[1] = fmaxf(bh[1], p.y); bh[2] = fmaxf(bh[2], p.z);
                double pm = p.w, dx = (double)p.x - g[0], dy = (double)p.y - g[1],
                       dz = (double)p.z - g[2];
                m += pm; f[0] += pm * dx; f[1] += pm * dy; f[2] += pm * dz;
                s[0] += pm * dx * dx; s[1] += pm * dy * dy; s[2] += pm * dz * dz;
                s[3] += pm * dx * dy; s[4] += pm * dx * dz; s[5] += pm * dy * dz;
            }
        } else {
            for (int k = child[c] + sub; k < child[c] + nk; k += lanes) {
                const Moments& q = mom[k];
                for (int a = 0; a < 3; a++) {
                    bl[a] = fminf(bl[a], box[6 * k + a]);
                    bh[a] = fmaxf(bh[a], box[6 * k + 3 + a]);
                }
                double km = q.m, dx = q.cx - g[0], dy = q.cy - g[1], dz = q.cz - g[2];
                m += km; f[0] += km * dx; f[1] += km * dy; f[2] += km * dz;
                s[0] += q.q[0] + km * dx * dx; s[1] += q.q[1] + km * dy * dy;
                s[2] += q.q[2] + km * dz * dz; s[3] += q.q[3] + km * dx * dy;
                s[4] += q.q[4] + km * dx * dz; s[5] += q.q[5] + km * dy * dz;
            }
        }
        for (int o = lanes >> 1; o > 0; o >>= 1) {  // the cell's lanes: sums, bounds
            m += __shfl_xor_sync(FULL_MASK, m, o);
            for (int a = 0; a < 3; a++) {
                f[a] += __shfl_xor_sync(FULL_MASK, f[a], o);
                bl[a] = fminf(bl[a], __shfl_xor_sync(FULL_MASK, bl[a], o));
                bh[a] = fmaxf(bh[a], __shfl_xor_sync(FULL_MASK, bh[a], o));
            }
            for (int a = 0; a < 6; a++) s[a] += __shfl_xor_sync(FULL_MASK, s[a], o);
        }
        if (!valid || sub) continue;
        const double safe = m > 0 ? m : 1.0;
        const double sh[3] = {f[0] / safe, f[1] / safe, f[2] / safe};
        Moments out;
        out.m = m; out.cx = g[0] + sh[0]; out.cy = g[1] + sh[1]; out.cz = g[2] + sh[2];
        out.q[0] = s[0] - f[0] * sh[0]; out.q[1] = s[1] - f[1] * sh[1];
        out.q[2] = s[2] - f[2] * sh[2]; out.q[3] = s[3] - f[0] * sh[1];
        out.q[4] = s[4] - f[0] * sh[2]; out.q[5] = s[5] - f[1] * sh[2];
        mom[c] = out;
        double e[3];  // l and delta from the particles' box
        size = 0;
        for (int a = 0; a < 3; a++) {
            box[6 * c + a] = bl[a];
            box[6 * c + 3 + a] = bh[a];
            e[a] = out_c(out, a) - 0.5 * ((double)bl[a] + (double)bh[a]);
            size = fmax(size, (double)bh[a] - (double)bl[a]);
        }
        const double delta = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
        if (ml2) ml2[c] = (float)(m * size * size);
        const float r_open = (float)(size / theta + delta);  // squared in float32, as the CPU
        cell_mac[c] = make_float4((float)out.cx, (float)out.cy, (float)out.cz,
                                  __fmul_rn(r_open, r_open));
        // the walk's form: 3Q and trQ / 2
        cell_q0[c] = make_float4((float)(3 * out.q[0]), (float)(3 * out.q[1]),
                                 (float)(3 * out.q[2]), (float)(3 * out.q[3]));
        cell_q1[c] = make_float4((float)(3 * out.q[4]), (float)(3 * out.q[5]),
                                 (float)(0.5 * (out.q[0] + out.q[1] + out.q[2])), (float)m);
        cell_link[c] = nk ? make_int2(child[c], nk) : make_int2(b, -count[c]);
    }
}

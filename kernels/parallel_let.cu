// LET export on the device (engines/parallel/let_device.py): the local tree walked level by
// level against every remote domain's boxes at once with let.export's acceptance test
// (float32, no FMA, the MARGIN), the next frontier compacted by a prefix sum in the same
// launch (children of opened cells, in order, so each LET keeps the tree's breadth-first
// order), then the LETs' cell rows (let.CELL_WIDTH float32, the link columns as int32 bits)
// and particles (x y z m) gathered into flat output buffers, LET after LET. Appended to the
// engine's module (nbody_common.cuh).
//
// ctl (int32): [0,1] and [2,3]: (start, size) of the frontier in `list`, the two slots
// alternating by level; [4] cells C and [5] particles P of all LETs; [6], [7] the same, what
// the output needs; [8] bit 1: the output overflowed, bit 2: the frontier list did.

#define LET_T 256  // threads of every LET kernel but let_scan_top
#define LET_ROW 17  // let.CELL_WIDTH
#define LC_C 4
#define LC_P 5
#define LC_OUT_C 6
#define LC_OUT_P 7
#define LC_OVERFLOW 8

__device__ __forceinline__ int let_block_excl(int v, int* total)
{
    __shared__ int sums[LET_T / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int x = v;
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(FULL_MASK, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        int w = lane < LET_T / 32 ? sums[lane] : 0;
        for (int o = 1; o < LET_T / 32; o <<= 1) {
            const int y = __shfl_up_sync(FULL_MASK, w, o);
            if (lane >= o) w += y;
        }
        if (lane < LET_T / 32) sums[lane] = w;
    }
    __syncthreads();
    const int before = warp ? sums[warp - 1] : 0;
    *total = sums[LET_T / 32 - 1];
    __syncthreads();
    return before + x - v;
}

// -- an exclusive scan of vals[0, *n) into out, *n read on the device; block b of the grid
// -- takes the chunk [b * chunk, (b + 1) * chunk)
__device__ __forceinline__ int let_chunk(int n) { return (n + gridDim.x - 1) / gridDim.x; }

extern "C" __global__ void __launch_bounds__(LET_T)
let_scan_reduce(const int* __restrict__ vals, const int* n_ptr, int* __restrict__ block_sums)
{
    const int n = *n_ptr, chunk = let_chunk(n);
    const int lo = blockIdx.x * chunk, hi = min(n, lo + chunk);
    int s = 0;
    for (int i = lo + threadIdx.x; i < hi; i += LET_T) s += vals[i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL_MASK, s, o);
    __shared__ int w[LET_T / 32];
    if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        int t = 0;
        for (int k = 0; k < LET_T / 32; k++) t += w[k];
        block_sums[blockIdx.x] = t;
    }
}

extern "C" __global__ void let_scan_top(int* __restrict__ block_sums, int blocks, int* total)
{
    __shared__ int s[1024];
    for (int i = threadIdx.x; i < blocks; i += blockDim.x) s[i] = block_sums[i];
    __syncthreads();
    if (threadIdx.x == 0) {
        int run = 0;
        for (int i = 0; i < blocks; i++) {
            const int v = s[i];
            s[i] = run;
            run += v;
        }
        *total = run;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < blocks; i += blockDim.x) block_sums[i] = s[i];
}

extern "C" __global__ void __launch_bounds__(LET_T)
let_scan_apply(const int* __restrict__ vals, const int* n_ptr,
               const int* __restrict__ block_sums, int* __restrict__ out)
{
    const int n = *n_ptr, chunk = let_chunk(n);
    const int lo = blockIdx.x * chunk, hi = min(n, lo + chunk);
    int run = block_sums[blockIdx.x];
    for (int base = lo; base < hi; base += LET_T) {  // uniform trip count in the block
        const int i = base + threadIdx.x;
        const int v = i < hi ? vals[i] : 0;
        int tile;
        const int e = let_block_excl(v, &tile);
        if (i < hi) out[i] = run + e;
        run += tile;
    }
}

// -- the walk, one level a launch, of every remote domain's LET at once: the frontier holds
// -- (cell, domain) pairs, tag = domain << 5 | level, ordered by domain within each level (the
// -- roots in domain order, children in their parents' order), so each domain's entries, in
// -- list order, are its LET in let.export's breadth-first order. seg[level][d] (nq + 1 a
// -- level): the list index of the level's first entry of domain d or later.
#define LET_TAG_BITS 5  // the level in a tag (levels < 32)
extern "C" __global__ void let_begin(int* ctl, int* list, int* tag, int nq)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j == 0) {
        ctl[0] = 0; ctl[1] = nq; ctl[2] = nq; ctl[3] = 0;  // the frontier: a root a domain
        ctl[LC_C] = ctl[LC_P] = ctl[LC_OUT_C] = ctl[LC_OUT_P] = ctl[LC_OVERFLOW] = 0;
    }
    if (j < nq) {
        list[j] = 0;
        tag[j] = j << LET_TAG_BITS;
    }
}

// squared distance from c to the box (lo x y z, hi x y z), float32 term by term without FMA
__device__ __forceinline__ float let_box_d2(const float* __restrict__ box, float x, float y,
                                            float z)
{
    const float dx = fmaxf(fmaxf(__fsub_rn(box[0], x), __fsub_rn(x, box[3])), 0.0f);
    const float dy = fmaxf(fmaxf(__fsub_rn(box[1], y), __fsub_rn(y, box[4])), 0.0f);
    const float dz = fmaxf(fmaxf(__fsub_rn(box[2], z), __fsub_rn(z, box[5])), 0.0f);
    return __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
}

// A cell is accepted when its centre of mass is beyond its opening radius from every box of
// the remote domain (its groups' boxes). The boxes come with a tree of their unions
// (let_device.box_tree: `depth` levels of nodes from the root, each the union of up to
// LET_FAN consecutive nodes of the level below, the boxes themselves the level `depth`;
// level l's nodes start at start[l], count[l] of them): a node whose union is far is skipped
// whole (its boxes are at least as far, also in float32), so the result is that of testing
// every box; the first near box opens the cell.
#define LET_FAN 8
// A warp a cell: the lanes test the LET_FAN children of 4 near nodes at once (32 boxes a
// round), pushing the near ones on the warp's stack (shared memory), a few rounds a level of
// box_tree rather than a node at a time. stack: LET_WSTACK ints of this warp; one that would
// overflow answers "open" (safe: the LET grows; not met, as a round pushes at most 32 nodes
// and the stack holds about that many a level, MAX_DEPTH levels).
#define LET_WSTACK 384
__device__ bool let_accepts(float4 m, const float* __restrict__ boxes,
                            const float* __restrict__ nodes, const int* __restrict__ start,
                            const int* __restrict__ count, int depth, float margin, int* stack)
{
    const int lane = threadIdx.x & 31, q = lane >> 3, kid = lane & (LET_FAN - 1);
    const float r2 = __fmul_rn(m.w, margin);
    {
        const float* root = depth > 0 ? nodes + 6 * start[0] : boxes;
        if (let_box_d2(root, m.x, m.y, m.z) > r2) return true;
        if (depth == 0) return false;
    }
    int sp = 1;
    if (lane == 0) stack[0] = 0;  // (level << 27) | index: the root, near
    __syncwarp();
    while (sp > 0) {
        const int take = min(sp, 32 / LET_FAN);
        sp -= take;
        int l = 0, ci = 0;
        bool near = false;
        if (q < take) {
            const int e = stack[sp + q];
            l = (e >> 27) + 1;
            ci = (e & ((1 << 27) - 1)) * LET_FAN + kid;
            if (ci < count[l]) {
                const float* box = l < depth ? nodes + 6 * (start[l] + ci) : boxes + 6 * ci;
                near = let_box_d2(box, m.x, m.y, m.z) <= r2;
            }
        }
        __syncwarp();
        if (__any_sync(FULL_MASK, near && l == depth)) return false;  // a near box: open
        const unsigned push = __ballot_sync(FULL_MASK, near);
        if (sp + __popc(push) > LET_WSTACK) return false;
        if (near) stack[sp + __popc(push & ((1u << lane) - 1u))] = (l << 27) | ci;
        sp += __popc(push);
        __syncwarp();
    }
    return true;
}

// Each frontier cell of this level tested against its domain's boxes (dtab: 5 ints a domain,
// offsets in floats from `base` of its boxes, box_tree nodes, level starts and counts, and
// its depth), a warp a cell: acc[] for let_level.
extern "C" __global__ void __launch_bounds__(LET_T)
let_test(int level, const float4* __restrict__ mac, const int* __restrict__ list,
         const int* __restrict__ tag, const int* ctl, const float* __restrict__ base,
         const int* __restrict__ dtab, float margin, int* __restrict__ acc)
{
    __shared__ int stacks[LET_T / 32][LET_WSTACK];
    const int s = level & 1, first = ctl[2 * s], size = ctl[2 * s + 1];
    const int warp = threadIdx.x >> 5, warps = gridDim.x * (LET_T / 32);
    for (int i = blockIdx.x * (LET_T / 32) + warp; i < size; i += warps) {
        const int c = list[first + i], d = tag[first + i] >> LET_TAG_BITS;
        const int* t = dtab + 5 * d;
        const bool a = let_accepts(mac[c], base + t[0], base + t[1],
                                   (const int*)(base + t[2]), (const int*)(base + t[3]), t[4],
                                   margin, stacks[warp]);
        if ((threadIdx.x & 31) == 0) acc[first + i] = a;
    }
}

// One level of the walk in one launch, after let_test: the exclusive scan of the opened
// cells' children (decoupled look-back: tiles taken in order) and the children written as
// the next frontier, in order (kid0: where a cell's children start in `list`). A frontier
// past `cap` entries is cut and flagged (LC_OVERFLOW bit 2: the host grows the list and
// queues the export again).
extern "C" __global__ void __launch_bounds__(LET_T)
let_level(int level, const int* __restrict__ nchild, const int* __restrict__ child, int* list,
          int* tag, int* ctl, int cap, int nq, const int* __restrict__ acc,
          int* __restrict__ kid0, int* __restrict__ seg, unsigned long long* desc,
          unsigned long long* counter, unsigned epoch)
{
    __shared__ unsigned s_prefix;
    __shared__ int s_tile;
    const int s = level & 1, first = ctl[2 * s], size = ctl[2 * s + 1], next = first + size;
    const int ntiles = (size + LET_T - 1) / LET_T;
    int* my_seg = seg + level * (nq + 1);
    if (size == 0 && blockIdx.x == 0 && threadIdx.x == 0) {
        ctl[2 * (1 - s)] = next;
        ctl[2 * (1 - s) + 1] = 0;
        for (int d = 0; d <= nq; d++) my_seg[d] = first;
    }
    for (int tile = next_tile(counter, &s_tile); tile < ntiles;
         tile = next_tile(counter, &s_tile)) {
        const int i = tile * LET_T + threadIdx.x;
        int o = 0, c = 0, d = 0;
        if (i < size) {
            c = list[first + i];
            d = tag[first + i] >> LET_TAG_BITS;
            o = acc[first + i] ? 0 : nchild[c];
            const int prev = i > 0 ? tag[first + i - 1] >> LET_TAG_BITS : -1;
            for (int e = prev + 1; e <= d; e++) my_seg[e] = first + i;
            if (i == size - 1)
                for (int e = d + 1; e <= nq; e++) my_seg[e] = next;
        }
        int total;
        const int e = let_block_excl(o, &total);
        const int prefix = (int)lookback_prefix(desc, tile, (unsigned)total, epoch, &s_prefix);
        const int at = next + prefix + e;
        if (i < size) {
            kid0[first + i] = o > 0 ? at : 0;
            const int c0 = o > 0 ? child[c] : 0, t = (d << LET_TAG_BITS) | (level + 1);
            for (int j = 0; j < o && at + j < cap; j++) {
                list[at + j] = c0 + j;
                tag[at + j] = t;
            }
        }
        if (tile == ntiles - 1 && threadIdx.x == 0) {
            ctl[2 * (1 - s)] = next;
            ctl[2 * (1 - s) + 1] = min(prefix + total, cap - next);
            if (prefix + total > cap - next) ctl[LC_OVERFLOW] |= 2;
        }
    }
}

// Where each entry goes in the output, LET after LET (domain order), each LET level after
// level: lay[d] the first row of domain d's LET (lay[nq]: all rows), and from lay[nq + 1]
// rowbase[level][d], so that entry i of that level and domain is row rowbase + i.
extern "C" __global__ void let_layout(const int* __restrict__ seg, int levels, int nq, int* ctl,
                                      int* __restrict__ lay)
{
    if (blockIdx.x || threadIdx.x) return;
    int* rowbase = lay + nq + 1;
    int run = 0;
    for (int d = 0; d < nq; d++) {
        lay[d] = run;
        for (int l = 0; l < levels; l++) {
            const int a = seg[l * (nq + 1) + d], b = seg[l * (nq + 1) + d + 1];
            rowbase[l * nq + d] = run - a;
            run += b - a;
        }
        rowbase[levels * nq + d] = run;  // (no cell of level `levels`: the tree ends above)
    }
    lay[nq] = run;
    ctl[LC_C] = run;
}

__device__ __forceinline__ int let_row(const int* __restrict__ lay, int nq, int t, int i)
{
    return lay[nq + 1 + (t & ((1 << LET_TAG_BITS) - 1)) * nq + (t >> LET_TAG_BITS)] + i;
}

// box_tree's level from the one below: node j the union of nodes (or boxes) LET_FAN j ..
extern "C" __global__ void __launch_bounds__(LET_T)
let_box_union(const float* __restrict__ below, int n_below, float* __restrict__ out, int n_out)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n_out; j += gridDim.x * blockDim.x) {
        float u[6] = {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
        for (int k = LET_FAN * j; k < min(LET_FAN * j + LET_FAN, n_below); k++)
            for (int a = 0; a < 3; a++) {
                u[a] = fminf(u[a], below[6 * k + a]);
                u[3 + a] = fmaxf(u[3 + a], below[6 * k + 3 + a]);
            }
        for (int a = 0; a < 6; a++) out[6 * j + a] = u[a];
    }
}

// the boxes (lo, hi) of the walk's groups (their particles, sorted order): a warp a group
extern "C" __global__ void __launch_bounds__(LET_T)
let_group_boxes(const float4* __restrict__ pos, const int* __restrict__ group_begin,
                const int* __restrict__ group_count, const unsigned long long* status,
                float* __restrict__ out)
{
    const int ngroups = (int)status[ST_GROUPS], lane = threadIdx.x & 31;
    const int warps = gridDim.x * (blockDim.x >> 5);
    for (int g = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; g < ngroups; g += warps) {
        const int b = group_begin[g], n = group_count[g];
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (int i = lane; i < n; i += 32) {
            const float4 p = pos[b + i];
            lo[0] = fminf(lo[0], p.x); lo[1] = fminf(lo[1], p.y); lo[2] = fminf(lo[2], p.z);
            hi[0] = fmaxf(hi[0], p.x); hi[1] = fmaxf(hi[1], p.y); hi[2] = fmaxf(hi[2], p.z);
        }
        for (int a = 0; a < 3; a++)
            for (int o = 16; o > 0; o >>= 1) {
                lo[a] = fminf(lo[a], __shfl_xor_sync(FULL_MASK, lo[a], o));
                hi[a] = fmaxf(hi[a], __shfl_xor_sync(FULL_MASK, hi[a], o));
            }
        if (lane < 3) {
            out[6 * g + lane] = lane == 0 ? lo[0] : lane == 1 ? lo[1] : lo[2];
            out[6 * g + 3 + lane] = lane == 0 ? hi[0] : lane == 1 ? hi[1] : hi[2];
        }
    }
}

// -- the rows
// the particles a cell sends (an opened leaf, or an accepted one of at most pp_leaf), placed
// at its row; then their exclusive scan in row order (look-back, as let_level): where they
// start in the output's particles
extern "C" __global__ void __launch_bounds__(LET_T)
let_bodies(const int* ctl, const int* __restrict__ list, const int* __restrict__ tag,
           const int* __restrict__ acc, const int* __restrict__ nchild,
           const int* __restrict__ count, int pp_leaf, const int* __restrict__ lay, int nq,
           int* __restrict__ bodies)
{
    const int n = ctl[LC_C];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int c = list[i];
        const bool leaf = (!acc[i] || count[c] <= pp_leaf) && nchild[c] == 0;
        bodies[let_row(lay, nq, tag[i], i)] = leaf ? count[c] : 0;
    }
}

extern "C" __global__ void __launch_bounds__(LET_T)
let_bodies_scan(int* ctl, const int* __restrict__ bodies, int* __restrict__ body0,
                unsigned long long* desc, unsigned long long* counter, unsigned epoch)
{
    __shared__ unsigned s_prefix;
    __shared__ int s_tile;
    const int n = ctl[LC_C], ntiles = (n + LET_T - 1) / LET_T;
    if (n == 0 && blockIdx.x == 0 && threadIdx.x == 0) ctl[LC_P] = 0;
    for (int tile = next_tile(counter, &s_tile); tile < ntiles;
         tile = next_tile(counter, &s_tile)) {
        const int i = tile * LET_T + threadIdx.x;
        const int v = i < n ? bodies[i] : 0;
        int total;
        const int e = let_block_excl(v, &total);
        const int prefix = (int)lookback_prefix(desc, tile, (unsigned)total, epoch, &s_prefix);
        if (i < n) body0[i] = prefix + e;
        if (tile == ntiles - 1 && threadIdx.x == 0) ctl[LC_P] = prefix + total;
    }
}

// each LET's links and particle starts are its own (from its first row and particle)
extern "C" __global__ void __launch_bounds__(LET_T)
let_rows(const int* ctl, const int* __restrict__ list, const int* __restrict__ tag,
         const int* __restrict__ acc, const int* __restrict__ kid0,
         const int* __restrict__ bodies, const int* __restrict__ body0,
         const int* __restrict__ lay, int nq, const float4* __restrict__ mac,
         const float4* __restrict__ q0, const float4* __restrict__ q1,
         const int* __restrict__ nchild, const int* __restrict__ begin,
         const float4* __restrict__ pos, float* __restrict__ out_cells,
         float4* __restrict__ out_parts, int cap_cells, int cap_parts)
{
    const int n = ctl[LC_C], np = ctl[LC_P];
    if (n > cap_cells || np > cap_parts || ctl[LC_OVERFLOW]) return;  // let_end flags it
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int c = list[i], t = tag[i], d = t >> LET_TAG_BITS, r = let_row(lay, nq, t, i);
        const int first = lay[d];
        const float4 m = mac[c], a = q0[c], b = q1[c];
        const int kids = acc[i] ? 0 : nchild[c];
        float* row = out_cells + (size_t)LET_ROW * r;
        row[0] = m.x; row[1] = m.y; row[2] = m.z; row[3] = b.w;
        row[4] = __fdiv_rn(a.x, 3.0f); row[5] = __fdiv_rn(a.y, 3.0f);  // stored as 3Q
        row[6] = __fdiv_rn(a.z, 3.0f); row[7] = __fdiv_rn(a.w, 3.0f);
        row[8] = __fdiv_rn(b.x, 3.0f); row[9] = __fdiv_rn(b.y, 3.0f);
        row[10] = 0.0f; row[11] = 0.0f;  // size, delta: the CPU walks' (r_open^2 comes along)
        row[12] = __int_as_float(kids > 0 ? let_row(lay, nq, t + 1, kid0[i]) - first : 0);
        row[13] = __int_as_float(kids);
        row[14] = __int_as_float(body0[r] - body0[first]);
        row[15] = __int_as_float(bodies[r]);
        row[16] = m.w;
        const int nb = bodies[r], p0 = begin[c];
        float4* dst = out_parts + body0[r];
        for (int j = 0; j < nb; j++) dst[j] = pos[p0 + j];
    }
}

// counts[2 d], [2 d + 1]: cells and particles of domain d's LET; the totals (what the output
// needs, also past an overflow) in ctl
extern "C" __global__ void let_end(int* ctl, const int* __restrict__ lay,
                                   const int* __restrict__ body0, int* counts, int nq,
                                   int cap_cells, int cap_parts)
{
    const int n = ctl[LC_C], np = ctl[LC_P];
    for (int d = blockIdx.x * blockDim.x + threadIdx.x; d < nq; d += gridDim.x * blockDim.x) {
        const int lo = lay[d], hi = lay[d + 1];
        counts[2 * d] = hi - lo;
        counts[2 * d + 1] = (hi < n ? body0[hi] : np) - (lo < n ? body0[lo] : np);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        if (n > cap_cells || np > cap_parts) ctl[LC_OVERFLOW] |= 1;
        ctl[LC_OUT_C] = n;
        ctl[LC_OUT_P] = np;
    }
}

// -- the import: the received LET rows (LET after LET, cells starting at starts[k], their
// -- particles at starts[K + k]) into the walk's forest layout, as let.device_forest builds it:
// -- cell 0 an always-opened root whose children are the K LET roots (cells 1..K), the other
// -- cells of LET k after all the roots; the LETs' particles follow the n_local local ones.
// -- base: the forest's cells start there (behind a copy of the local tree's: walk_roots).
extern "C" __global__ void __launch_bounds__(LET_T)
let_forest(const float* __restrict__ rows, int n_rows, const int* __restrict__ starts, int K,
           int n_local, int base, float4* __restrict__ mac, float4* __restrict__ q0,
           float4* __restrict__ q1, int2* __restrict__ link)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        mac[base] = make_float4(0.f, 0.f, 0.f, INFINITY);
        q0[base] = q1[base] = make_float4(0.f, 0.f, 0.f, 0.f);
        link[base] = make_int2(base + 1, K);
    }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n_rows; i += gridDim.x * blockDim.x) {
        int k = 0;
        while (k + 1 < K && starts[k + 1] <= i) k++;
        const int j = i - starts[k], at = base + (j == 0 ? 1 + k : K + i - k);
        const float* r = rows + (size_t)LET_ROW * i;
        mac[at] = make_float4(r[0], r[1], r[2], r[16]);
        q0[at] = make_float4(__fmul_rn(3.f, r[4]), __fmul_rn(3.f, r[5]), __fmul_rn(3.f, r[6]),
                             __fmul_rn(3.f, r[7]));
        q1[at] = make_float4(__fmul_rn(3.f, r[8]), __fmul_rn(3.f, r[9]),
                             __fmul_rn(0.5f, __fadd_rn(__fadd_rn(r[4], r[5]), r[6])), r[3]);
        const int kid0 = __float_as_int(r[12]), kids = __float_as_int(r[13]);
        const int body0 = __float_as_int(r[14]), bodies = __float_as_int(r[15]);
        link[at] = kids > 0 ? make_int2(base + K + starts[k] - k + kid0, kids)
                            : make_int2(bodies > 0 ? n_local + starts[K + k] + body0 : 0, -bodies);
    }
}

// walk phase: one warp per group (<= 64 particles, two per lane when > 32), persistent warps
// taking groups from a counter. The warp tests 32 cells at a time from its cell stack against
// Bonsai's MAC (d > l/theta + delta, d from the group's box to the centre of mass); accepted
// cells and the particles of opened (or accepted tiny) leaves are compacted with ballots and
// prefix sums into shared-memory lists; every full list of 32 is evaluated from a shared tile.
// walk_ext adds forces on an active subset (groups of the compacted active particles, through
// idx) and the relative MAC (G M l^2 / d^4 <= alpha |a_old|, with d > l + delta in cell_mac).
#ifndef WALK_THREADS
#define WALK_THREADS 256
#endif
#define WALK_WARPS (WALK_THREADS / 32)
#ifndef WALK_MIN_BLOCKS
#define WALK_MIN_BLOCKS 3  // blocks per SM: <= 80 registers, no spills (2 blocks: 8% slower)
#endif

// MUFU.RSQ alone: rsqrtf also rescales denormal arguments (3 more instructions a pair).
// Denormal r2 count as 0 (GUARD below drops them).
__device__ __forceinline__ float rsqrt_ftz(float x)
{
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

struct WarpShared {
    int pc[64];       // accepted cells waiting for evaluation
    int pp[64];       // particles of opened leaves waiting for evaluation
    int scan[32];     // prefix sums of a segment expansion
    float4 ta[32];    // tile: particle (x, y, z, m) or cell (com, mass)
    float4 tb[32];    // cell: Q' = 3Q - trQ I: xx, yy, zz, xy
    float4 tc[32];    // cell: Q' xz, yz, -trQ eps^2
};

// Expand each lane's segment (first, cnt) into consecutive items (lane order) in chunks of at
// most 32: emit(t, item, valid, nvalid) with t the item's place among all of the round's items.
template <class Emit>
__device__ __forceinline__ int expand(int first, int cnt, int lane, int* s_scan, Emit emit)
{
    const int incl = warp_incl_scan(cnt, lane);
    const int total = __shfl_sync(FULL_MASK, incl, 31);
    if (total == 0) return 0;
    s_scan[lane] = incl;
    __syncwarp();
    for (int base = 0; base < total; base += 32) {
        const int t = base + lane;
        int s = 0;
#pragma unroll
        for (int step = 16; step > 0; step >>= 1)
            if (s_scan[s + step - 1] <= t) s += step;
        s = min(s, 31);
        const int src_first = __shfl_sync(FULL_MASK, first, s);
        const int src_excl = __shfl_sync(FULL_MASK, incl - cnt, s);
        emit(t, src_first + (t - src_excl), t < total, min(32, total - base));
    }
    __syncwarp();
    return total;
}

// Drop the first n of a warp's list of count entries (< 64): the rest move to the front.
__device__ __forceinline__ int drop_front(int* list, int count, int n, int lane)
{
    const int rest = count - n;
    const int v = lane < rest ? list[n + lane] : 0;
    __syncwarp();
    if (lane < rest) list[lane] = v;
    __syncwarp();
    return rest;
}

// GUARD: eps == 0, so a particle's pair with itself has r2 = 0 and must give nothing (as must
// a pair closer than 1e-19, whose r2 the ftz rsqrt flushes to 0).
template <int NI, bool GUARD>
__device__ __forceinline__ void eval_pp(const WarpShared& sh, int n, const float* x, const float* y,
                                        const float* z, float eps2, float* ax, float* ay,
                                        float* az, float* pot)
{
#pragma unroll 4
    for (int j = 0; j < n; j++) {
        const float4 q = sh.ta[j];
#pragma unroll
        for (int k = 0; k < NI; k++) {
            const float dx = q.x - x[k], dy = q.y - y[k], dz = q.z - z[k];
            const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2)));
            float rinv = rsqrt_ftz(r2);
            if (GUARD) rinv = r2 >= 1.17549435e-38f ? rinv : 0.f;  // FLT_MIN
            const float mr = q.w * rinv;
            const float mr3 = mr * rinv * rinv;
            ax[k] = fmaf(mr3, dx, ax[k]);
            ay[k] = fmaf(mr3, dy, ay[k]);
            az[k] = fmaf(mr3, dz, az[k]);
            pot[k] -= mr;
        }
    }
}

// Monopole + quadrupole, Plummer-softened, with d = com - x, r^2 = |d|^2 + eps^2 and the
// traceless Q' = 3Q - trQ I (d.Q'.d = 3 dQd - trQ |d|^2), so that with S = d.Q'.d - trQ eps^2:
//   phi = -M/r - 1/2 (3 dQd/r^5 - trQ/r^3) = -M/r - S/(2 r^5)
//   a   = d (M/r^3 + 5/2 S/r^7) - Q'd/r^5
// The tile holds Q' (tb: xx yy zz xy, tc: xz yz) and -trQ eps^2 (tc.z). Accepted cells lie
// outside the group's box, so r2 > 0 always.
template <int NI>
__device__ __forceinline__ void eval_pc(const WarpShared& sh, int n, const float* x, const float* y,
                                        const float* z, float eps2, float* ax, float* ay,
                                        float* az, float* pot)
{
#pragma unroll 2
    for (int j = 0; j < n; j++) {
        const float4 a = sh.ta[j], b = sh.tb[j], c = sh.tc[j];
#pragma unroll
        for (int k = 0; k < NI; k++) {
            const float dx = a.x - x[k], dy = a.y - y[k], dz = a.z - z[k];
            const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2)));
            const float rinv = rsqrt_ftz(r2);
            const float qx = fmaf(b.x, dx, fmaf(b.w, dy, c.x * dz));   // Q'd
            const float qy = fmaf(b.w, dx, fmaf(b.y, dy, c.y * dz));
            const float qz = fmaf(c.x, dx, fmaf(c.y, dy, b.z * dz));
            const float S = fmaf(dx, qx, fmaf(dy, qy, fmaf(dz, qz, c.z)));
            const float rinv2 = rinv * rinv;
            const float rinv3 = rinv * rinv2;
            const float rinv5 = rinv3 * rinv2;
            const float s5 = S * rinv5;
            const float coef = fmaf(s5, 2.5f * rinv2, a.w * rinv3);
            ax[k] = fmaf(coef, dx, fmaf(-rinv5, qx, ax[k]));
            ay[k] = fmaf(coef, dy, fmaf(-rinv5, qy, ay[k]));
            az[k] = fmaf(coef, dz, fmaf(-rinv5, qz, az[k]));
            pot[k] = fmaf(-a.w, rinv, fmaf(-0.5f, s5, pot[k]));
        }
    }
}

struct WalkArgs {
    const float4* pos;
    const float4* cell_mac;
    const float4* cell_q0;
    const float4* cell_q1;
    const int2* cell_link;
    float4* acc;
    unsigned long long* status;
    float eps2, G;
    int pp_leaf;  // accepted leaves of at most this many particles give p-p pairs
    const int* idx;    // walk_ext: the group's particles are idx[gb..gb+gc) (null: gb..gb+gc)
    const float* ml2;  // walk_ext: M l^2 a cell for the relative MAC (null: Bonsai's MAC)
    float alpha;
    float sx, sy, sz;  // walk_ext, image walks (ghost boxes): the targets moved by -(sx, sy, sz)
    int image;  // walk_ext: 1: an image's forces added to acc (no self pair), 0: acc written
    int root1, root2;  // the walk's roots: root1 (0: the tree's) and root2 (-1: none)
    int g_lo, g_hi;  // the groups walked: [g_lo, min(g_hi, groups built))
};

// EXT: the walk_ext features (particles through A.idx, the relative MAC), compiled out of walk.
template <int NI, bool GUARD, bool EXT>
__device__ void walk_group(const WalkArgs& A, int gb, int gc, WarpShared& sh, int* stack,
                           int& e_pp, int& e_pc)
{
    const int lane = threadIdx.x & 31;
    float x[NI], y[NI], z[NI], m[NI], ax[NI], ay[NI], az[NI], pot[NI];
    int si[NI];  // the particles' places in the sorted order
    const int s0 = EXT && A.idx ? A.idx[gb] : gb;
    float4 p0 = A.pos[s0];
    if (EXT) { p0.x -= A.sx; p0.y -= A.sy; p0.z -= A.sz; }
    float mn[3] = {p0.x, p0.y, p0.z}, mx[3] = {p0.x, p0.y, p0.z};
    float amin = INFINITY;  // the relative MAC: the group's smallest last |a|
#pragma unroll
    for (int k = 0; k < NI; k++) {
        const int i = lane + 32 * k;
        si[k] = i < gc ? (EXT && A.idx ? A.idx[gb + i] : gb + i) : s0;
        float4 p = A.pos[EXT ? si[k] : (i < gc ? gb + i : gb)];
        if (EXT) { p.x -= A.sx; p.y -= A.sy; p.z -= A.sz; }
        x[k] = p.x; y[k] = p.y; z[k] = p.z; m[k] = p.w;
        ax[k] = ay[k] = az[k] = pot[k] = 0.f;
        mn[0] = fminf(mn[0], p.x); mn[1] = fminf(mn[1], p.y); mn[2] = fminf(mn[2], p.z);
        mx[0] = fmaxf(mx[0], p.x); mx[1] = fmaxf(mx[1], p.y); mx[2] = fmaxf(mx[2], p.z);
        if (EXT && A.ml2) {
            const float4 a = A.acc[si[k]];
            amin = fminf(amin, sqrtf(a.x * a.x + a.y * a.y + a.z * a.z));
        }
    }
#pragma unroll
    for (int a = 0; a < 3; a++)
        for (int o = 16; o > 0; o >>= 1) {
            mn[a] = fminf(mn[a], __shfl_xor_sync(FULL_MASK, mn[a], o));
            mx[a] = fmaxf(mx[a], __shfl_xor_sync(FULL_MASK, mx[a], o));
        }
    float ginv = 0.f;  // G / (alpha |a|_min)
    if (EXT && A.ml2) {
        for (int o = 16; o > 0; o >>= 1) amin = fminf(amin, __shfl_xor_sync(FULL_MASK, amin, o));
        ginv = (float)((double)A.G / ((double)A.alpha * (double)amin));
    }
    const int s_lo = s0, s_hi = EXT && A.idx ? A.idx[gb + gc - 1] : gb + gc - 1;
    const unsigned lt_mask = (1u << lane) - 1u;
    unsigned long long self = 0;  // group particles whose own leaf gave p-p pairs
    unsigned mine = 0;  // EXT with idx: bit k: particle k's own leaf gave p-p pairs
    int top = A.root2 >= 0 ? 2 : 1, npc = 0, npp = 0;
    if (lane == 0) { stack[0] = A.root1; stack[1] = A.root2; }
    __syncwarp();

    auto flush_pc = [&](int n) {
        if (lane < n) {
            const int c = sh.pc[lane];
            const float4 mac = A.cell_mac[c], q0 = A.cell_q0[c], q1 = A.cell_q1[c];
            const float tr = 2.f * q1.z;  // cells store 3Q and trQ / 2
            sh.ta[lane] = make_float4(mac.x, mac.y, mac.z, q1.w);
            sh.tb[lane] = make_float4(q0.x - tr, q0.y - tr, q0.z - tr, q0.w);
            sh.tc[lane] = make_float4(q1.x, q1.y, -tr * A.eps2, 0.f);
        }
        __syncwarp();
        eval_pc<NI>(sh, n, x, y, z, A.eps2, ax, ay, az, pot);
        e_pc += n;
        npc = drop_front(sh.pc, npc, n, lane);
    };
    auto flush_pp = [&](int n) {
        if (lane < n) sh.ta[lane] = A.pos[sh.pp[lane]];
        __syncwarp();
        eval_pp<NI, GUARD>(sh, n, x, y, z, A.eps2, ax, ay, az, pot);
        e_pp += n;
        npp = drop_front(sh.pp, npp, n, lane);
    };

    while (top > 0) {
        const int take = min(top, 32);
        top -= take;
        const int c = lane < take ? stack[top + lane] : -1;
        __syncwarp();
        bool accept = false;
        int kid_first = 0, kids = 0, leaf_first = 0, leaf_n = 0;
        if (c >= 0) {
            const float4 mac = A.cell_mac[c];
            const int2 link = A.cell_link[c];
            // distance from the group's box to the centre of mass (0 inside)
            const float dx = fmaxf(fmaxf(mn[0] - mac.x, mac.x - mx[0]), 0.f);
            const float dy = fmaxf(fmaxf(mn[1] - mac.y, mac.y - mx[1]), 0.f);
            const float dz = fmaxf(fmaxf(mn[2] - mac.z, mac.z - mx[2]), 0.f);
            const float d2 = __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)),
                                       __fmul_rn(dz, dz));
            bool far = d2 > mac.w;
            if (EXT && A.ml2) far = far && __fmul_rn(d2, d2) > __fmul_rn(A.ml2[c], ginv);
            // an opened leaf, or an accepted one of <= pp_leaf particles (exact pairs cost
            // less than its multipole), gives p-p pairs
            if (link.y < 0 && (!far || -link.y <= A.pp_leaf)) {
                leaf_first = link.x; leaf_n = -link.y;
            } else if (far) accept = true;
            else { kid_first = link.x; kids = link.y; }
        }
        // accepted cells -> p-c list
        const unsigned ball = __ballot_sync(FULL_MASK, accept);
        if (accept) sh.pc[npc + __popc(ball & lt_mask)] = c;
        npc += __popc(ball);
        __syncwarp();
        if (npc >= 32) flush_pc(32);
        // children of opened cells -> stack
        const int pushed = expand(kid_first, kids, lane, sh.scan,
            [&](int t, int item, bool ok, int) {
                if (ok && top + t < STACK_CAP) stack[top + t] = item;
            });
        if (top + pushed > STACK_CAP) {
            if (lane == 0) atomicOr(&A.status[ST_FLAGS], (unsigned long long)FLAG_STACK);
            top = STACK_CAP;
        } else {
            top += pushed;
        }
        // particles of opened leaves -> p-p list
        if (EXT && A.idx) {  // which of the group's particles lie in this round's leaves
            unsigned hits = __ballot_sync(FULL_MASK, leaf_n && leaf_first <= s_hi
                                                     && leaf_first + leaf_n > s_lo);
            while (hits) {
                const int src = __ffs(hits) - 1;
                hits &= hits - 1;
                const int lf = __shfl_sync(FULL_MASK, leaf_first, src);
                const int le = lf + __shfl_sync(FULL_MASK, leaf_n, src);
#pragma unroll
                for (int k = 0; k < NI; k++)
                    if (si[k] >= lf && si[k] < le) mine |= 1u << k;
            }
        } else if (leaf_n) {
            const int lo = max(leaf_first, gb) - gb, hi = min(leaf_first + leaf_n, gb + gc) - gb;
            if (lo < hi)
                self |= (hi >= 64 ? ~0ull : (1ull << hi) - 1ull) & ~((1ull << lo) - 1ull);
        }
        expand(leaf_first, leaf_n, lane, sh.scan,
            [&](int, int item, bool ok, int nvalid) {
                if (ok) sh.pp[npp + lane] = item;
                npp += nvalid;
                __syncwarp();
                if (npp >= 32) flush_pp(32);
            });
        __syncwarp();
    }
    if (npc) flush_pc(npc);
    if (npp) flush_pp(npp);
    for (int o = 16; o > 0; o >>= 1) self |= __shfl_xor_sync(FULL_MASK, self, o);
#pragma unroll
    for (int k = 0; k < NI; k++) {
        const int i = lane + 32 * k;
        if (i < gc) {
            const bool own = EXT && A.idx ? (mine >> k) & 1u : (self >> i) & 1ull;
            if (own && A.eps2 > 0.f && !(EXT && A.image))
                pot[k] += m[k] * rsqrtf(A.eps2);  // self pair
            float4 out = make_float4(A.G * ax[k], A.G * ay[k], A.G * az[k], A.G * pot[k]);
            if (EXT && A.image) {  // an image walk adds to the box's own forces
                const float4 a0 = A.acc[si[k]];
                out.x += a0.x; out.y += a0.y; out.z += a0.z; out.w += a0.w;
            }
            A.acc[EXT ? si[k] : gb + i] = out;
        }
    }
}

template <bool EXT>
__device__ void walk_groups(const WalkArgs& A, const int* __restrict__ group_begin,
                            const int* __restrict__ group_count, int* stacks)
{
    __shared__ WarpShared shared[WALK_WARPS];
    if (A.status[ST_FLAGS] & (FLAG_CELLS | FLAG_GROUPS)) return;  // the host rebuilds, walks again
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    WarpShared& sh = shared[warp];
    int* stack = stacks + (size_t)(blockIdx.x * WALK_WARPS + warp) * STACK_CAP;
    const int ngroups = min((int)A.status[ST_GROUPS], A.g_hi);
    unsigned long long n_pp = 0, n_pc = 0;
    while (true) {
        int g = 0;
        if (lane == 0) g = A.g_lo + (int)atomicAdd(&A.status[ST_WALK_NEXT], 1ull);
        g = __shfl_sync(FULL_MASK, g, 0);
        if (g >= ngroups) break;
        const int gb = group_begin[g], gc = group_count[g];
        int e_pp = 0, e_pc = 0;
        if (A.eps2 > 0.f) {
            if (gc > 32) walk_group<2, false, EXT>(A, gb, gc, sh, stack, e_pp, e_pc);
            else walk_group<1, false, EXT>(A, gb, gc, sh, stack, e_pp, e_pc);
        } else {
            if (gc > 32) walk_group<2, true, EXT>(A, gb, gc, sh, stack, e_pp, e_pc);
            else walk_group<1, true, EXT>(A, gb, gc, sh, stack, e_pp, e_pc);
        }
        n_pp += (unsigned long long)e_pp * gc;
        n_pc += (unsigned long long)e_pc * gc;
    }
    if (lane == 0 && (n_pp || n_pc)) {
        atomicAdd(&A.status[ST_PP], n_pp);
        atomicAdd(&A.status[ST_PC], n_pc);
    }
}

extern "C" __global__ void __launch_bounds__(WALK_THREADS, WALK_MIN_BLOCKS)
walk(const float4* __restrict__ pos, const float4* __restrict__ cell_mac,
     const float4* __restrict__ cell_q0, const float4* __restrict__ cell_q1,
     const int2* __restrict__ cell_link, const int* __restrict__ group_begin,
     const int* __restrict__ group_count, float4* __restrict__ acc, int* stacks,
     unsigned long long* status, float eps2, float G, int pp_leaf)
{
    const WalkArgs A{pos, cell_mac, cell_q0, cell_q1, cell_link, acc, status, eps2, G, pp_leaf,
                     nullptr, nullptr, 0.f, 0.f, 0.f, 0.f, 0, 0, -1, 0, 0x7fffffff};
    walk_groups<false>(A, group_begin, group_count, stacks);
}

// walk from roots root1 and root2 (-1: none) by the groups [g_lo, g_hi): a parallel rank's
// local tree (cell 0) and the forest of its LETs behind it (cell root2, whose links point past
// the local cells and particles) walked as one, or either alone.
extern "C" __global__ void __launch_bounds__(WALK_THREADS, WALK_MIN_BLOCKS)
walk_roots(const float4* __restrict__ pos, const float4* __restrict__ cell_mac,
           const float4* __restrict__ cell_q0, const float4* __restrict__ cell_q1,
           const int2* __restrict__ cell_link, const int* __restrict__ group_begin,
           const int* __restrict__ group_count, float4* __restrict__ acc, int* stacks,
           unsigned long long* status, float eps2, float G, int pp_leaf, int root1, int root2,
           int g_lo, int g_hi)
{
    const WalkArgs A{pos, cell_mac, cell_q0, cell_q1, cell_link, acc, status, eps2, G, pp_leaf,
                     nullptr, nullptr, 0.f, 0.f, 0.f, 0.f, 0, root1, root2, g_lo, g_hi};
    walk_groups<false>(A, group_begin, group_count, stacks);
}

// idx: the groups' particles through the active list (or null); ml2: the relative MAC (or null);
// (sx, sy, sz), image: a ghost box's walk (the shearing sheet), see WalkArgs.
extern "C" __global__ void __launch_bounds__(WALK_THREADS, WALK_MIN_BLOCKS)
walk_ext(const float4* __restrict__ pos, const float4* __restrict__ cell_mac,
         const float4* __restrict__ cell_q0, const float4* __restrict__ cell_q1,
         const int2* __restrict__ cell_link, const int* __restrict__ group_begin,
         const int* __restrict__ group_count, float4* __restrict__ acc, int* stacks,
         unsigned long long* status, float eps2, float G, int pp_leaf, const int* idx,
         const float* ml2, float alpha, float sx, float sy, float sz, int image)
{
    const WalkArgs A{pos, cell_mac, cell_q0, cell_q1, cell_link, acc, status, eps2, G, pp_leaf,
                     idx, ml2, alpha, sx, sy, sz, image, 0, -1, 0, 0x7fffffff};
    walk_groups<true>(A, group_begin, group_count, stacks);
}

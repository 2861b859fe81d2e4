// 4th-order Hermite with block time steps on the GPU (engines/integrators/hermite_gpu.py), after
// Sapporo2 (Bedorf et al. 2015): the integrator's state is float64 (x, v, a, j: 3 doubles a
// particle, time in integer ticks, level); the j-particles are predicted into double-single
// positions (hi + lo floats) so that differences keep float64-like relative accuracy while the
// force arithmetic is float32. Forces of an active block: (blockIdx.x) i-blocks of 256/W
// i-particles, W lanes per i-particle, (blockIdx.y) slices of the j-particles; each thread
// sums runs of HF_RUN terms in float32 and the runs with Kahan's compensation, the W lanes
// meet by warp shuffles and a warp per particle sums the slices in float64, so that a
// 1-particle block still fills the GPU. Pairs closer than eps (the self pair) are left out.
#define HF_THREADS 256
#define HF_PART 7  // ax ay az jx jy jz pot
#define HF_RUN 32  // terms summed in plain float32 before they join the compensated sums
// The block schedule lives on the device (long long words), so the host queues block steps
// without waiting: herm_schedule writes the next block time, its lowest level and size and
// the force kernel's shape; the other kernels read them.
#define SC_T 0        // the current tick
#define SC_TNEXT 1    // the block's tick
#define SC_KMIN 2     // levels >= KMIN are active
#define SC_NACT 3     // active particles (0: the engine step is over, kernels do nothing)
#define SC_W 4        // lanes per i-particle
#define SC_IBLOCKS 5
#define SC_SLICES 6   // j-slices
#define SC_JSLICE 7   // j-particles a slice
#define SC_STRIDE 8   // slots a slice in the partial sums
#define SC_TEND 9     // 2^L: the end of the engine step
#define SC_BLOCKS 10  // block steps done in this engine step
#define SC_ACTIVE 11  // active particles summed over them
#define SC_SHARED 12  // 1: every particle on the finest level in use (a shared step)
#define SC_EQUAL 13   // the level all take this block (shared), else -1
#define SC_TARGET 14  // thread blocks that fill the device
#define SC_WORDS 16

__device__ __forceinline__ float4 ds_split(double x, double y, double z, float w, float4* lo)
{
    const float4 hi = make_float4((float)x, (float)y, (float)z, w);
    *lo = make_float4((float)(x - hi.x), (float)(y - hi.y), (float)(z - hi.z), 0.f);
    return hi;
}

// Take the engine's float32 state as the float64 state; masses go to pj.w.
extern "C" __global__ void herm_init(const float4* __restrict__ pos, const float4* __restrict__ vel,
                                     int n, double* __restrict__ x, double* __restrict__ v,
                                     long long* __restrict__ tl, float4* __restrict__ pj)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float4 p = pos[i], u = vel[i];
        x[3 * i] = p.x; x[3 * i + 1] = p.y; x[3 * i + 2] = p.z;
        v[3 * i] = u.x; v[3 * i + 1] = u.y; v[3 * i + 2] = u.z;
        tl[i] = 0;
        pj[i].w = p.w;
    }
}

// Predict every particle to tick t: double-single positions (pj, pl) and float velocities;
// those on levels >= kmin join the active block (act, counted in nact, which the kernel that
// consumes the block zeroes again). Slot order is free: no result depends on it.
extern "C" __global__ void herm_predict(int n, const long long* __restrict__ sc, double tick,
                                        const double* __restrict__ x, const double* __restrict__ v,
                                        const double* __restrict__ a, const double* __restrict__ j,
                                        const long long* __restrict__ tl,
                                        int* __restrict__ lev, float4* __restrict__ pj,
                                        float4* __restrict__ pl, float4* __restrict__ pv,
                                        int* __restrict__ act, int* __restrict__ nact)
{
    if (sc[SC_NACT] == 0) return;
    const long long t = sc[SC_TNEXT];
    const int kmin = (int)sc[SC_KMIN], equal = (int)sc[SC_EQUAL];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (equal >= 0) lev[i] = equal;
        const double tau = (double)(t - tl[i]) * tick, t2 = 0.5 * tau, t3 = tau / 3.0;
        double xp[3], vp[3];
        for (int k = 0; k < 3; k++) {
            const int c = 3 * i + k;
            xp[k] = x[c] + tau * (v[c] + t2 * (a[c] + t3 * j[c]));
            vp[k] = v[c] + tau * (a[c] + t2 * j[c]);
        }
        float4 lo;
        pj[i] = ds_split(xp[0], xp[1], xp[2], pj[i].w, &lo);
        pl[i] = lo;
        pv[i] = make_float4((float)vp[0], (float)vp[1], (float)vp[2], 0.f);
        if (lev[i] >= kmin) act[atomicAdd(nact, 1)] = i;
    }
}

// Partial a, j and potential (without G) of active slots against the j-slice blockIdx.y of
// `jslice` particles. part[(c * nslices + slice) * stride + slot].
extern "C" __global__ void __launch_bounds__(HF_THREADS)
herm_forces(const long long* __restrict__ sc, const int* __restrict__ act, int n,
            const float4* __restrict__ pj, const float4* __restrict__ pl,
            const float4* __restrict__ pv, float eps2, double* __restrict__ part)
{
    __shared__ float4 sh[3][HF_THREADS];
    const int nact = (int)sc[SC_NACT], W = (int)sc[SC_W], iblocks = (int)sc[SC_IBLOCKS];
    const int nslices = (int)sc[SC_SLICES], jslice = (int)sc[SC_JSLICE];
    const int stride = (int)sc[SC_STRIDE];
    const int ni = HF_THREADS / W, ii = threadIdx.x / W, w = threadIdx.x % W;
    for (int vb = blockIdx.x; vb < (nact ? iblocks * nslices : 0); vb += gridDim.x) {
    const int ib = vb % iblocks, slice = vb / iblocks;
    const int slot = ib * ni + ii;
    const int i = act[min(slot, nact - 1)];
    const float4 hi = pj[i], lo = pl[i], vi = pv[i];
    const int j0 = slice * jslice, j1 = min(n, j0 + jslice);
    float sum[HF_PART] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};  // Kahan sums of the runs
    float err[HF_PART] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int base = j0; base < j1; base += HF_THREADS) {
        const int jj = base + threadIdx.x;
        if (jj < j1) {
            sh[0][threadIdx.x] = pj[jj]; sh[1][threadIdx.x] = pl[jj]; sh[2][threadIdx.x] = pv[jj];
        }
        __syncthreads();
        const int m = min(HF_THREADS, j1 - base);
        for (int k0 = w; k0 < m; k0 += HF_RUN * W) {  // float32 sums of HF_RUN terms
        float f[HF_PART] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        const int k1 = min(m, k0 + HF_RUN * W);
#pragma unroll 4
        for (int k = k0; k < k1; k += W) {
            const float4 q = sh[0][k], ql = sh[1][k], qv = sh[2][k];
            const float dx = (q.x - hi.x) + (ql.x - lo.x);
            const float dy = (q.y - hi.y) + (ql.y - lo.y);
            const float dz = (q.z - hi.z) + (ql.z - lo.z);
            const float dvx = qv.x - vi.x, dvy = qv.y - vi.y, dvz = qv.z - vi.z;
            const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2)));
            const float rinv = r2 > eps2 ? rsqrtf(r2) : 0.f;  // no self pair, none at r = 0
            const float rinv2 = rinv * rinv, mr = q.w * rinv, mr3 = mr * rinv2;
            const float alpha = 3.f * fmaf(dx, dvx, fmaf(dy, dvy, dz * dvz)) * rinv2;
            f[0] = fmaf(mr3, dx, f[0]); f[1] = fmaf(mr3, dy, f[1]); f[2] = fmaf(mr3, dz, f[2]);
            f[3] = fmaf(mr3, fmaf(-alpha, dx, dvx), f[3]);
            f[4] = fmaf(mr3, fmaf(-alpha, dy, dvy), f[4]);
            f[5] = fmaf(mr3, fmaf(-alpha, dz, dvz), f[5]);
            f[6] -= mr;
        }
#pragma unroll
        for (int c = 0; c < HF_PART; c++) {
            const float y = f[c] - err[c], t = sum[c] + y;
            err[c] = (t - sum[c]) - y;
            sum[c] = t;
        }
        }
        __syncthreads();
    }
    double tot[HF_PART];
#pragma unroll
    for (int c = 0; c < HF_PART; c++) {
        tot[c] = (double)sum[c] - (double)err[c];
        for (int off = W / 2; off > 0; off /= 2)
            tot[c] += __shfl_down_sync(0xffffffffu, tot[c], off, W);
    }
    if (w == 0 && slot < nact)
        for (int c = 0; c < HF_PART; c++) part[(c * nslices + slice) * stride + slot] = tot[c];
    }
}

// a, j and potential of slot s from the slices, summed by the 32 lanes of a warp (every lane
// gets the totals), times G.
__device__ __forceinline__ void herm_sum(int s, int nslices, int stride,
                                         const double* __restrict__ part, double G, double* a1,
                                         double* j1, double* pot)
{
    const int lane = threadIdx.x & 31;
    double f[HF_PART];
    for (int c = 0; c < HF_PART; c++) {
        double acc = 0.0;
        for (int sl = lane; sl < nslices; sl += 32) acc += part[(c * nslices + sl) * stride + s];
        for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
        f[c] = acc;
    }
    for (int k = 0; k < 3; k++) { a1[k] = G * f[k]; j1[k] = G * f[3 + k]; }
    *pot = G * f[6];
}

// Warp-wide loops over the slots of the active block (one warp a slot; lane 0 writes).
#define FOR_SLOTS(s, nact) \
    for (int s = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; s < (nact); \
         s += (gridDim.x * blockDim.x) >> 5)

__device__ __forceinline__ double norm3(const double* u)
{
    return sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
}

__device__ __forceinline__ int clip_level(double k, int L)
{
    return (int)fmin(fmax(k, 0.0), (double)L);
}

// First forces (all particles at tick 0) or forces again after eps changed: a and j, and the
// initial levels from eta_s |a| / |j|, eta_s = eta / 2 (when set_levels).
extern "C" __global__ void herm_first(int nact, const int* __restrict__ act, int nslices, int stride,
                                      const double* __restrict__ part, double G,
                                      double* __restrict__ a,
                                      double* __restrict__ j, int set_levels, double dt,
                                      double eta, int L, int* __restrict__ lev,
                                      int* __restrict__ nactc)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) *nactc = 0;
    FOR_SLOTS(s, nact) {
        const int i = act[s];
        double a1[3], j1[3], pot;
        herm_sum(s, nslices, stride, part, G, a1, j1, &pot);
        if ((threadIdx.x & 31) != 0) continue;
        for (int k = 0; k < 3; k++) { a[3 * i + k] = a1[k]; j[3 * i + k] = j1[k]; }
        if (set_levels) {
            const double dt0 = 0.5 * eta * norm3(a1) / norm3(j1);
            const double k = ceil(log2(dt / dt0));
            lev[i] = isfinite(k) ? clip_level(k, L) : (dt0 > 0.0 ? 0 : L);
        }
    }
}

// The next block after sc[SC_T] from the level counts (one thread): its tick, lowest active
// level and size, and the force kernel's shape (as hermite_gpu.launch_shape); NACT = 0 once
// the engine step's end is reached. Shared steps first move every particle to the finest
// level in use.
extern "C" __global__ void herm_schedule(long long* __restrict__ sc, int* __restrict__ counts,
                                         int n, int L)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const long long t = sc[SC_T];
    sc[SC_EQUAL] = -1;
    if (t >= sc[SC_TEND]) { sc[SC_NACT] = 0; return; }
    if (sc[SC_SHARED]) {
        int fine = 0;
        for (int k = 0; k <= L; k++) if (counts[k]) fine = k;
        if (counts[fine] != n) {
            for (int k = 0; k <= L; k++) counts[k] = 0;
            counts[fine] = n;
            sc[SC_EQUAL] = fine;
        }
    }
    long long tnext = 0;
    for (int k = 0; k <= L; k++) {
        if (!counts[k]) continue;
        const long long d = 1ll << (L - k), tk = (t / d + 1) * d;
        if (tnext == 0 || tk < tnext) tnext = tk;
    }
    const int kmin = max(0, L - (__ffsll(tnext) - 1));
    long long nact = 0;
    for (int k = kmin; k <= L; k++) nact += counts[k];
    int w = 1;
    while (w < 32 && w * nact < HF_THREADS) w *= 2;
    const long long ni = HF_THREADS / w, iblocks = (nact + ni - 1) / ni;
    const long long target = sc[SC_TARGET], tiles = (n + HF_THREADS - 1) / HF_THREADS;
    const long long slices = max(1ll, min((target + iblocks - 1) / iblocks, tiles));
    long long jslice = (n + slices - 1) / slices;
    jslice = (jslice + HF_THREADS - 1) / HF_THREADS * HF_THREADS;
    sc[SC_TNEXT] = tnext; sc[SC_KMIN] = kmin; sc[SC_NACT] = nact; sc[SC_W] = w;
    sc[SC_IBLOCKS] = iblocks; sc[SC_SLICES] = (n + jslice - 1) / jslice; sc[SC_JSLICE] = jslice;
    sc[SC_STRIDE] = iblocks * ni;
    sc[SC_BLOCKS] += 1; sc[SC_ACTIVE] += nact;
}

// Levels occupied: counts[k] (counts zeroed before).
extern "C" __global__ void herm_count(int n, const int* __restrict__ lev, int* __restrict__ counts)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&counts[lev[i]], 1);
}

// Every level moved by `shift` (dt changed) or set to `to` (>= 0: the shared step).
extern "C" __global__ void herm_shift(int n, int shift, int to, int L, int* __restrict__ lev)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        lev[i] = to >= 0 ? to : min(max(lev[i] + shift, 0), L);
}

// Correct the active block at tick t (Hut, Makino & McMillan 1995) and give each particle its
// next level from Aarseth's criterion (halved as often as needed, doubled when t allows).
extern "C" __global__ void herm_correct(long long* __restrict__ sc, const int* __restrict__ act,
                                        const double* __restrict__ part, double G, double tick,
                                        double eta, int L, double* __restrict__ x,
                                        double* __restrict__ v, double* __restrict__ a,
                                        double* __restrict__ j, long long* __restrict__ tl,
                                        int* __restrict__ lev, int* __restrict__ counts,
                                        int* __restrict__ nactc)
{
    const int nact = (int)sc[SC_NACT], nslices = (int)sc[SC_SLICES];
    const int stride = (int)sc[SC_STRIDE];
    const long long t = sc[SC_TNEXT];
    if (blockIdx.x == 0 && threadIdx.x == 0) {  // no kernel here reads SC_T
        *nactc = 0;
        if (nact) sc[SC_T] = t;
    }
    FOR_SLOTS(s, nact) {
        const int i = act[s];
        double a1[3], j1[3], pot, a2[3], a3[3];
        herm_sum(s, nslices, stride, part, G, a1, j1, &pot);
        if ((threadIdx.x & 31) != 0) continue;
        const double h = (double)(t - tl[i]) * tick, h2 = h * h / 12.0;
        for (int k = 0; k < 3; k++) {
            const int c = 3 * i + k;
            const double a0 = a[c], j0 = j[c], v0 = v[c];
            const double v1 = v0 + 0.5 * h * (a0 + a1[k]) + h2 * (j0 - j1[k]);
            x[c] += 0.5 * h * (v0 + v1) + h2 * (a0 - a1[k]);
            v[c] = v1;
            a3[k] = (12.0 * (a0 - a1[k]) + 6.0 * h * (j0 + j1[k])) / (h * h * h);
            a2[k] = (-6.0 * (a0 - a1[k]) - h * (4.0 * j0 + 2.0 * j1[k])) / (h * h) + h * a3[k];
            a[c] = a1[k]; j[c] = j1[k];
        }
        const double na = norm3(a1), nj = norm3(j1), n2 = norm3(a2), n3 = norm3(a3);
        const double crit = sqrt(eta * (na * n2 + nj * nj) / (nj * n3 + n2 * n2));
        const int old = lev[i];
        const double finer = ceil(log2(h / crit));
        int k = old + (isfinite(finer) ? clip_level(finer, L) : (crit > 0.0 ? 0 : L));
        const long long twice = 1ll << (L - old + 1);
        if (old > 0 && crit >= 2.0 * h && t % twice == 0) k = old - 1;
        k = min(max(k, 0), L);
        tl[i] = t;
        if (k != old) {
            lev[i] = k;
            atomicSub(&counts[old], 1);
            atomicAdd(&counts[k], 1);
        }
    }
}

// The synchronised state back into the engine's float32 arrays (vel.w, the component, kept),
// with the accelerations and potentials of all particles (slot order: act), times reset to 0.
extern "C" __global__ void herm_store(int nact, const int* __restrict__ act, int nslices, int stride,
                                      const double* __restrict__ part, double G,
                                      const float4* __restrict__ pj, const double* __restrict__ x,
                                      const double* __restrict__ v, long long* __restrict__ tl,
                                      float4* __restrict__ pos, float4* __restrict__ vel,
                                      float4* __restrict__ acc, int* __restrict__ nactc)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) *nactc = 0;
    FOR_SLOTS(s, nact) {
        const int i = act[s];
        double a1[3], j1[3], pot;
        herm_sum(s, nslices, stride, part, G, a1, j1, &pot);
        if ((threadIdx.x & 31) != 0) continue;
        pos[i] = make_float4((float)x[3 * i], (float)x[3 * i + 1], (float)x[3 * i + 2], pj[i].w);
        const float w = vel[i].w;
        vel[i] = make_float4((float)v[3 * i], (float)v[3 * i + 1], (float)v[3 * i + 2], w);
        acc[i] = make_float4((float)a1[0], (float)a1[1], (float)a1[2], (float)pot);
        tl[i] = 0;
    }
}

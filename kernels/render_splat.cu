// Particle light splatted by CUDA straight into a mapped GL pixel buffer (the GPU engine's
// draw path): the same gaussian sprites as shaders/particles.{vert,frag}, summed with atomics
// instead of GL blending, which serialises on the dense cores of galaxies. The particles are
// read from the mapped GL vertex buffer (6 floats each: x, y, z, component, value, radius), which
// kernels/render_pack.cu filled, so drawing never touches the engine's arrays.
//
// P (floats, render/splat.py): [0, 16) model-view-projection, row major, for column vectors;
// [16, 48) rgb and weight per component code; 48 point size (px); 49 light per particle;
// 50 colour mode (0 component, 1 galaxy: value is the galaxy index, 2 colour map);
// 51, 52 value at the low and high end of the colour map; [56, 80) rgb per galaxy (8,
// wrapping); [80, 848) the colour map, 256 rgb entries (render/look.py colour_lut).
// light: width x height float4 (rgb, unused), row 0 at the bottom as in GL textures.

#define MAX_RADIUS 32

#define P_GALAXY 56
#define P_LUT 80
#define LUT_SIZE 256

__device__ __forceinline__ void add(float4 *p, float r, float g, float b)
{
#if __CUDA_ARCH__ >= 900
    atomicAdd(p, make_float4(r, g, b, 0.f));
#else
    atomicAdd(&p->x, r);
    atomicAdd(&p->y, g);
    atomicAdd(&p->z, b);
#endif
}

extern "C" __global__ void splat(const float *__restrict__ verts, int n,
                                 const float *__restrict__ P, float4 *light, int width,
                                 int height)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float *q = verts + 6 * (size_t)i;  // render/particles.py VERTEX_DTYPE
    float3 p = make_float3(q[0], q[1], q[2]);
    float cx = P[0] * p.x + P[1] * p.y + P[2] * p.z + P[3];
    float cy = P[4] * p.x + P[5] * p.y + P[6] * p.z + P[7];
    float cz = P[8] * p.x + P[9] * p.y + P[10] * p.z + P[11];
    float cw = P[12] * p.x + P[13] * p.y + P[14] * p.z + P[15];
    if (!(cw > 0.f) || fabsf(cx) > cw || fabsf(cy) > cw || fabsf(cz) > cw)
        return;  // GL drops points whose centre is outside the view volume
    int code = min(max((int)(q[3] + 0.5f), 0), 7);
    const float *cwt = P + 16 + 4 * code;
    float size = code == 3 ? 2.5f * P[48] : P[48];
    const float *c = cwt;
    int mode = (int)P[50];
    if (mode == 1) {
        c = P + P_GALAXY + 3 * (((int)(fmaxf(q[4], 0.f) + 0.5f)) & 7);
    } else if (mode == 2) {
        float t = fminf(fmaxf((q[4] - P[51]) / (P[52] - P[51]), 0.f), 1.f);
        c = P + P_LUT + 3 * (int)(t * (LUT_SIZE - 1) + 0.5f);
    }
    float3 rgb = make_float3(c[0], c[1], c[2]);
    float s = cwt[3] * P[49] * 9.f / fmaxf(size * size, 1.f);
    float xw = (cx / cw + 1.f) * 0.5f * width, yw = (cy / cw + 1.f) * 0.5f * height;
    float half = 0.5f * size, inv = 1.f / half;
    // pixels whose centre lies in the point's square, as GL rasterises points
    int x0 = max((int)ceilf(xw - half - 0.5f), 0), x1 = min((int)floorf(xw + half - 0.5f), width - 1);
    int y0 = max((int)ceilf(yw - half - 0.5f), 0), y1 = min((int)floorf(yw + half - 0.5f), height - 1);
    x1 = min(x1, x0 + 2 * MAX_RADIUS);
    y1 = min(y1, y0 + 2 * MAX_RADIUS);
    for (int py = y0; py <= y1; ++py) {
        float dy = (py + 0.5f - yw) * inv;
        for (int px = x0; px <= x1; ++px) {
            float dx = (px + 0.5f - xw) * inv;
            float r2 = dx * dx + dy * dy;
            if (r2 > 1.f)
                continue;
            float w = s * __expf(-4.f * r2);
            add(light + (size_t)py * width + px, rgb.x * w, rgb.y * w, rgb.z * w);
        }
    }
}

// Particle light splatted by CUDA straight into a mapped GL pixel buffer (the GPU engine's
// draw path): the same gaussian sprites as shaders/particles.{vert,frag}, summed with atomics
// instead of GL blending, which serialises on the dense cores of galaxies. The particles are
// read from the mapped GL vertex buffer (6 floats each: x, y, z, component, value, radius), which
// kernels/render_pack.cu filled, so drawing never touches the engine's arrays.
//
// P (floats, render/splat.py): [0, 16) model-view-projection, row major, for column vectors;
// [16, 48) rgb and weight per component code; 48 point size (px); 49 light per particle;
// 50 colour mode (0 component, 1 galaxy: value is the galaxy index, 2 colour map, 3 stellar
// population: rgb per component code at P_POPULATION);
// 51, 52 value at the low and high end of the colour map; [56, 80) rgb per galaxy (8,
// wrapping); [80, 848) the colour map, 256 rgb entries (render/look.py colour_lut);
// 848 the projection (PERSPECTIVE, FISHEYE, EQUIRECT), 849 the eye count (1 or 2), then each
// eye's EYE_FLOATS: matrix (16, row major), viewport (x, y, w, h px), the projection's number
// (light/kernel.py says what each projection does with them; render/projections/); after
// MAX_EYES eyes, 8 rgb population colours (light/device.py P_POPULATION).
// light: width x height float4 (rgb, unused), row 0 at the bottom as in GL textures.

#define MAX_RADIUS 32

#define P_GALAXY 56
#define P_LUT 80
#define LUT_SIZE 256
#define P_PROJ (P_LUT + 3 * LUT_SIZE)
#define P_EYES (P_PROJ + 2)
#define EYE_FLOATS 21
#define MAX_EYES 2
#define P_POPULATION (P_EYES + MAX_EYES * EYE_FLOATS)
#define PERSPECTIVE 0
#define FISHEYE 1
#define EQUIRECT 2

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

// The particle at p through eye e: false where dropped, else (x, y) px in its viewport, y up.
__device__ __forceinline__ bool splat_place(int proj, const float *e, float3 p, float &xw, float &yw)
{
    float cx = e[0] * p.x + e[1] * p.y + e[2] * p.z + e[3];
    float cy = e[4] * p.x + e[5] * p.y + e[6] * p.z + e[7];
    float cz = e[8] * p.x + e[9] * p.y + e[10] * p.z + e[11];
    float vw = e[18], vh = e[19];
    if (proj == PERSPECTIVE) {
        float cw = e[12] * p.x + e[13] * p.y + e[14] * p.z + e[15];
        if (!(cw > 0.f) || fabsf(cx) > cw || fabsf(cy) > cw || fabsf(cz) > cw)
            return false;  // GL drops points whose centre is outside the view volume
        xw = (cx / cw + 1.f) * 0.5f * vw;
        yw = (cy / cw + 1.f) * 0.5f * vh;
        return true;
    }
    if (proj == FISHEYE) {  // (cx, cy, cz): right, image up, the dome's axis
        float r = sqrtf(cx * cx + cy * cy), theta = atan2f(r, cz);
        if (theta > e[20] || r + fabsf(cz) < 1e-30f)
            return false;
        float k = theta / e[20] * 0.5f * fminf(vw, vh) / fmaxf(r, 1e-30f);
        xw = 0.5f * vw + cx * k;
        yw = 0.5f * vh + cy * k;
        return true;
    }
    // EQUIRECT: (cx, cy, cz): right, up, forward; e[20] the eye circle's signed radius
    float rho2 = cx * cx + cz * cz;
    if ((e[20] != 0.f && rho2 <= e[20] * e[20] * 1.0001f) || rho2 + cy * cy < 1e-30f)
        return false;
    float rho = sqrtf(rho2);
    float lon = atan2f(cx, cz) + asinf(e[20] / rho);
    if (lon > 3.14159265f)
        lon -= 6.28318531f;
    else if (lon < -3.14159265f)
        lon += 6.28318531f;
    float lat = atan2f(cy, sqrtf(rho2 - e[20] * e[20]));
    xw = (0.5f + lon * 0.159154943f) * vw;
    yw = (0.5f + lat * 0.318309886f) * vh;
    return true;
}

// One sprite centred at pixel (xw, yw) of the image, within pixels [vx0, vx1] x [vy0, vy1].
__device__ __forceinline__ void splat_sprite(float4 *light, int width, float3 rgb, float s, float half,
                                       float xw, float yw, int vx0, int vy0, int vx1, int vy1)
{
    float inv = 1.f / half;
    // pixels whose centre lies in the point's square, as GL rasterises points
    int x0 = max((int)ceilf(xw - half - 0.5f), vx0), x1 = min((int)floorf(xw + half - 0.5f), vx1);
    int y0 = max((int)ceilf(yw - half - 0.5f), vy0), y1 = min((int)floorf(yw + half - 0.5f), vy1);
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

extern "C" __global__ void splat(const float *__restrict__ verts, int n,
                                 const float *__restrict__ P, float4 *light, int width,
                                 int height)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float *q = verts + 6 * (size_t)i;  // render/particles.py VERTEX_DTYPE
    float3 p = make_float3(q[0], q[1], q[2]);
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
    } else if (mode == 3) {
        c = P + P_POPULATION + 3 * code;
    }
    float3 rgb = make_float3(c[0], c[1], c[2]);
    float s = cwt[3] * P[49] * 9.f / fmaxf(size * size, 1.f);
    float half = 0.5f * size;
    int proj = (int)P[P_PROJ], eyes = (int)P[P_PROJ + 1];
    for (int k = 0; k < eyes; ++k) {
        const float *e = P + P_EYES + EYE_FLOATS * k;
        float xw, yw;
        if (!splat_place(proj, e, p, xw, yw))
            continue;
        int vx0 = (int)e[16], vy0 = (int)e[17];
        int vx1 = min((int)(e[16] + e[18]) - 1, width - 1);
        int vy1 = min((int)(e[17] + e[19]) - 1, height - 1);
        for (int shift = -1; shift <= 1; ++shift) {  // EQUIRECT: the copy across the seam
            if (shift != 0 && (proj != EQUIRECT || !(shift == 1 ? xw - half < 0.f
                                                                : xw + half > e[18])))
                continue;
            splat_sprite(light, width, rgb, s, half, e[16] + xw + shift * e[18], e[17] + yw, vx0, vy0,
                   vx1, vy1);
        }
    }
}

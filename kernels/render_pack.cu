// Vertex data for the renderer, written straight into a mapped GL buffer (CUDA-GL interop).
// In: the engine's pos4 (x, y, z, mass), vel4 (vx, vy, vz, component code as float) and acc4
// (ax, ay, az, potential), radius (or null). Out: 6 floats per particle,
// galaxyview.render.particles.VERTEX_DTYPE: x, y, z, component, value, radius; value
// (render/colour.py DEVICE_VALUES): 0 speed, 1 potential, 2 specific binding energy
// v^2/2 + potential, 3 log10 of the mass, 4 vals[i] (values the engine computed on the
// device: galaxy, log10 density), 5 vz, 6 z.
// Vertex j is particle (j * stride) mod n. The engine keeps particles in Morton-key order, so
// neighbours in the buffer land on the same pixels; blending such runs back to back stalls on
// each pixel's read-modify-write. A stride coprime with n (a large prime) scatters them;
// stride = 1 keeps the engine's order.

extern "C" __global__ void pack_vertices(const float4 *__restrict__ pos4,
                                         const float4 *__restrict__ vel4,
                                         const float4 *__restrict__ acc4,
                                         const float *__restrict__ vals,
                                         const float *__restrict__ radius,
                                         float *__restrict__ out, int n,
                                         unsigned long long stride, int value)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    size_t i = (size_t)((j * stride) % (unsigned long long)n);
    float4 p = pos4[i];
    float4 v = vel4[i];
    float *o = out + 6 * (size_t)j;
    o[0] = p.x;
    o[1] = p.y;
    o[2] = p.z;
    o[3] = v.w;
    float v2 = v.x * v.x + v.y * v.y + v.z * v.z;
    o[4] = value == 0 ? sqrtf(v2) : value == 1 ? acc4[i].w
         : value == 2 ? 0.5f * v2 + acc4[i].w : value == 3 ? log10f(fmaxf(p.w, 1e-30f))
         : value == 5 ? v.z : value == 6 ? p.z : vals[i];
    o[5] = radius ? radius[i] : 0.0f;
}

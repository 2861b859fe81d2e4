// The kick and the drift the integrator modules share: y += rate h on x, y, z (w, the mass or
// the Component code, is left alone); a kick is advance(vel, acc), a drift advance(pos, vel).
extern "C" __global__ void advance(float4* __restrict__ y, const float4* __restrict__ rate,
                                   int n, float h)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 v = y[i];
        const float4 r = rate[i];
        v.x += r.x * h; v.y += r.y * h; v.z += r.z * h;
        y[i] = v;
    }
}

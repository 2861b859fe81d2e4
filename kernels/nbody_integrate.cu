// Kicks and drifts the integrator modules share (vel4.w, the Component code, is left alone).

// v += a h
extern "C" __global__ void kick(float4* __restrict__ vel, const float4* __restrict__ acc, int n,
                                float h)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 v = vel[i];
        const float4 a = acc[i];
        v.x += a.x * h; v.y += a.y * h; v.z += a.z * h;
        vel[i] = v;
    }
}

// x += v tau
extern "C" __global__ void drift(float4* __restrict__ pos, const float4* __restrict__ vel, int n,
                                 float tau)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 p = pos[i];
        const float4 v = vel[i];
        p.x += v.x * tau; p.y += v.y * tau; p.z += v.z * tau;
        pos[i] = p;
    }
}

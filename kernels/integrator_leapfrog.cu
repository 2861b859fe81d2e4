// Kick-drift-kick leapfrog with a shared time step (engines/integrators/leapfrog_gpu.py).
// vel4.w carries the particle's Component code and is left untouched.

extern "C" __global__ void kick_drift(float4* __restrict__ pos, float4* __restrict__ vel,
                                      const float4* __restrict__ acc, int n, float hdt, float dt)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 v = vel[i], p = pos[i];
        const float4 a = acc[i];
        v.x += a.x * hdt; v.y += a.y * hdt; v.z += a.z * hdt;
        p.x += v.x * dt; p.y += v.y * dt; p.z += v.z * dt;
        vel[i] = v;
        pos[i] = p;
    }
}

// The closing half kick after the force is the engine's `advance` (kernels/nbody_integrate.cu).

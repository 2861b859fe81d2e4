// Kick-drift-kick leapfrog with a shared time step (engines/integrators/leapfrog_gpu.py).
// vel4.w carries the particle's Component code and is left untouched.

// The first kick and the drift of one particle (also where the parallel ranks' migration,
// kernels/parallel_domain.cu, sends it: the same arithmetic, so the same position)
__device__ __forceinline__ void leapfrog_kick_drift(float4& p, float4& v, const float4 a,
                                                    float hdt, float dt)
{
    v.x += a.x * hdt; v.y += a.y * hdt; v.z += a.z * hdt;
    p.x += v.x * dt; p.y += v.y * dt; p.z += v.z * dt;
}

extern "C" __global__ void kick_drift(float4* __restrict__ pos, float4* __restrict__ vel,
                                      const float4* __restrict__ acc, int n, float hdt, float dt)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 v = vel[i], p = pos[i];
        leapfrog_kick_drift(p, v, acc[i], hdt, dt);
        vel[i] = v;
        pos[i] = p;
    }
}

// The closing half kick after the force is the engine's `advance` (kernels/nbody_integrate.cu).

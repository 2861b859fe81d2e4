// Symplectic epicycle integrator (engines/integrators/sei_gpu.py; the CPU version,
// sei_cpu.py, explains it): exact drifts along Hill's epicycles and the kick of the
// self-gravity. Arithmetic in double (the state is float32); vel4.w (the component) untouched.

extern "C" __global__ void sei_drift(float4* __restrict__ pos, float4* __restrict__ vel, int n,
                                     double omega, double h, double sin_, double tan_)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 p = pos[i], v = vel[i];
        // vertical: (Omega z, v_z) turned by Omega h, as three shears
        double zx = (double)p.z * omega, zy = v.z;
        zx -= tan_ * zy;
        zy += sin_ * zx;
        zx -= tan_ * zy;
        // in the plane: guiding centre (a, b) and the epicycle vector (xs, ys)
        const double x = p.x, y = p.y;
        const double a = 2.0 * (double)v.y + 4.0 * omega * x;
        const double b = omega * y - 2.0 * (double)v.x;
        double ys = 0.5 * (omega * y - b), xs = omega * x - a;
        xs -= tan_ * ys;
        ys += sin_ * xs;
        xs -= tan_ * ys;
        p.x = (float)((xs + a) / omega);
        p.y = (float)((2.0 * ys + b) / omega - 1.5 * a * h);
        p.z = (float)(zx / omega);
        v.x = (float)ys;
        v.y = (float)(-2.0 * xs - 1.5 * a);
        v.z = (float)zy;
        pos[i] = p;
        vel[i] = v;
    }
}

// No self-gravity: accelerations and potentials 0 (what energies() and the colours read).
extern "C" __global__ void sei_zero(float4* __restrict__ acc, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}

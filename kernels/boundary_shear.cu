// The shear-periodic boundary (engines/boundaries/shear_gpu.py; shear_cpu.py explains it):
// x -/+ Lx with y +/- s and v_y +/- 3/2 Omega Lx, then y periodic; z open.

extern "C" __global__ void shear_wrap(float4* __restrict__ pos, float4* __restrict__ vel, int n,
                                      double lx, double ly, double shift, double dvy)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 p = pos[i];
        double x = p.x, y = p.y;
        const double k = floor(x / lx + 0.5);
        if (k != 0.0) {
            x -= k * lx;
            y += k * shift;
            float4 v = vel[i];
            v.y = (float)((double)v.y + k * dvy);
            vel[i] = v;
        }
        y -= ly * floor(y / ly + 0.5);
        p.x = (float)x;
        p.y = (float)y;
        // rounding to float may land on +L/2: keep the half-open box
        if (p.x >= (float)(0.5 * lx)) p.x = -(float)(0.5 * lx);
        if (p.y >= (float)(0.5 * ly)) p.y = -(float)(0.5 * ly);
        pos[i] = p;
    }
}

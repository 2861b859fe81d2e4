// The shear-periodic boundary (engines/boundaries/shear_gpu.py; shear_cpu.py explains it):
// x -/+ Lx with y +/- s and v_y +/- 3/2 Omega Lx, then y periodic; z open.

extern "C" __global__ void shear_wrap(float4* __restrict__ pos, float4* __restrict__ vel, int n,
                                      double lx, double ly, double shift, double dvy)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 p = pos[i];
        double x = p.x, y = p.y;
        double k = floor(x / lx + 0.5);
        x -= k * lx;
        // rounding to float may land on +L/2: its image at -L/2 is one more wrap (sheared too)
        float fx = (float)x;
        if (fx >= (float)(0.5 * lx)) {
            k += 1.0;
            fx = -(float)(0.5 * lx);
        }
        if (k != 0.0) {
            y += k * shift;
            float4 v = vel[i];
            v.y = (float)((double)v.y + k * dvy);
            vel[i] = v;
        }
        y -= ly * floor(y / ly + 0.5);
        p.x = fx;
        p.y = (float)y;
        if (p.y >= (float)(0.5 * ly)) p.y = -(float)(0.5 * ly);  // y: periodic, no shear
        pos[i] = p;
    }
}

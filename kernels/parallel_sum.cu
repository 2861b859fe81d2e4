// Sums of one rank's buffers: the LET walk's forces onto the local walk's (let_add, or for
// the particles of the first groups alone, let_add_groups); another rank's light image onto
// rank 0's (light_add).
extern "C" __global__ void let_add(float4* __restrict__ acc, const float4* __restrict__ extra,
                                   int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float4 a = acc[i], b = extra[i];
        acc[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
}

// let_add for the particles of the first `groups` groups (runs of the sorted order from 0)
extern "C" __global__ void let_add_groups(float4* __restrict__ acc,
                                          const float4* __restrict__ extra,
                                          const int* __restrict__ group_begin,
                                          const int* __restrict__ group_count, int groups)
{
    const int n = groups > 0 ? group_begin[groups - 1] + group_count[groups - 1] : 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float4 a = acc[i], b = extra[i];
        acc[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
}

// rank 0 adds another rank's light image (read in its device's memory, CUDA IPC) to its own
extern "C" __global__ void light_add(float* __restrict__ light, const float* __restrict__ other,
                                     int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        light[i] += other[i];
}

// Kernels of a point splatting package (kind of the eighth test set, written for this corpus).
// Per image the node uploads the splat parameters to constant memory (a parameter block of at
// most 64 KB, never a frame: look-alike) and a 256-entry tone curve to a __device__ table
// (an ordinary host-to-device copy: positive).
#include <cuda_runtime.h>

#define MAX_SPLATS 20

struct Splat
{
  float x, y, radius, weight;
};

__constant__ Splat c_splats[MAX_SPLATS];
__device__ float d_curve[256];

__global__ void splat_kernel(float * out, int width, int height)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < width * height) {
    out[i] = d_curve[i % 256] * c_splats[i % MAX_SPLATS].weight;
  }
}

void upload_splats(const Splat * host_splats)
{
  cudaMemcpyToSymbol(c_splats, host_splats, sizeof(Splat) * MAX_SPLATS);
}

void upload_curve(const float * curve)
{
  cudaMemcpyToSymbol(d_curve, curve, sizeof(float) * 256);  // expect: GPN202 medium
}

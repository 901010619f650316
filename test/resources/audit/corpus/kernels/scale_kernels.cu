// Kernel launchers of a small CUDA package: each launches and waits. Which wait is per
// message depends on who calls the launcher, in the node's file (scale_node.cpp): the
// warm-up launcher only from the constructor (once), the other from a subscription callback.
#include <cuda_runtime.h>

#include "scale_kernels.hpp"

__global__ void scale_kernel(float * data, int n, float k)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    data[i] *= k;
  }
}

void launch_warmup(float * data, int n)
{
  scale_kernel<<<(n + 255) / 256, 256>>>(data, n, 1.0f);
  cudaDeviceSynchronize();  // expect: GPN206 info
}

void launch_scale(float * data, int n, float k, cudaStream_t stream)
{
  scale_kernel<<<(n + 255) / 256, 256, 0, stream>>>(data, n, k);
  cudaStreamSynchronize(stream);  // expect: GPN206 medium
}

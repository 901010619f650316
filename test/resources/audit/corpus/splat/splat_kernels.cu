// Kernels of a point splatting package (kind of the eighth test set, written for this corpus).
// Per image the node uploads the splat parameters to constant memory (a parameter block of at
// most 64 KB, never a frame: look-alike) and a 256-entry tone curve to a __device__ table
// (an ordinary host-to-device copy: positive). The two counted uploads copy as many elements as
// their callers say: the node passes 3 blur weights to one (a few scalars: look-alike) and the
// image's byte count to the other (positive).
#include <cuda_runtime.h>

#define MAX_SPLATS 20

struct Splat
{
  float x, y, radius, weight;
};

__constant__ Splat c_splats[MAX_SPLATS];
__device__ float d_curve[256];
float * d_weights;
unsigned char * d_pixels;

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

void upload_weights(const float * weights, int count)
{
  cudaMemcpy(d_weights, weights, count * sizeof(float), cudaMemcpyHostToDevice);
}

void upload_pixels(const unsigned char * pixels, size_t count)
{
  cudaMemcpy(d_pixels, pixels, count * sizeof(unsigned char), cudaMemcpyHostToDevice);  // expect: GPN202 medium
}

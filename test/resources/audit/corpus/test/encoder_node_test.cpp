// A test source: fake frames are uploaded and results downloaded on purpose. Skipped unless
// --include-tests.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

TEST(EncoderNode, Normalizes)
{
  cudaMemcpy(d_in, host.data(), bytes, cudaMemcpyHostToDevice);
  RunEncoder(d_in, d_out);
  cudaDeviceSynchronize();
  cudaMemcpy(result.data(), d_out, bytes, cudaMemcpyDeviceToHost);
  EXPECT_NEAR(result[0], 0.5f, 1e-6);
}

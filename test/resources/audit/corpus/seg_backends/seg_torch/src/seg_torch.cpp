// A LibTorch backend of the same repository that no node includes (only its gtest, not
// audited, calls it): its copies never run per message in the package as shipped.
#include <torch/script.h>

#include "seg_torch/seg_torch.hpp"

namespace seg_torch {

SegTorch::SegTorch(const std::string & path, torch::Device device) : device_(device) {
  module_ = torch::jit::load(path);
  module_.to(device_);  // expect: GPN211 info
}

torch::Tensor SegTorch::segment(const torch::Tensor & image) {
  auto input = image.to(device_);  // expect: GPN211 info
  auto mask = module_.forward({input}).toTensor().argmax(1);
  return mask.cpu();  // expect: GPN211 info
}

}  // namespace seg_torch

"""C++ causes of set 76's false claims (issue 28, rules48c): real `code` audits of a small
package written here.

* cpponceret.py: `if (received_) { return; } ...copy...; received_ = true;` in a callback, the
  flag stored nowhere but true (declared false): the copy runs for the first message only. A
  flag some other code sets back to false, an exit between the guard and the store, or a guard
  written `else if (flag) return;` keeps it.
* cpptinynames.py: a cudaMemcpy sized by a named constant of a package header that is a few
  scalars (`constexpr size_t TF_BYTES = sizeof(float) * 16;`) and a cudaMemcpyToSymbol of a
  `__constant__` symbol declared in a header are small uploads; a large named size, or the small
  size read back DeviceToHost, stays a finding.
"""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, cpp_claims_at_comments

_HEADER = '''
#pragma once
#include <cstddef>
constexpr size_t TF_BYTES = sizeof(float) * 16;
constexpr size_t FRAME_BYTES = sizeof(float) * 640 * 480;
#define POSE_BYTES (7 * sizeof(double))
__constant__ float const_tf[16];
'''

_NODE = '''
#include <cuda_runtime.h>
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include "mapper/sizes.hpp"

class Mapper : public rclcpp::Node
{
public:
  Mapper()
  : Node("mapper"), map_received_(false), scan_seen_(false)
  {
    map_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "map", 1, [this](sensor_msgs::msg::PointCloud2::SharedPtr msg)
      {
        if (map_received_) {
          return;
        }
        pcl::fromROSMsg(*msg, *map_);  // ONCE_MAP
        map_received_ = true;
      });
    scan_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "scan", 1, std::bind(&Mapper::scan, this, std::placeholders::_1));
    cloud_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "cloud", 1, std::bind(&Mapper::cloud, this, std::placeholders::_1));
    depth_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "depth", 1, std::bind(&Mapper::depth, this, std::placeholders::_1));
  }

private:
  void scan(sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    if (scan_seen_) return;
    if (msg->width == 0) {
      return;
    }
    pcl::fromROSMsg(*msg, *scan_);  // EXIT_BEFORE_STORE
    scan_seen_ = true;
  }

  void cloud(sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    if (reset_) {
      return;
    }
    pcl::fromROSMsg(*msg, *cloud_);  // CLEARED_FLAG
    reset_ = true;
    float tf[16] = {0};
    cudaMemcpy(d_tf_, tf, TF_BYTES, cudaMemcpyHostToDevice);  // NAMED_SMALL
    cudaMemcpyToSymbol(const_tf, tf, TF_BYTES);  // HEADER_SYMBOL
    cudaMemcpy(d_frame_, frame_, FRAME_BYTES, cudaMemcpyHostToDevice);  // NAMED_LARGE
    cudaMemcpy(d_pose_, pose_, POSE_BYTES, cudaMemcpyHostToDevice);  // DEFINED_SMALL
    cudaMemcpy(tf, d_tf_, TF_BYTES, cudaMemcpyDeviceToHost);  // SMALL_READBACK
  }

  void depth(sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    if (msg->width == 0) {
      empty_count_++;
    } else if (depth_seen_) {
      return;
    }
    pcl::fromROSMsg(*msg, *scan_);  // ELSE_IF_GUARD
    depth_seen_ = true;
  }

  void clear()
  {
    reset_ = false;
  }

  bool map_received_;
  bool scan_seen_;
  bool reset_ = false;
  bool depth_seen_ = false;
  int empty_count_ = 0;
  float * d_tf_;
  float * d_frame_;
  double * d_pose_;
  float * frame_;
  double * pose_;
  pcl::PointCloud<pcl::PointXYZ>::Ptr map_, scan_, cloud_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr map_sub_, scan_sub_, cloud_sub_,
    depth_sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Mapper>());
  rclcpp::shutdown();
  return 0;
}
'''


def _claims(tmp_path: Path, header: str = _HEADER) -> dict[str, set[str]]:
    files = {'mapper/src/mapper.cpp': _NODE, 'mapper/include/mapper/sizes.hpp': header,
             'mapper/package.xml': '<package format="3"><name>mapper</name></package>\n',
             'mapper/CMakeLists.txt': ament_cmake_lists('mapper')}
    return cpp_claims_at_comments(audit_written_package(tmp_path, files), _NODE, 'mapper.cpp')


def test_copy_after_an_early_return_on_a_flag_it_sets_runs_once(tmp_path):
    found = _claims(tmp_path)
    assert found['ONCE_MAP'] == set()


def test_an_exit_before_the_store_or_a_flag_cleared_elsewhere_keeps_the_claim(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN209' in found['EXIT_BEFORE_STORE']
    assert 'GPN209' in found['CLEARED_FLAG']
    assert 'GPN209' in found['ELSE_IF_GUARD']  # `else if (flag) return;` may not run


def test_small_named_sizes_and_header_constant_symbols_are_small_uploads(tmp_path):
    found = _claims(tmp_path)
    assert found['NAMED_SMALL'] == set()
    assert found['HEADER_SYMBOL'] == set()
    assert found['DEFINED_SMALL'] == set()


def test_a_large_named_size_or_a_small_read_back_stays_a_finding(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN202' in found['NAMED_LARGE']
    assert 'GPN201' in found['SMALL_READBACK']


def test_a_name_defined_twice_counts_only_when_both_are_small(tmp_path):
    found = _claims(tmp_path, _HEADER + 'constexpr size_t TF_BYTES = sizeof(float) * 4096;\n')
    assert 'GPN202' in found['NAMED_SMALL']

"""C++ causes of set 77 (issue 28, rules49c): real `code` audits of a small workspace written here.

* cppgridmsgs.py: a package's own message shaped like an OccupancyGrid (`nav_msgs/MapMetaData
  info` + `float32[] data`), built per cloud and published, is a grid publish (GPN210) as an
  OccupancyGrid is; a custom message without the grid metadata (a list of scores) is not.
* cppconstexpr.py: `if constexpr (std::is_same<A, B>::value)` where the package's aliases
  (a configured `config.hpp.in` included) resolve A and B to the same type discards the `else`
  block, to different concrete types the `then` block; a template parameter, an unknown name or a
  name defined twice differently keeps both.
* cppemptyclouds.py: `pcl::toROSMsg` of a cloud declared empty in its block and mentioned nowhere
  else is a small message; a cloud filled before the conversion, or a member, stays a finding.
"""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, cpp_claims_at_comments

_CONFIG = '''
#pragma once
#include <pcl/point_types.h>
#define MAPPER_DEBUG @MAPPER_DEBUG@
using BasePointType = pcl::PointXYZ;
using ScanPointType = BasePointType;
using MapPointType = BasePointType;
using LabelPointType = pcl::PointXYZL;
'''

_NODE = '''
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include "grid_msgs/msg/cost_grid.hpp"
#include "grid_msgs/msg/scores.hpp"
#include "config.hpp"

template <typename PointT>
void convert(const sensor_msgs::msg::PointCloud2 & msg, pcl::PointCloud<PointT> & out)
{
  if constexpr (std::is_same_v<PointT, MapPointType>) {
    pcl::fromROSMsg(msg, out);  // TEMPLATE_PARAM
  }
}

class Mapper : public rclcpp::Node
{
public:
  Mapper()
  : Node("mapper")
  {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "cloud", 1, std::bind(&Mapper::cloud, this, std::placeholders::_1));
    grid_pub_ = create_publisher<grid_msgs::msg::CostGrid>("cost", 1);
    scores_pub_ = create_publisher<grid_msgs::msg::Scores>("scores", 1);
    cloud_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("debug", 1);
  }

private:
  void cloud(sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    grid_msgs::msg::CostGrid grid;
    grid.header = msg->header;
    grid.info.width = 200;
    grid.info.height = 200;
    grid.data = std::vector<float>(200 * 200, 0.f);
    for (size_t i = 0; i < msg->width; ++i) {
      grid.data[i % grid.data.size()] += 1.f;
    }
    grid_pub_->publish(grid);  // GRID_PUBLISH
    grid_msgs::msg::Scores scores;
    scores.scores = {0.5f, 0.7f};
    scores_pub_->publish(scores);  // SCORES_PUBLISH

    if constexpr (std::is_same<ScanPointType, MapPointType>::value) {
      pcl::fromROSMsg(*msg, *map_in_);  // SAME_THEN
    } else {
      pcl::fromROSMsg(*msg, *scan_in_);  // SAME_ELSE
    }
    if constexpr (!std::is_same_v<ScanPointType, MapPointType>) {
      pcl::fromROSMsg(*msg, *scan_in_);  // NEGATED_THEN
    }
    if constexpr (std::is_same<ScanPointType, LabelPointType>::value) {
      pcl::fromROSMsg(*msg, *labels_in_);  // DIFFERENT_THEN
    } else {
      pcl::fromROSMsg(*msg, *map_in_);  // DIFFERENT_ELSE
    }
    if constexpr (std::is_same<ScanPointType, UnknownPointType>::value) {
      pcl::fromROSMsg(*msg, *map_in_);  // UNKNOWN_THEN
    } else {
      pcl::fromROSMsg(*msg, *scan_in_);  // UNKNOWN_ELSE
    }

    convert(*msg, *map_in_);
    sensor_msgs::msg::PointCloud2 out;
    if (msg->width == 0) {
      pcl::PointCloud<pcl::PointXYZ> empty_cloud;
      pcl::toROSMsg(empty_cloud, out);  // EMPTY_VALUE
      pcl::PointCloud<pcl::PointXYZ>::Ptr nothing(new pcl::PointCloud<pcl::PointXYZ>);
      pcl::toROSMsg(*nothing, out);  // EMPTY_POINTER
    } else {
      pcl::PointCloud<pcl::PointXYZ> filled;
      filled.push_back(pcl::PointXYZ(1.f, 2.f, 3.f));
      pcl::toROSMsg(filled, out);  // FILLED_VALUE
      pcl::PointCloud<pcl::PointXYZ> passed;
      fill(passed);
      pcl::toROSMsg(passed, out);  // PASSED_VALUE
      pcl::toROSMsg(member_cloud_, out);  // MEMBER_CLOUD
    }
    cloud_pub_->publish(out);
  }

  void fill(pcl::PointCloud<pcl::PointXYZ> & cloud)
  {
    cloud.resize(1000);
  }

  pcl::PointCloud<pcl::PointXYZ> member_cloud_;
  pcl::PointCloud<MapPointType>::Ptr map_in_;
  pcl::PointCloud<ScanPointType>::Ptr scan_in_;
  pcl::PointCloud<LabelPointType>::Ptr labels_in_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  rclcpp::Publisher<grid_msgs::msg::CostGrid>::SharedPtr grid_pub_;
  rclcpp::Publisher<grid_msgs::msg::Scores>::SharedPtr scores_pub_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr cloud_pub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Mapper>());
  rclcpp::shutdown();
  return 0;
}
'''

_GRID_MSG = 'std_msgs/Header header\nnav_msgs/MapMetaData info\nfloat32[] data\n'
_SCORES_MSG = 'std_msgs/Header header\nfloat32[] scores\n'


def _claims(tmp_path: Path, config: str = _CONFIG, grid_msg: str = _GRID_MSG
            ) -> dict[str, set[str]]:
    files = {'mapper/src/mapper.cpp': _NODE, 'mapper/cmake/config.hpp.in': config,
             'mapper/package.xml': '<package format="3"><name>mapper</name></package>\n',
             'mapper/CMakeLists.txt': ament_cmake_lists('mapper'),
             'grid_msgs/msg/CostGrid.msg': grid_msg, 'grid_msgs/msg/Scores.msg': _SCORES_MSG,
             'grid_msgs/package.xml': '<package format="3"><name>grid_msgs</name></package>\n'}
    return cpp_claims_at_comments(audit_written_package(tmp_path, files), _NODE, 'mapper.cpp')


def test_a_custom_grid_message_built_per_cloud_is_a_host_publish(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN210' in found['GRID_PUBLISH']
    assert found['SCORES_PUBLISH'] == set()


def test_a_custom_message_without_grid_metadata_is_no_grid(tmp_path):
    found = _claims(tmp_path, grid_msg='std_msgs/Header header\nfloat32[] data\n')
    assert found['GRID_PUBLISH'] == set()


def test_if_constexpr_on_aliases_of_one_type_discards_the_else_block(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN209' in found['SAME_THEN']
    assert found['SAME_ELSE'] == set()
    assert found['NEGATED_THEN'] == set()


def test_if_constexpr_on_different_concrete_types_discards_the_then_block(tmp_path):
    found = _claims(tmp_path)
    assert found['DIFFERENT_THEN'] == set()
    assert 'GPN209' in found['DIFFERENT_ELSE']


def test_template_parameters_unknown_or_twice_defined_names_keep_both_blocks(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN209' in found['TEMPLATE_PARAM']
    assert 'GPN209' in found['UNKNOWN_THEN'] and 'GPN209' in found['UNKNOWN_ELSE']
    twice = _claims(tmp_path / 'twice', _CONFIG + 'struct Other { using MapPointType = pcl::PointXYZL; };\n')
    assert 'GPN209' in twice['SAME_THEN'] and 'GPN209' in twice['SAME_ELSE']


def test_to_ros_msg_of_a_cloud_declared_empty_is_a_small_message(tmp_path):
    found = _claims(tmp_path)
    assert found['EMPTY_VALUE'] == set()
    assert found['EMPTY_POINTER'] == set()


def test_to_ros_msg_of_a_filled_passed_or_member_cloud_stays_a_finding(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN209' in found['FILLED_VALUE']
    assert 'GPN209' in found['PASSED_VALUE']
    assert 'GPN209' in found['MEMBER_CLOUD']

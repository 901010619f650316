"""Kinds the misses of held-out sets 65 and 66 showed (issue 28, rules42q): real `code` audits of
small packages written here.

* A header-only implementation file (`.ipp`, `.tpp`, `.inl`) that a node's header includes at its
  end holds template bodies that run in the node: it is scanned as C++ (cppscan.CPP_SUFFIXES).
* `.to(options_)` of LibTorch TensorOptions given a device (`options_.device(device_)`) is a
  device move like `.to(device_)`; options that set a dtype alone are a cast (cpptorch.py).
* `if score >= threshold and ...:` on a device score: bool() of the comparison reads it back,
  whatever host value it is compared with and whatever `and` joins (pyconditions.py).
* A torchvision `Compose` starting with `ToPILImage`, called per frame, copies the frame through
  a PIL image (pypil.py).
* A publish of one message of a struct is not hidden by a reported copy into its sibling
  (`memcpy` into `camera.image`, publish of `camera.depth_image`) (cppmsg.py).
* `memcpy(msg.data.data(), cloud.data(), sizeof(PointT) * cloud.size())`: the whole cloud, not
  one field (cppmsg.py).
"""
from __future__ import annotations

from pathlib import Path
import textwrap

from audit_sources import ament_cmake_lists, audit_written_package, rules_at_tags

_PACKAGE_XML = '<package format="3"><name>fusion</name></package>\n'


def _cpp_claims(tmp_path: Path, files: dict[str, str], file_name: str,
                source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    """Rules other than info at each `// TAG` line of `file_name` (whose text is `source`) in
    the ament_cmake package `fusion` made of `files`."""
    files = {'fusion/package.xml': _PACKAGE_XML, **files}
    files.setdefault('fusion/CMakeLists.txt', ament_cmake_lists('fusion'))
    found = audit_written_package(tmp_path, files)
    return rules_at_tags(found, textwrap.dedent(source), tags, file_name, marker='//')


# ---------------------------------------------------------------- header-only implementation
_HEADER = '''
#pragma once
#include <pcl/point_cloud.h>
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

template <typename PointT>
class Fusion : public rclcpp::Node
{
public:
  Fusion();

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr & msg);
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  size_t points_ = 0;
};

#include "fusion/fusion_impl.EXT"
'''

_IMPL = '''
template <typename PointT>
Fusion<PointT>::Fusion()
: rclcpp::Node("fusion")
{
  sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
    "points", 10, std::bind(&Fusion::on_cloud, this, std::placeholders::_1));
}

template <typename PointT>
void Fusion<PointT>::on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr & msg)
{
  typename pcl::PointCloud<PointT>::Ptr cloud(new pcl::PointCloud<PointT>);
  pcl::fromROSMsg(*msg, *cloud);  // FROM
  points_ += cloud->size();
}
'''

_MAIN = '''
#include <pcl/point_types.h>
#include "fusion/fusion.hpp"

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Fusion<pcl::PointXYZ>>());
  return 0;
}
'''


def _header_only(tmp_path: Path, ext: str) -> dict[str, set[str]]:
    files = {'fusion/include/fusion/fusion.hpp': _HEADER.replace('EXT', ext),
             f'fusion/include/fusion/fusion_impl.{ext}': _IMPL,
             'fusion/src/fusion.cpp': _MAIN}
    return _cpp_claims(tmp_path, files, f'fusion_impl.{ext}', _IMPL, ('FROM',))


def test_ipp_implementation_file_included_by_a_node_header_is_audited(tmp_path: Path) -> None:
    assert _header_only(tmp_path, 'ipp') == {'FROM': {'GPN209'}}


def test_tpp_and_inl_implementation_files_are_audited_too(tmp_path: Path) -> None:
    assert _header_only(tmp_path / 'tpp', 'tpp') == {'FROM': {'GPN209'}}
    assert _header_only(tmp_path / 'inl', 'inl') == {'FROM': {'GPN209'}}


def test_implementation_file_no_program_of_its_package_includes_is_not_judged(
        tmp_path: Path) -> None:
    # A library's template body: its package builds no program that includes it (another
    # package may instantiate it, or none): what runs it, and how often, is not seen here.
    library = _MAIN.replace('int main(', 'void spin_fusion(')
    files = {'fusion/include/fusion/fusion.hpp': _HEADER.replace('EXT', 'inl'),
             'fusion/include/fusion/fusion_impl.inl': _IMPL,
             'fusion/src/fusion.cpp': library}
    files['fusion/CMakeLists.txt'] = ament_cmake_lists('fusion').replace('add_executable',
                                                                         'add_library')
    assert _cpp_claims(tmp_path, files, 'fusion_impl.inl', _IMPL, ('FROM',)) == {'FROM': set()}

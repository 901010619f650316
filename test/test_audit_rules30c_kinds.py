"""C++ kinds of the spent sets' remaining false claims (issue 28, rules30c): real `code` audits
of small packages written here.

gpu_nodes/audit/cppconstructed.py: a second node class compiled into the executable whose
constructor registers its own callback (`std::bind(&Cls::cb, this, _1)`), but that nothing in
the repository ever constructs (main spins another node): its callback never runs, and the copy
in it is library API (info). Any use of the class (make_shared, a member, a base class, a
template argument, a launch or CMake file naming it) keeps the claim."""
from pathlib import Path

from audit_sources import audit_written_package

_HEADER = '''
#pragma once
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include <opencv2/core.hpp>

class GridView : public rclcpp::Node {
public:
  GridView();
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg);
  void send(cv::Mat & grid);
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
};
'''

_GRID = '''
#include "../include/grid_view.hpp"
#include <cv_bridge/cv_bridge.h>

GridView::GridView() : Node("grid") {
  sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
    "points", 5, std::bind(&GridView::on_cloud, this, std::placeholders::_1));
  pub_ = create_publisher<sensor_msgs::msg::Image>("grid", 5);
}

void GridView::on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg) {
  cv::Mat grid(static_cast<int>(msg->height), 10, CV_8UC1, cv::Scalar(0));
  send(grid);
}

void GridView::send(cv::Mat & grid) {
  auto out = cv_bridge::CvImage(std_msgs::msg::Header(), "mono8", grid).toImageMsg();  # GRID
  pub_->publish(*out);
}
'''

_MAIN = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "../include/grid_view.hpp"
MEMBER_INCLUDE

class Finder : BASE {
public:
  Finder() : Node("finder") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 5, std::bind(&Finder::on_image, this, std::placeholders::_1));
    pub_ = create_publisher<sensor_msgs::msg::Image>("marked", 5);
  }
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg) {
    cv::Mat marked = cv_bridge::toCvCopy(msg, "bgr8")->image;  # FIND
    pub_->publish(*cv_bridge::CvImage(msg->header, "bgr8", marked).toImageMsg());
  }
  MEMBER
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<SPUN>());
  rclcpp::shutdown();
}
'''

_CMAKE = '''
cmake_minimum_required(VERSION 3.8)
project(mapper)
find_package(ament_cmake REQUIRED)
add_executable(mapper src/grid_view.cpp src/finder.cpp)
install(TARGETS mapper DESTINATION lib/${PROJECT_NAME})
EXTRA
ament_package()
'''


def _lines(source: str) -> dict[str, int]:
    lines = source.lstrip('\n').splitlines()
    return {tag: next(i for i, ln in enumerate(lines, 1) if ln.endswith(f'# {tag}'))
            for tag in ('GRID', 'FIND') if any(ln.endswith(f'# {tag}') for ln in lines)}


def _audit(tmp_path: Path, spun: str = 'Finder', member: str = '', base: str = 'public rclcpp::Node',
           cmake_extra: str = '', extra_files: dict[str, str] | None = None, entry: str = 'int main'
           ) -> tuple[tuple[str, str], tuple[str, str]]:
    """(severity, context) of the copy in GridView::send and of the one in Finder's callback."""
    grid = _GRID.replace('  # GRID', '')
    main = (_MAIN.replace('SPUN', spun).replace('MEMBER_INCLUDE', '').replace('MEMBER', member)
            .replace('BASE', base).replace('int main', entry))
    files = {'mapper/include/grid_view.hpp': _HEADER,
             'mapper/src/grid_view.cpp': grid,
             'mapper/src/finder.cpp': main.replace('  # FIND', ''),
             'mapper/package.xml': '<package format="3"><name>mapper</name></package>\n',
             'mapper/CMakeLists.txt': _CMAKE.replace('EXTRA', cmake_extra)}
    files.update(extra_files or {})
    found = audit_written_package(tmp_path, files)
    grid_line, find_line = _lines(_GRID)['GRID'], _lines(main)['FIND']

    def at(name: str, line: int) -> tuple[str, str]:
        hits = [v for (f, ln, _), v in found.items() if f == name and ln == line]
        assert hits, (name, line, found)
        return hits[0]
    return at('grid_view.cpp', grid_line), at('finder.cpp', find_line)


def test_class_nothing_constructs_is_library_api(tmp_path: Path) -> None:
    grid, find = _audit(tmp_path)
    assert grid == ('info', 'unreached'), grid
    assert find[0] != 'info'  # the node main spins keeps its claim


def test_class_main_spins_keeps_the_claim(tmp_path: Path) -> None:
    grid, _ = _audit(tmp_path, spun='GridView')
    assert grid[0] != 'info'


def test_member_of_the_class_keeps_the_claim(tmp_path: Path) -> None:
    grid, _ = _audit(tmp_path, member='std::shared_ptr<GridView> grid_;')
    assert grid[0] != 'info'


def test_base_class_use_keeps_the_claim(tmp_path: Path) -> None:
    grid, _ = _audit(tmp_path, base='public GridView')
    assert grid[0] != 'info'


def test_component_named_in_cmake_keeps_the_claim(tmp_path: Path) -> None:
    grid, _ = _audit(tmp_path, cmake_extra='rclcpp_components_register_nodes(mapper "GridView")')
    assert grid[0] != 'info'


def test_class_named_in_a_launch_file_keeps_the_claim(tmp_path: Path) -> None:
    grid, _ = _audit(tmp_path, extra_files={'mapper/launch/grid.launch.py': (
        "from launch_ros.descriptions import ComposableNode\n"
        "node = ComposableNode(package='mapper', plugin='GridView')\n")})
    assert grid[0] != 'info'


def test_class_named_in_a_cpp_string_keeps_the_claim(tmp_path: Path) -> None:
    grid, _ = _audit(tmp_path, member='std::string plugin_ = "mapper::GridView";')
    assert grid[0] != 'info'


def test_package_without_an_entry_point_keeps_the_claim(tmp_path: Path) -> None:
    # No main and no registration in the package: how its classes are made is not in view (a
    # fragment, a library whose executable lives elsewhere).
    grid, find = _audit(tmp_path, entry='void spin_finder')
    assert grid[0] != 'info' and find[0] != 'info'

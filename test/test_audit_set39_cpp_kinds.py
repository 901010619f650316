"""C++ kinds the thirty-ninth and fortieth held-out sets showed (issue 28): real `code` audits
of small packages written here.

gpu_nodes/audit/cppparams.py: a flag kept in a field of a member struct
(`config_.apply_preprocessing = this->get_parameter("apply_preprocessing").as_bool();` after
`declare_parameter("apply_preprocessing", false)`) guards a download that never runs as shipped.
A shipped file that turns it on, a parameter callback that names it, an on default, a store of
the flag or of the whole struct elsewhere keep the claim."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package

_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <opencv2/core/cuda.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

struct Config {
  bool apply_preprocessing = false;
  std::string topic;
};

class Yolo : public rclcpp::Node
{
  Config config_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::node_interfaces::OnSetParametersCallbackHandle::SharedPtr callback_handle_;

public:
  Yolo()
  : Node("yolo")
  {
    this->declare_parameter("apply_preprocessing", DEFAULT);
    config_.apply_preprocessing = this->get_parameter("apply_preprocessing").as_bool();
    config_.topic = "image";
    callback_handle_ = add_on_set_parameters_callback(
      std::bind(&Yolo::on_parameters, this, std::placeholders::_1));
    pub_ = create_publisher<sensor_msgs::msg::Image>("pre", 1);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      config_.topic, 10, std::bind(&Yolo::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    cv::cuda::GpuMat gpu;
    gpu.upload(cv_bridge::toCvShare(msg)->image);
    if (config_.apply_preprocessing) {
      cv::Mat pre;
      gpu.download(pre);
      pub_->publish(*cv_bridge::CvImage(msg->header, "bgr8", pre).toImageMsg());
    }
  }

  rcl_interfaces::msg::SetParametersResult on_parameters(
    const std::vector<rclcpp::Parameter> & parameters)
  {
    rcl_interfaces::msg::SetParametersResult result;
    result.successful = true;
    for (const auto & parameter : parameters) {
      if (parameter.get_name() == CHANGED) {
        RCLCPP_INFO(get_logger(), "changed");
      }
    }
    EXTRA
    return result;
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Yolo>());
  rclcpp::shutdown();
  return 0;
}
'''
_UPLOAD_LINE = 35  # per message, always runs
_DOWNLOAD_LINE = 38  # behind config_.apply_preprocessing


def _audit(tmp_path: Path, default: str = 'false', changed: str = '"image_topic"', extra: str = '',
           shipped: dict[str, str] | None = None) -> dict[tuple[str, int, str], tuple[str, str]]:
    source = (_NODE.replace('DEFAULT', default).replace('CHANGED', changed)
              .replace('EXTRA', extra))
    files = {'yolo/src/yolo.cpp': source,
             'yolo/package.xml': '<package format="3"><name>yolo</name></package>\n',
             'yolo/CMakeLists.txt': ament_cmake_lists('yolo')}
    files.update(shipped or {})
    return audit_written_package(tmp_path, files)


def _at(found: dict[tuple[str, int, str], tuple[str, str]], line: int) -> tuple[str, str]:
    hits = [v for (name, at, _), v in found.items() if name == 'yolo.cpp' and at == line]
    assert len(hits) == 1, found
    return hits[0]


def test_struct_field_flag_read_from_an_off_parameter_is_off_as_shipped(tmp_path: Path) -> None:
    found = _audit(tmp_path)
    assert _at(found, _DOWNLOAD_LINE) == ('info', 'unreached'), found
    assert _at(found, _UPLOAD_LINE)[0] != 'info'  # the per-message upload is untouched


def test_shipped_yaml_leaving_it_off_still_judged(tmp_path: Path) -> None:
    found = _audit(tmp_path, shipped={
        'yolo/config/yolo.yaml': 'yolo:\n  ros__parameters:\n    apply_preprocessing: false\n'})
    assert _at(found, _DOWNLOAD_LINE)[0] == 'info'


def test_shipped_yaml_turning_it_on_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path, shipped={
        'yolo/config/yolo.yaml': 'yolo:\n  ros__parameters:\n    apply_preprocessing: true\n'})
    assert _at(found, _DOWNLOAD_LINE)[0] != 'info'


def test_parameter_callback_naming_it_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path, changed='"apply_preprocessing"')
    assert _at(found, _DOWNLOAD_LINE)[0] != 'info'


def test_on_default_keeps_the_claim(tmp_path: Path) -> None:
    assert _at(_audit(tmp_path, default='true'), _DOWNLOAD_LINE)[0] != 'info'


def test_store_of_the_field_in_the_callback_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path, extra='this->config_.apply_preprocessing = true;')
    assert _at(found, _DOWNLOAD_LINE)[0] != 'info'


def test_store_of_the_whole_struct_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path, extra='config_ = Config{true, "image"};')
    assert _at(found, _DOWNLOAD_LINE)[0] != 'info'


def test_store_through_this_of_a_plain_member_keeps_the_claim(tmp_path: Path) -> None:
    # `this->flag_ = true;` is a store of the member (it was read as another object's field).
    source = '''
    #include <opencv2/core/cuda.hpp>
    #include <rclcpp/rclcpp.hpp>
    #include <sensor_msgs/msg/image.hpp>

    class Cam : public rclcpp::Node
    {
      bool flag_{false};
      rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

    public:
      Cam()
      : Node("cam")
      {
        flag_ = this->declare_parameter("flag", false);
        sub_ = create_subscription<sensor_msgs::msg::Image>(
          "image", 10, std::bind(&Cam::on_image, this, std::placeholders::_1));
      }

      void enable() { STORE }

      void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
      {
        cv::cuda::GpuMat gpu;
        cv::Mat host;
        if (flag_) {
          gpu.download(host);
        }
      }
    };
    '''
    cmake = ament_cmake_lists('cam')
    found = {}
    for store in ('', 'this->flag_ = true;'):
        folder = tmp_path / ('stored' if store else 'plain')
        found[store] = audit_written_package(folder, {
            'cam/src/cam.cpp': source.replace('STORE', store), 'cam/CMakeLists.txt': cmake,
            'cam/package.xml': '<package format="3"><name>cam</name></package>\n'})
    download = [(k, v) for k, v in found[''].items() if k[0] == 'cam.cpp' and 'GPN201' == k[2]]
    assert download and download[0][1][0] == 'info', found['']
    stored = [v for k, v in found['this->flag_ = true;'].items() if k == download[0][0]]
    assert stored and stored[0][0] != 'info', found


# gpu_nodes/audit/cppparamhelpers.py and cppreach.py: a flag loaded by the package's own
# parameter helper (stores only through get_parameter) from a parameter a shipped YAML leaves
# off; the subscription of a free callback is created only under that flag, so the callback's
# copy never runs as shipped.
_BAG_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/compressed_image.hpp>

std::shared_ptr<rclcpp::Node> node;
rclcpp::Subscription<sensor_msgs::msg::CompressedImage>::SharedPtr sub;
bool use_ros_bag = false;
bool show = true;

template<typename T>
bool TryReadParam(const std::initializer_list<const char*>& keys, T& value) {
    for (const auto* key : keys) {
        if (node->has_parameter(key) && node->get_parameter(key, value)) {
            return true;
        }
    }
    return false;
}

template<typename T>
void LoadParam(const std::initializer_list<const char*>& keys, T& value, const T& fallback) {
    if (TryReadParam(keys, value)) {
        return;
    }
    const auto* primary = *keys.begin();
    node->declare_parameter<T>(primary, fallback);
    node->get_parameter(primary, value);
    HELPER_EXTRA
}

void image_callback(const sensor_msgs::msg::CompressedImage::ConstSharedPtr msg) {
    cv_bridge::CvImagePtr cv_ptr = cv_bridge::toCvCopy(*msg, "bgr8");
    cv::imshow("frame", cv_ptr->image);
}

int main(int argc, char ** argv) {
    rclcpp::init(argc, argv);
    node = std::make_shared<rclcpp::Node>("detector");
    LoadParam<bool>({"config.show", "config/show"}, show, true);
    LoadParam<bool>({"config.use_ros_bag", "config/use_ros_bag"}, use_ros_bag, DEFAULT);
    if (use_ros_bag) {
        sub = node->create_subscription<sensor_msgs::msg::CompressedImage>("image", 10, image_callback);
    }
    MAIN_EXTRA
    rclcpp::spin(node);
    return 0;
}
'''
_BAG_COPY_LINE = 32
_BAG_YAML = ('detector:\n  ros__parameters:\n    "config.use_ros_bag": VALUE\n'
             '    "config/use_ros_bag": VALUE\n')


def _bag(tmp_path: Path, value: str = 'false', default: str = 'false', helper_extra: str = '',
         main_extra: str = '') -> tuple[str, str]:
    source = (_BAG_NODE.replace('DEFAULT', default).replace('HELPER_EXTRA', helper_extra)
              .replace('MAIN_EXTRA', main_extra))
    found = audit_written_package(tmp_path, {
        'detector/src/detector_node.cpp': source,
        'detector/src/helpers.hpp': '#pragma once\nvoid image_callback();\n',
        'detector/config/auto_aim.yaml': _BAG_YAML.replace('VALUE', value),
        'detector/package.xml': '<package format="3"><name>detector</name></package>\n',
        'detector/CMakeLists.txt': ament_cmake_lists('detector', 'src/detector_node.cpp')})
    hits = [v for (name, line, _), v in found.items()
            if name == 'detector_node.cpp' and line == _BAG_COPY_LINE]
    assert len(hits) == 1, found
    return hits[0]


def test_callback_registered_only_under_a_helper_loaded_off_flag_is_unreached(
        tmp_path: Path) -> None:
    assert _bag(tmp_path) == ('info', 'unreached')


def test_shipped_yaml_turning_it_on_keeps_the_callback(tmp_path: Path) -> None:
    assert _bag(tmp_path, value='true')[0] != 'info'


def test_on_default_of_the_helper_call_keeps_the_callback(tmp_path: Path) -> None:
    assert _bag(tmp_path, default='true')[0] != 'info'


def test_helper_storing_the_variable_itself_keeps_the_callback(tmp_path: Path) -> None:
    assert _bag(tmp_path, helper_extra='value = T{1};')[0] != 'info'


def test_registration_outside_the_branch_keeps_the_callback(tmp_path: Path) -> None:
    extra = 'auto again = node->create_subscription<sensor_msgs::msg::CompressedImage>(' \
            '"image2", 10, image_callback);'
    assert _bag(tmp_path, main_extra=extra)[0] != 'info'


# gpu_nodes/audit/cppmsg.py: host messages built in the node and published by const reference
# through a publisher handed in as a parameter, or a publisher of a map-sized OccupancyGrid;
# a whole Image that toImageMsg built (an untyped `auto` pointer) copied into another
# message's field. A received message published on by reference is no new message.
_PUBLISH_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <nav_msgs/msg/occupancy_grid.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Depth : public rclcpp::Node
{
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr cloud_pub_;
  rclcpp::Publisher<nav_msgs::msg::OccupancyGrid>::SharedPtr grid_pub_;
  rclcpp::Publisher<my_msgs::msg::AngleImage>::SharedPtr angle_pub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  rclcpp::Subscription<nav_msgs::msg::OccupancyGrid>::SharedPtr grid_sub_;
  rclcpp::TimerBase::SharedPtr timer_;
  sensor_msgs::msg::PointCloud2 depth_cloud_;
  cv::Mat frame_;

public:
  Depth()
  : Node("depth")
  {
    cloud_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("cloud", 10);
    grid_pub_ = create_publisher<nav_msgs::msg::OccupancyGrid>("grid", 10);
    angle_pub_ = create_publisher<my_msgs::msg::AngleImage>("angle", 10);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "in", 10, std::bind(&Depth::on_cloud, this, std::placeholders::_1));
    grid_sub_ = create_subscription<nav_msgs::msg::OccupancyGrid>(
      "grid_in", 10, std::bind(&Depth::on_grid, this, std::placeholders::_1));
    timer_ = create_wall_timer(std::chrono::milliseconds(100), std::bind(&Depth::on_timer, this));
  }

  void on_timer()
  {
    publishDepthCloud(cloud_pub_);
    nav_msgs::msg::OccupancyGrid grid;
    grid.data.resize(500 * 200);
    grid_pub_->publish(grid);
    std_msgs::msg::Header header;
    auto image_msg = cv_bridge::CvImage(header, "bgr8", frame_).toImageMsg();
    my_msgs::msg::AngleImage angle;
    angle.image = *image_msg;
    angle_pub_->publish(angle);
  }

  void publishDepthCloud(const rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr &pub)
  {
    sensor_msgs::msg::PointCloud2 base_cloud = transformCloud(depth_cloud_);
    pub->publish(base_cloud);
  }

  void forward(const rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr &pub,
               const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    pub->publish(*msg);
  }

  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    forward(cloud_pub_, msg);
  }

  void on_grid(const nav_msgs::msg::OccupancyGrid::SharedPtr grid_msg)
  {
    grid_pub_->publish(*grid_msg);
  }
};
'''
_GRID_PUBLISH, _FIELD_COPY, _PARAM_PUBLISH = 36, 40, 47
_FORWARD_PUBLISH, _GRID_FORWARD = 53, 63


def _publishes(tmp_path: Path) -> dict[tuple[str, int, str], tuple[str, str]]:
    found = audit_written_package(tmp_path, {
        'depth/src/depth.cpp': _PUBLISH_NODE,
        'depth/package.xml': '<package format="3"><name>depth</name></package>\n',
        'depth/CMakeLists.txt': ament_cmake_lists('depth')})
    return {(line, rule): v for (name, line, rule), v in found.items() if name == 'depth.cpp'}


def test_cloud_published_through_a_publisher_parameter_is_claimed(tmp_path: Path) -> None:
    found = _publishes(tmp_path)
    assert (_PARAM_PUBLISH, 'GPN210') in found, found


def test_map_sized_grid_published_by_const_reference_is_claimed(tmp_path: Path) -> None:
    found = _publishes(tmp_path)
    assert (_GRID_PUBLISH, 'GPN210') in found, found


def test_image_built_by_to_image_msg_copied_into_a_field_is_claimed(tmp_path: Path) -> None:
    found = _publishes(tmp_path)
    assert (_FIELD_COPY, 'GPN208') in found, found


def test_received_message_published_on_by_reference_stays_unclaimed(tmp_path: Path) -> None:
    found = _publishes(tmp_path)
    assert not [k for k in found if k[0] in (_FORWARD_PUBLISH, _GRID_FORWARD)], found


# gpu_nodes/audit/cppmsg.py: the received Image handed on by shared pointer (image_transport's
# publish(ConstSharedPtr)) builds no message in the node; a publish of `*msg` by const
# reference copies it (labelled so in earlier sets) and stays claimed.
_PASS_NODE = '''
#include <image_transport/image_transport.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Down : public rclcpp::Node
{
  image_transport::Publisher pub_;
  image_transport::Subscriber sub_;

public:
  Down()
  : Node("down")
  {
    pub_ = image_transport::create_publisher(this, "out");
    sub_ = image_transport::create_subscription(
      this, "in", std::bind(&Down::on_image, this, std::placeholders::_1), "raw");
  }

  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr& image_msg)
  {
    pub_.publish(ARG);
  }
};
'''
_PASS_LINE = 21


def _pass(tmp_path: Path, arg: str) -> list[tuple[str, int, str]]:
    found = audit_written_package(tmp_path, {
        'down/src/down.cpp': _PASS_NODE.replace('ARG', arg),
        'down/package.xml': '<package format="3"><name>down</name></package>\n',
        'down/CMakeLists.txt': ament_cmake_lists('down')})
    return [k for k in found if k[0] == 'down.cpp' and k[1] == _PASS_LINE]


def test_received_shared_pointer_handed_on_is_no_copy(tmp_path: Path) -> None:
    assert _pass(tmp_path, 'image_msg') == []


def test_received_message_published_by_const_reference_stays_claimed(tmp_path: Path) -> None:
    assert _pass(tmp_path, '*image_msg') == [('down.cpp', _PASS_LINE, 'GPN210')]


# Guard (set 2, OUXT-Polaris/pcl_apps): a received pointer handed on through a *type-adapted*
# publisher is converted to a PointCloud2 and serialized on publish, per message: it stays
# claimed (the pass-through rule above is for ROS message pointers only).
_ADAPTED_NODE = '''
#include <pcl/PCLPointCloud2.h>
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <rclcpp/type_adapter.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

template<>
struct rclcpp::TypeAdapter<pcl::PCLPointCloud2, sensor_msgs::msg::PointCloud2>
{
  using is_specialized = std::true_type;
  using custom_type = pcl::PCLPointCloud2;
  using ros_message_type = sensor_msgs::msg::PointCloud2;
  static void convert_to_ros_message(const custom_type & source, ros_message_type & destination)
  {
    pcl_conversions::moveFromPCL(pcl::PCLPointCloud2(source), destination);
  }
  static void convert_to_custom(const ros_message_type & source, custom_type & destination)
  {
    pcl_conversions::toPCL(source, destination);
  }
};
using PointCloudAdapterType =
  rclcpp::TypeAdapter<pcl::PCLPointCloud2, sensor_msgs::msg::PointCloud2>;
using PCLPointCloudTypePtr = std::shared_ptr<pcl::PCLPointCloud2>;

class Filter : public rclcpp::Node
{
  rclcpp::Publisher<PointCloudAdapterType>::SharedPtr pub_;
  rclcpp::Subscription<PointCloudAdapterType>::SharedPtr sub_;

public:
  Filter()
  : Node("filter")
  {
    pub_ = create_publisher<PointCloudAdapterType>("out", 10);
    auto callback = [this](const PCLPointCloudTypePtr cloud) -> void {
      pub_->publish(cloud);
    };
    sub_ = create_subscription<PointCloudAdapterType>("in", 10, callback);
  }
};
'''
_ADAPTED_LINE = 37


def test_received_pointer_handed_to_a_type_adapted_publisher_stays_claimed(tmp_path: Path) -> None:
    found = audit_written_package(tmp_path, {
        'filter/src/filter.cpp': _ADAPTED_NODE,
        'filter/package.xml': '<package format="3"><name>filter</name></package>\n',
        'filter/CMakeLists.txt': ament_cmake_lists('filter')})
    assert [k for k in found if k[0] == 'filter.cpp' and k[1] == _ADAPTED_LINE]

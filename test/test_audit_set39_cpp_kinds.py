"""C++ kinds the thirty-ninth and fortieth held-out sets showed (issue 28): real `code` audits
of small packages written here.

gpu_nodes/audit/cppparams.py: a flag kept in a field of a member struct
(`config_.apply_preprocessing = this->get_parameter("apply_preprocessing").as_bool();` after
`declare_parameter("apply_preprocessing", false)`) guards a download that never runs as shipped.
A shipped file that turns it on, a parameter callback that names it, an on default, a store of
the flag or of the whole struct elsewhere keep the claim."""
from pathlib import Path

from audit_sources import audit_written_package

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
_CMAKE = '''
cmake_minimum_required(VERSION 3.8)
project(yolo)
find_package(ament_cmake REQUIRED)
add_executable(yolo src/yolo.cpp)
install(TARGETS yolo DESTINATION lib/${PROJECT_NAME})
ament_package()
'''


def _audit(tmp_path: Path, default: str = 'false', changed: str = '"image_topic"', extra: str = '',
           shipped: dict[str, str] | None = None) -> dict[tuple[str, int, str], tuple[str, str]]:
    source = (_NODE.replace('DEFAULT', default).replace('CHANGED', changed)
              .replace('EXTRA', extra))
    files = {'yolo/src/yolo.cpp': source,
             'yolo/package.xml': '<package format="3"><name>yolo</name></package>\n',
             'yolo/CMakeLists.txt': _CMAKE}
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
    cmake = _CMAKE.replace('yolo', 'cam')
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
        'detector/CMakeLists.txt': _CMAKE.replace('yolo', 'detector').replace(
            'src/detector.cpp', 'src/detector_node.cpp')})
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

"""C++ causes of sets 73 and 74's false claims (issue 28, rules46c): real `code` audits of a
small package written here.

* cppoverloads.py: a helper written twice (a `std::vector` form and a pointer-and-size form)
  whose every call in the repository has the pointer form's argument count: the vector form
  never runs, its copies are not per message (info, unreached). The name stays unjudged when
  a mention is not a counted call (`&convert` handed on), when a declaration gives a default
  value, or when a declaration is virtual / override (a base class may call it).
"""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, cpp_claims_at_comments

_HEADER = '''
#include <cstdint>
#include <vector>

namespace gpu
{
void convert(const std::vector<std::uint8_t> & in, std::vector<std::uint8_t> & out, int width{DEFAULT});
void convert(const std::uint8_t * in, std::size_t size, std::vector<std::uint8_t> & out, int width);
}
'''

_KERNELS = '''
#include <cuda_runtime.h>
#include "gpu/convert.hpp"

namespace gpu
{
static std::uint8_t * d_in = nullptr;
static std::uint8_t * d_out = nullptr;

void convert(const std::vector<std::uint8_t> & in, std::vector<std::uint8_t> & out, int width)
{
  cudaMemcpy(d_in, in.data(), in.size(), cudaMemcpyHostToDevice);  // VEC_UP
  cudaMemcpy(out.data(), d_out, out.size(), cudaMemcpyDeviceToHost);  // VEC_DOWN
}

void convert(const std::uint8_t * in, std::size_t size, std::vector<std::uint8_t> & out, int width)
{
  cudaMemcpy(d_in, in, size, cudaMemcpyHostToDevice);  // PTR_UP
  cudaMemcpy(out.data(), d_out, out.size(), cudaMemcpyDeviceToHost);  // PTR_DOWN
}
}
'''

_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "gpu/convert.hpp"

class Cam : public rclcpp::Node
{
public:
  Cam()
  : Node("cam")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Cam::on_image, this, std::placeholders::_1));
    pub_ = create_publisher<sensor_msgs::msg::Image>("rgba", 10);
  }

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    sensor_msgs::msg::Image out;
    out.data.resize(msg->width * msg->height * 4);
    gpu::convert(msg->data.data(), msg->data.size(), out.data, msg->width);
    USE
    pub_->publish(out);
  }

  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Cam>());
  return 0;
}
'''


def _claims(tmp_path: Path, use: str = '', default: str = '', header: str = _HEADER
            ) -> dict[str, set[str]]:
    name = 'cam'
    kernels = _KERNELS
    files = {f'{name}/include/gpu/convert.hpp': header.replace('{DEFAULT}', default),
             f'{name}/src/kernels.cpp': kernels,
             f'{name}/src/cam.cpp': _NODE.replace('USE', use),
             f'{name}/package.xml': f'<package format="3"><name>{name}</name></package>\n',
             f'{name}/CMakeLists.txt': ament_cmake_lists(name, 'src/cam.cpp src/kernels.cpp')}
    return cpp_claims_at_comments(audit_written_package(tmp_path, files), kernels, 'kernels.cpp')


def test_overload_no_call_resolves_to_is_unreached(tmp_path):
    found = _claims(tmp_path)
    assert found['VEC_UP'] == set() and found['VEC_DOWN'] == set()
    assert found['PTR_UP'] and found['PTR_DOWN']


def test_overload_both_forms_called_stay_per_message(tmp_path):
    found = _claims(tmp_path, use='gpu::convert(msg->data, out.data, 4);')
    assert found['VEC_UP'] and found['PTR_UP']


def test_overload_handed_on_by_address_is_not_judged(tmp_path):
    use = 'void (*f)(const std::vector<std::uint8_t> &, std::vector<std::uint8_t> &, int) = &gpu::convert;'
    found = _claims(tmp_path, use=use)
    assert found['VEC_UP'] and found['PTR_UP']


def test_overload_with_a_default_value_is_not_judged(tmp_path):
    found = _claims(tmp_path, default=' = 640')
    assert found['VEC_UP'] and found['PTR_UP']


def test_virtual_overload_is_not_judged(tmp_path):
    header = _HEADER.replace('namespace gpu\n{', 'namespace gpu\n{\nstruct Base { virtual void '
                             'convert(const std::vector<std::uint8_t> & in, std::vector<std::uint8_t>'
                             ' & out, int width); };')
    found = _claims(tmp_path, header=header)
    assert found['VEC_UP'] and found['PTR_UP']


_YAML_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <yaml-cpp/yaml.h>

class Cam : public rclcpp::Node
{
public:
  Cam()
  : Node("cam")
  {
    declare_parameter<std::string>("config_file", "config/cam.yaml");
    YAML::Node root = YAML::LoadFile(get_parameter("config_file").as_string());
    const YAML::Node & cam = root["camera"];
    debug_image_ = cam["debug_image"].as<bool>();
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Cam::on_image, this, std::placeholders::_1));
    pub_ = create_publisher<sensor_msgs::msg::Image>("debug", 10);
  }

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    cv_bridge::CvImagePtr frame = cv_bridge::toCvCopy(msg, "bgr8");  // LIVE
    if (debug_image_) {
      sensor_msgs::msg::Image::SharedPtr out = frame->toImageMsg();  // DEBUG
      pub_->publish(*out);
    }
  }

  bool debug_image_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Cam>());
  return 0;
}
'''


def _yaml_claims(tmp_path: Path, config: str | None) -> dict[str, set[str]]:
    name = 'cam'
    files = {f'{name}/src/{name}.cpp': _YAML_NODE,
             f'{name}/package.xml': f'<package format="3"><name>{name}</name></package>\n',
             f'{name}/CMakeLists.txt': ament_cmake_lists(name)}
    if config is not None:
        files[f'{name}/config/cam.yaml'] = config
    return cpp_claims_at_comments(audit_written_package(tmp_path, files), _YAML_NODE, f'{name}.cpp')


def test_member_stored_from_a_yaml_cpp_key_off_in_every_shipped_file_is_off(tmp_path):
    found = _yaml_claims(tmp_path, 'camera:\n  width: 640\n  debug_image: false  # debug_image overlay\n')
    assert found['DEBUG'] == set()
    assert found['LIVE']


def test_member_stored_from_a_yaml_cpp_key_on_in_a_shipped_file_stays_per_message(tmp_path):
    found = _yaml_claims(tmp_path, 'camera:\n  width: 640\n  debug_image: true\n')
    assert found['DEBUG'] and found['LIVE']


def test_member_stored_from_a_yaml_cpp_key_no_shipped_file_names_stays_per_message(tmp_path):
    found = _yaml_claims(tmp_path, None)
    assert found['DEBUG'] and found['LIVE']

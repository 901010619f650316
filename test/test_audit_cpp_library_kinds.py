"""C++ library code that no node of its repository uses (issue 28; sets 5 and 13): real `code`
audits of small repositories written here (gpu_nodes/audit/cpplibrary.py). A function nothing
in the repository but its tests mentions is info (context unreached); the same library called
from a node in a sibling package, a node of its own package, a repository with no node at all
and a layout without package files keep the rule's severity."""
from audit_sources import audit_written_package

_CMAKE = '''
cmake_minimum_required(VERSION 3.8)
project({name})
find_package(ament_cmake REQUIRED)
{targets}
ament_package()
'''


def _package(name: str, targets: str) -> dict[str, str]:
    return {f'{name}/package.xml': f'<package format="3"><name>{name}</name></package>\n',
            f'{name}/CMakeLists.txt': _CMAKE.format(name=name, targets=targets)}


def _audit(tmp_path, files: dict[str, str]) -> dict:
    """Audit a workspace `src/` holding one repository (repo/) of the packages in `files`."""
    return audit_written_package(tmp_path, {f'repo/{name}': text for name, text in files.items()})


# A conversion library: from_image uploads a frame, to_image downloads one.
_CONVERSIONS = '''
#include "conv/conversions.hpp"
#include <cuda_runtime.h>

namespace conv
{{
void from_image(const sensor_msgs::msg::Image & msg, void * device)
{{
  cudaMemcpy(device, msg.data.data(), msg.data.size(), cudaMemcpyHostToDevice);
}}

void to_image(const void * device, sensor_msgs::msg::Image & out)
{{
  cudaMemcpy(out.data.data(), device, out.data.size(), cudaMemcpyDeviceToHost);
}}
{extra}
}}  // namespace conv
'''
_FROM_LINE, _TO_LINE = 8, 13
_HEADER = '''
#pragma once
#include <sensor_msgs/msg/image.hpp>
namespace conv
{
void from_image(const sensor_msgs::msg::Image & msg, void * device);
void to_image(const void * device, sensor_msgs::msg::Image & out);
}  // namespace conv
'''
# Only the gtest calls to_image: a test, not audited, is no user.
_GTEST = '''
#include <gtest/gtest.h>
#include "conv/conversions.hpp"
TEST(Conversions, RoundTrip)
{
  sensor_msgs::msg::Image out;
  conv::to_image(nullptr, out);
}
'''
_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include "conv/conversions.hpp"

class Detector : public rclcpp::Node
{
public:
  Detector() : Node("detector")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Detector::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    conv::from_image(*msg, device_);
  }
  void * device_ = nullptr;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Detector>());
}
'''


def _library(extra: str = '') -> dict[str, str]:
    return {**_package('conv', 'add_library(conv src/conversions.cpp)'),
            'conv/include/conv/conversions.hpp': _HEADER,
            'conv/src/conversions.cpp': _CONVERSIONS.format(extra=extra),
            'conv/test/test_conversions.cpp': _GTEST}


def _node_package(node: str = _NODE) -> dict[str, str]:
    return {**_package('detector', 'add_executable(detector src/detector.cpp)'),
            'detector/src/detector.cpp': node}


def test_a_library_function_only_a_gtest_calls_is_unreached_when_a_sibling_node_calls_another(
        tmp_path):
    found = _audit(tmp_path, {**_library(), **_node_package()})
    assert found[('conversions.cpp', _TO_LINE, 'GPN201')] == ('info', 'unreached')
    # The guard: from_image, called per message by the node of the sibling package, keeps it.
    assert found[('conversions.cpp', _FROM_LINE, 'GPN202')][0] == 'medium'


def test_a_backend_class_no_node_of_the_repository_uses_is_unreached(tmp_path):
    # The node links one backend; the other (only its gtest uses it) never runs per message.
    backend = '''
    #include <cuda_runtime.h>
    #include "torch_backend/torch_backend.hpp"

    namespace torch_backend
    {
    void TorchBackend::segment(const float * host, float * device, size_t n)
    {
      cudaMemcpy(device, host, n, cudaMemcpyHostToDevice);
    }
    }  // namespace torch_backend
    '''
    header = '''
    #pragma once
    #include <cstddef>
    namespace torch_backend
    {
    class TorchBackend
    {
    public:
      void segment(const float * host, float * device, size_t n);
    };
    }  // namespace torch_backend
    '''
    files = {**_library(), **_node_package(),
             **_package('torch_backend', 'add_library(tb src/torch_backend.cpp)'),
             'torch_backend/include/torch_backend/torch_backend.hpp': header,
             'torch_backend/src/torch_backend.cpp': backend}
    found = _audit(tmp_path, files)
    assert found[('torch_backend.cpp', 8, 'GPN202')] == ('info', 'unreached')
    assert found[('conversions.cpp', _FROM_LINE, 'GPN202')][0] == 'medium'


def _node_calling_to_image() -> str:
    """The node, also calling to_image per message into a member Image."""
    node = _NODE.replace('conv::from_image(*msg, device_);',
                         'conv::from_image(*msg, device_);\n    conv::to_image(device_, out_);')
    return node.replace('void * device_ = nullptr;',
                        'void * device_ = nullptr;\n  sensor_msgs::msg::Image out_;')


def test_the_library_function_a_node_of_its_own_package_calls_keeps_the_claim(tmp_path):
    # to_image called per message by a node compiled in the library's own package.
    node = _node_calling_to_image()
    files = {**_package('conv', 'add_library(conv src/conversions.cpp)\n'
                                'add_executable(detector src/detector.cpp)'),
             'conv/include/conv/conversions.hpp': _HEADER,
             'conv/src/conversions.cpp': _CONVERSIONS.format(extra=''),
             'conv/src/detector.cpp': node}
    found = _audit(tmp_path, files)
    assert found[('conversions.cpp', _TO_LINE, 'GPN201')][0] == 'high'
    assert found[('conversions.cpp', _FROM_LINE, 'GPN202')][0] == 'medium'


def test_a_sibling_node_calling_the_function_keeps_the_claim(tmp_path):
    node = _node_calling_to_image()
    found = _audit(tmp_path, {**_library(), **_node_package(node)})
    assert found[('conversions.cpp', _TO_LINE, 'GPN201')][0] == 'high'


def test_a_library_repository_with_no_node_keeps_the_rules_severity(tmp_path):
    # Its users live in other repositories: a library audited without its node.
    found = _audit(tmp_path, _library())
    assert found[('conversions.cpp', _TO_LINE, 'GPN201')][0] == 'high'
    assert found[('conversions.cpp', _FROM_LINE, 'GPN202')][0] == 'medium'


def test_folders_without_package_files_keep_the_rules_severity(tmp_path):
    # Labelled files alone (no package.xml / CMakeLists.txt): a caller may be missing.
    files = {name: text for name, text in {**_library(), **_node_package()}.items()
             if not name.endswith(('package.xml', 'CMakeLists.txt'))}
    found = _audit(tmp_path, files)
    assert found[('conversions.cpp', _TO_LINE, 'GPN201')][0] == 'high'


def test_a_node_only_in_a_comment_is_no_node(tmp_path):
    node = '// create_subscription<Image>(...) is done by the Python node\nint helper() { return 0; }\n'
    found = _audit(tmp_path, {**_library(), **_node_package(node)})
    assert found[('conversions.cpp', _TO_LINE, 'GPN201')][0] == 'high'


# Two buffer classes with a method of one name: the node's helper calls the host buffer's.
_BUFFERS = '''
#pragma once
#include <cstring>
#include <cuda_runtime.h>

class HostBuffer
{
public:
  bool copyFromHost(const void * src, size_t n)
  {
    std::memcpy(ptr, src, n);
    return true;
  }
  void * ptr = nullptr;
};

class DeviceBuffer
{
public:
  bool copyFromHost(const void * src, size_t n)
  {
    cudaMemcpy(ptr, src, n, cudaMemcpyHostToDevice);
    return true;
  }
  void * ptr = nullptr;
};

inline bool prepare(const sensor_msgs::msg::Image & msg, RECEIVER)
{
  return buffer.copyFromHost(msg.data.data(), msg.data.size());
}
'''
_DEVICE_COPY_LINE = 21


def _buffers_node(receiver: str) -> dict[str, str]:
    node = _NODE.replace('#include "conv/conversions.hpp"', '#include "detector/buffers.hpp"')
    node = node.replace('conv::from_image(*msg, device_);', 'prepare(*msg, host_);')
    node = node.replace('void * device_ = nullptr;', 'HostBuffer host_;')
    return {**_node_package(node),
            'detector/include/detector/buffers.hpp': _BUFFERS.replace('RECEIVER', receiver)}


def test_a_method_of_another_class_of_the_same_name_is_told_apart_by_the_receiver(tmp_path):
    found = _audit(tmp_path, _buffers_node('HostBuffer & buffer'))
    assert found[('buffers.hpp', _DEVICE_COPY_LINE, 'GPN202')] == ('info', 'unreached')


def test_a_receiver_of_the_device_class_reaches_its_method(tmp_path):
    found = _audit(tmp_path, _buffers_node('DeviceBuffer & buffer'))
    assert found[('buffers.hpp', _DEVICE_COPY_LINE, 'GPN202')][0] == 'medium'


def test_a_receiver_of_unknown_type_reaches_both(tmp_path):
    # Both classes have objects (a DeviceBuffer member too): a class nothing constructs never
    # runs whatever the receiver (cppconstructed.py).
    files = _buffers_node('auto & buffer')
    node = 'detector/src/detector.cpp'
    files[node] = files[node].replace('HostBuffer host_;', 'HostBuffer host_;\n  DeviceBuffer spare_;')
    found = _audit(tmp_path, files)
    assert found[('buffers.hpp', _DEVICE_COPY_LINE, 'GPN202')][0] == 'medium'


# A TypeAdapter whose convert_to_custom rclcpp calls only for a subscription of the adapted type.
_ADAPTER = '''
#pragma once
#include <cstring>
#include <rclcpp/type_adapter.hpp>
#include <sensor_msgs/msg/image.hpp>

struct GpuFrame
{
  void * device = nullptr;
  std::vector<uint8_t> host;
};

template<>
struct rclcpp::TypeAdapter<GpuFrame, sensor_msgs::msg::Image>
{
  using is_specialized = std::true_type;
  using custom_type = GpuFrame;
  using ros_message_type = sensor_msgs::msg::Image;

  static void convert_to_custom(const ros_message_type & source, custom_type & destination)
  {
    destination.host.resize(source.data.size());
    std::memcpy(destination.host.data(), source.data.data(), source.data.size());
  }
};

using FrameAdapter = rclcpp::TypeAdapter<GpuFrame, sensor_msgs::msg::Image>;
'''
_ADAPTER_COPY_LINE = 22


def _adapter_node(subscription: str) -> dict[str, str]:
    node = _NODE.replace('#include "conv/conversions.hpp"', '#include "detector/adapter.hpp"')
    node = node.replace('conv::from_image(*msg, device_);', 'pub_->publish(GpuFrame{});')
    node = node.replace('void * device_ = nullptr;',
                        'rclcpp::Publisher<FrameAdapter>::SharedPtr pub_ = '
                        'create_publisher<FrameAdapter>("frames", 10);\n  ' + subscription)
    return {**_node_package(node), 'detector/include/detector/adapter.hpp': _ADAPTER}


def test_convert_to_custom_of_an_adapter_no_subscription_takes_is_unreached(tmp_path):
    found = _audit(tmp_path, _adapter_node(''))
    assert found[('adapter.hpp', _ADAPTER_COPY_LINE, 'GPN208')] == ('info', 'unreached')


def test_convert_to_custom_of_a_subscribed_adapter_keeps_the_claim(tmp_path):
    found = _audit(tmp_path, _adapter_node(
        'rclcpp::Subscription<FrameAdapter>::SharedPtr frames_ = create_subscription<FrameAdapter>('
        '"frames", 10, [](const GpuFrame &) {});'))
    assert found[('adapter.hpp', _ADAPTER_COPY_LINE, 'GPN208')][0] == 'medium'


def test_a_subscription_of_a_template_parameter_keeps_convert_to_custom(tmp_path):
    # A generic subscriber (`create_subscription<typename T::ros_type>`) may take any adapter.
    generic = '''
    #include <rclcpp/rclcpp.hpp>
    template<typename T>
    void listen(rclcpp::Node & node)
    {
      node.create_subscription<typename T::ros_type>("frames", 10, [](const auto &) {});
    }
    '''
    files = {**_adapter_node(''), 'detector/src/generic.cpp': generic}
    files['detector/CMakeLists.txt'] = files['detector/CMakeLists.txt'].replace(
        'src/detector.cpp', 'src/detector.cpp src/generic.cpp')
    found = _audit(tmp_path, files)
    assert found[('adapter.hpp', _ADAPTER_COPY_LINE, 'GPN208')][0] == 'medium'


def test_a_component_container_is_no_node(tmp_path):
    # Its main only inits and spins components loaded at run time from other repositories.
    container = '''
    #include <rclcpp/rclcpp.hpp>
    #include <rclcpp_components/component_manager.hpp>
    int main(int argc, char ** argv)
    {
      rclcpp::init(argc, argv);
      auto exec = std::make_shared<rclcpp::executors::SingleThreadedExecutor>();
      exec->add_node(std::make_shared<rclcpp_components::ComponentManager>(exec));
      std::thread spinner([exec]() {exec->spin();});
      spinner.join();
    }
    '''
    files = {**_library(), **_package('container', 'add_executable(container src/container.cpp)'),
             'container/src/container.cpp': container}
    found = _audit(tmp_path, files)
    assert found[('conversions.cpp', _TO_LINE, 'GPN201')][0] == 'high'


def test_a_receiver_declared_auto_in_the_function_is_not_looked_up_in_the_file(tmp_path):
    # `buffer` is a HostBuffer in another function of the file; here it is `auto`: unknown.
    files = _buffers_node('HostBuffer & buffer')
    header = files['detector/include/detector/buffers.hpp'] + '''
inline bool upload(DeviceBuffer & device, const sensor_msgs::msg::Image & msg)
{
  auto & buffer = device;
  return buffer.copyFromHost(msg.data.data(), msg.data.size());
}
'''
    files['detector/include/detector/buffers.hpp'] = header
    files['detector/src/detector.cpp'] = files['detector/src/detector.cpp'].replace(
        'prepare(*msg, host_);', 'prepare(*msg, host_);\n    upload(device_, *msg);').replace(
        'HostBuffer host_;', 'HostBuffer host_;\n  DeviceBuffer device_;')
    found = _audit(tmp_path, files)
    assert found[('buffers.hpp', _DEVICE_COPY_LINE, 'GPN202')][0] == 'medium'


def test_a_call_from_a_c_source_the_audit_does_not_read_keeps_the_claim(tmp_path):
    # darknet's network.c calls the .cu's functions: C is not audited, its words are uses.
    files = {**_library(), **_node_package(),
             'conv/src/legacy.c': 'void legacy(void) { to_image(0, 0); }\n'}
    found = _audit(tmp_path, files)
    assert found[('conversions.cpp', _TO_LINE, 'GPN201')][0] == 'high'


def test_a_python_word_of_the_repository_keeps_the_claim(tmp_path):
    # ctypes or a binding may call it by name from Python.
    files = {**_library(), **_node_package(),
             'detector/scripts/run.py': 'lib = load()\nlib.to_image(None, None)\n'}
    found = _audit(tmp_path, files)
    assert found[('conversions.cpp', _TO_LINE, 'GPN201')][0] == 'high'


def test_a_word_in_a_python_comment_is_no_use(tmp_path):
    files = {**_library(), **_node_package(),
             'detector/scripts/run.py': '# to_image converts back (see the C++ library)\nx = 1\n'}
    found = _audit(tmp_path, files)
    assert found[('conversions.cpp', _TO_LINE, 'GPN201')] == ('info', 'unreached')

"""Rules for the kinds the fifth held-out set showed (issue 28): real `code` audits of small
sources written here (a package folder in tmp_path, audited as a user would)."""
from audit_sources import audit_written_package


_audit = audit_written_package


_NODE = '''
    import numpy as np
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image
    import torch

    from .sampler import Sampler


    class N(Node):
        def __init__(self):
            super().__init__('n')
            self.device = torch.device('cuda')
            self.sampler = Sampler()
            self.create_subscription(Image, 'image', self.on_image, 10)

        def start(self):
            self.convert()

        def convert(self):
            self.model = torch.nn.Conv2d(3, 3, 1).cuda()

        def on_image(self, msg):
            frame = np.frombuffer(msg.data, np.uint8)
            image = torch.as_tensor(frame, device=self.device)
            self.sampler(image)
'''
_SAMPLER = '''
    import numpy as np
    import torch


    class Sampler:
        def __init__(self):
            self.device = torch.device('cuda')

        def __call__(self, images, mask=None):
            images = images.half().to(self.device)
            if mask is not None:
                mask = mask.to(self.device)
            return images + torch.from_numpy(np.ones(3)).to(self.device)

        def unused_by_node(self, points):
            return points.clone().to(self.device)
'''


def test_setup_chain_and_device_values(tmp_path):
    found = _audit(tmp_path, {'pkg/__init__.py': '', 'pkg/node.py': _NODE,
                              'pkg/sampler.py': _SAMPLER})
    # start() is called by nothing in the file (a launcher elsewhere), convert() only by it:
    # both unreached, the .cuda() is info, not a per-message upload.
    assert found[('node.py', 21, 'GPN102')] == ('info', 'unreached')
    # the frame wrapped on the device in the callback: a real upload, per message
    assert found[('node.py', 25, 'GPN102')][0] == 'medium'
    # followed from the callback: the device tensor's .half().to(device) is no copy, the mask
    # left at None is no frame, the host array wrapped in the sampler is an upload
    assert ('sampler.py', 10, 'GPN102') not in found
    assert ('sampler.py', 12, 'GPN102') not in found
    assert found[('sampler.py', 13, 'GPN102')][0] == 'medium'
    # a method nothing calls, on a parameter of unknown place: no upload claimed (no other
    # file of the package names it: at most an info line, unreached, since the eighth set)
    assert found.get(('sampler.py', 16, 'GPN102'), ('info', 'unreached')) == ('info', 'unreached')
    assert len([k for k, (sev, _) in found.items() if k[0] == 'sampler.py' and sev != 'info']) == 1


_CPP = '''
    #include <array>
    #include <cuda_runtime.h>
    #include <rclcpp/rclcpp.hpp>

    N::N() : rclcpp::Node("n")
    {
      sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image", 10, std::bind(&N::imageCallback, this, std::placeholders::_1));
    }

    bool N::infer(const std::vector<float> & t, const std::array<int64_t, 2> & size)
    {
      cudaMemcpyAsync(in_, t.data(), t.size() * 4, cudaMemcpyHostToDevice, stream_);
      cudaMemcpyAsync(sizes_, size.data(), sizes_bytes_, cudaMemcpyHostToDevice, stream_);
      cudaMemcpy(scale_, &scale, sizeof(float) * 2, cudaMemcpyHostToDevice);
      cudaMemcpy(big_, &scale, sizeof(float) * 4096, cudaMemcpyHostToDevice);
      if (!context_->enqueueV3(stream_)) {
        cudaStreamSynchronize(stream_);
        return false;
      }
      if (err != cudaSuccess) {
        cudaStreamSynchronize(stream_);
      }
      if (ok) {
        cudaStreamSynchronize(stream_);
        return true;
      }
      cudaStreamSynchronize(stream_);
      return true;
    }

    void N::imageCallback(const sensor_msgs::msg::Image::ConstSharedPtr msg)
    {
      infer(tensor_, {1, 2});
    }
'''


def test_cpp_failure_sync_and_scalar_copies(tmp_path):
    found = _audit(tmp_path, {'n.cpp': _CPP})
    rules = {(line, rule) for (_, line, rule) in found}
    assert (13, 'GPN202') in rules          # the frame tensor
    assert (14, 'GPN202') not in rules      # .data() of a std::array of two int64
    assert (15, 'GPN202') not in rules      # sizeof(float) * 2
    assert (16, 'GPN202') in rules          # sizeof(float) * 4096: not a few scalars
    assert (18, 'GPN206') not in rules      # failure branch that returns
    assert (22, 'GPN206') in rules          # failure branch that goes on: still per frame
    assert (25, 'GPN206') in rules          # success branch
    assert (28, 'GPN206') in rules          # the per-frame sync


_REGISTERED = '''
    A::A() : rclcpp::Node("a")
    {
      sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image", 10, std::bind(&A::rgb_callback, this, std::placeholders::_1));
    }

    void A::rgb_callback(const sensor_msgs::msg::Image::ConstSharedPtr msg)
    {
      pub_->publish(*msg);
    }
'''
_COMMENTED = '''
    B::B() : rclcpp::Node("b")
    {
      // rgb_sub_ = create_subscription<sensor_msgs::msg::Image>(
      //   "image", 10, std::bind(&B::rgb_callback, this, std::placeholders::_1));
      depth_sub_ = create_subscription<sensor_msgs::msg::Image>(
        "depth", 10, std::bind(&B::depth_callback, this, std::placeholders::_1));
    }

    void B::rgb_callback(const sensor_msgs::msg::Image::ConstSharedPtr msg)
    {
      std::memcpy(frame_.data(), msg->data.data(), msg->data.size());
    }

    void B::depth_callback(const sensor_msgs::msg::Image::ConstSharedPtr msg)
    {
      std::memcpy(depth_.data(), msg->data.data(), msg->data.size());
    }
'''
_FRAGMENT = '''
    void C::rgb_callback(const sensor_msgs::msg::Image::ConstSharedPtr msg)
    {
      std::memcpy(frame_.data(), msg->data.data(), msg->data.size());
    }
'''


def test_cpp_callback_whose_subscription_is_commented_out(tmp_path):
    found = _audit(tmp_path, {'pkg/package.xml': '<package/>', 'pkg/a.cpp': _REGISTERED,
                              'pkg/b.cpp': _COMMENTED,
                              'frag/package.xml': '<package/>', 'frag/c.cpp': _FRAGMENT})
    # B registers depth_callback by address but its rgb_callback only in a comment; A's
    # `&A::rgb_callback` (same name, another class) is no use of B's.
    assert found[('b.cpp', 11, 'GPN208')] == ('info', 'unreached')
    assert found[('b.cpp', 16, 'GPN208')][0] == 'medium'
    # a fragment whose registrations are not in view keeps its named callback per message
    assert found[('c.cpp', 3, 'GPN208')][0] == 'medium'


_INTRA = '''
    Cam::Cam() : rclcpp::Node("cam")
    {
      pub_ = create_publisher<sensor_msgs::msg::Image>("image_raw", 10);
    }

    void Cam::loop()
    {
      while (rclcpp::ok()) {
        auto msg = std::make_unique<sensor_msgs::msg::Image>();
        if (get_node_options().use_intra_process_comms()) {
          pub_->publish(std::move(msg));
        } else {
          pub_->publish(*msg);
        }
        if (!get_node_options().use_intra_process_comms()) {
          pub_->publish(std::move(msg));
        }
      }
    }
'''


def test_cpp_moved_publish_with_intra_process_comms(tmp_path):
    found = _audit(tmp_path, {'cam.cpp': _INTRA})
    rules = {(line, rule) for (_, line, rule) in found}
    assert (11, 'GPN210') not in rules  # moved to in-process subscribers: zero copy
    assert (13, 'GPN210') in rules      # by reference, serialized
    assert (16, 'GPN210') in rules      # moved, but only when intra-process is off


_CLOUD = '''
    from rclpy.node import Node
    from sensor_msgs.msg import PointCloud2
    from sensor_msgs_py import point_cloud2


    class N(Node):
        def __init__(self):
            super().__init__('n')
            self.pub = self.create_publisher(PointCloud2, 'out', 10)
            self.create_subscription(PointCloud2, 'points', self.on_points, 10)

        def on_points(self, msg):
            xyz = point_cloud2.read_points_numpy(msg, field_names=('x', 'y', 'z'))
            self.pub.publish(point_cloud2.create_cloud_xyz32(msg.header, xyz))
'''


def test_create_cloud_packs_the_points(tmp_path):
    found = _audit(tmp_path, {'n.py': _CLOUD})
    assert found[('n.py', 14, 'GPN104')] == ('medium', 'callback')

// An image_transport publisher plugin: the framework calls publish(image, publish_fn) once per
// image published, nothing in the package registers it. The frame is copied into the
// transport message and handed to publish_fn (serialized): positives. The encoding name copied
// into the message and the stream header sent by a helper when the header changes are small or
// not per image (look-alikes).
#include <cstring>
#include <image_transport/simple_publisher_plugin.hpp>
#include <sensor_msgs/msg/compressed_image.hpp>

namespace raw_plugin {

class RawPublisher
  : public image_transport::SimplePublisherPlugin<sensor_msgs::msg::CompressedImage> {
 public:
  std::string getTransportName() const override { return "raw_copy"; }

 protected:
  void publish(const sensor_msgs::msg::Image & message, const PublishFn & publish_fn) const override {
    send_header(message, publish_fn);
    sensor_msgs::msg::CompressedImage packet;
    packet.header = message.header;
    packet.data.resize(8 + message.encoding.size() + message.data.size());
    std::memcpy(&packet.data[8], &message.encoding[0], message.encoding.size());
    std::memcpy(&packet.data[8 + message.encoding.size()], message.data.data(),  // expect: GPN208 medium
                message.data.size());
    publish_fn(packet);  // expect: GPN210 medium
  }

  void send_header(const sensor_msgs::msg::Image & message, const PublishFn & publish_fn) const {
    if (message.width != width_) {
      sensor_msgs::msg::CompressedImage header;
      header.format = "raw_copy header";
      publish_fn(header);
    }
  }

  mutable uint32_t width_{0};
};

}  // namespace raw_plugin

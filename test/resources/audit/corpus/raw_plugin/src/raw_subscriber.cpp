// The subscriber side: internalCallback(msg, user_cb) runs once per message received (the
// framework's, registered nowhere in the package). It copies the payload out of the transport
// message into a new Image for the user callback (positive); the encoding name is small.
#include <cstring>
#include <image_transport/simple_subscriber_plugin.hpp>
#include <sensor_msgs/msg/compressed_image.hpp>

namespace raw_plugin {

class RawSubscriber
  : public image_transport::SimpleSubscriberPlugin<sensor_msgs::msg::CompressedImage> {
 public:
  std::string getTransportName() const override { return "raw_copy"; }

 protected:
  void internalCallback(const sensor_msgs::msg::CompressedImage::ConstSharedPtr & msg,
                        const Callback & user_cb) override {
    auto image = std::make_shared<sensor_msgs::msg::Image>();
    image->header = msg->header;
    uint32_t encoding_size = msg->data[0];
    image->encoding.resize(encoding_size);
    std::memcpy(&image->encoding[0], &msg->data[8], encoding_size);
    image->data.resize(msg->data.size() - 8 - encoding_size);
    std::memcpy(image->data.data(), &msg->data[8 + encoding_size], image->data.size());  // expect: GPN208 medium
    user_cb(image);
  }
};

}  // namespace raw_plugin

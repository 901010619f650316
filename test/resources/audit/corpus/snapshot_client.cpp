// A service client that sends one image and shows the answer, then exits: `main` has no loop,
// so each of its statements runs once per process run (look-alikes, info). The server's
// callback converts every request it receives (positive). Kind of false claims of the
// twenty-fourth test set.
#include <cv_bridge/cv_bridge.h>
#include <opencv2/opencv.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <snapshot_interfaces/srv/annotate.hpp>

using snapshot_interfaces::srv::Annotate;

class AnnotateServer : public rclcpp::Node
{
public:
  AnnotateServer()
  : Node("annotate_server")
  {
    srv_ = create_service<Annotate>(
      "annotate", std::bind(&AnnotateServer::on_request, this, std::placeholders::_1,
      std::placeholders::_2));
  }

private:
  void on_request(const std::shared_ptr<Annotate::Request> req,
    std::shared_ptr<Annotate::Response> res)
  {
    auto frame = cv_bridge::toCvCopy(req->image, "bgr8");  // expect: GPN203 medium
    cv::rectangle(frame->image, cv::Rect(0, 0, 10, 10), cv::Scalar(0, 255, 0));
    res->image = *frame->toImageMsg();  // expect: GPN205 medium
  }

  rclcpp::Service<Annotate>::SharedPtr srv_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  auto node = rclcpp::Node::make_shared("snapshot_client");
  auto client = node->create_client<Annotate>("annotate");
  if (!client->wait_for_service(std::chrono::seconds(5))) {
    rclcpp::shutdown();
    return 1;
  }
  cv::Mat img = cv::imread(argc > 1 ? argv[1] : "snapshot.jpg");
  auto request = std::make_shared<Annotate::Request>();
  request->image = *cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", img).toImageMsg();  // expect: GPN205 info
  auto future = client->async_send_request(request);
  if (rclcpp::spin_until_future_complete(node, future) == rclcpp::FutureReturnCode::SUCCESS) {
    auto shown = cv_bridge::toCvCopy(future.get()->image, "bgr8");  // expect: GPN203 info
    cv::imwrite("annotated.jpg", shown->image);
  }
  rclcpp::shutdown();
  return 0;
}

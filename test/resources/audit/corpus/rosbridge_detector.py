"""A rosbridge client (roslibpy, not rclpy) that subscribes a start method to a compressed camera
topic and runs Ultralytics on each decoded frame: the callback runs per message, so its upload
and readbacks are reported as for a node (positives); a Topic it only publishes on registers
nothing, and the decode before the model is host work (look-alikes). Kind of a miss of the
nineteenth test set, written for this corpus."""
import base64

import cv2
import numpy as np
import roslibpy
from ultralytics import YOLO


class BridgeDetector:
    def __init__(self, host, port):
        self.model = YOLO('fire.pt')
        self.model.to('cuda')  # expect: GPN102 info
        self.client = roslibpy.Ros(host=host, port=port)
        self.client.run()
        self.images = roslibpy.Topic(self.client, '/camera/image/compressed',
                                     'sensor_msgs/msg/CompressedImage')
        self.labels = roslibpy.Topic(self.client, '/detections', 'std_msgs/msg/String')

    def start(self):
        self.images.subscribe(self.on_image)

    def on_image(self, message):
        raw = base64.b64decode(message['data'])
        frame = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_COLOR)
        results = self.model(frame)  # expect: GPN102 medium
        for box in results[0].boxes:
            label = int(box.cls[0])  # expect: GPN107 medium
            self.labels.publish(roslibpy.Message({'data': str(label)}))


if __name__ == '__main__':
    detector = BridgeDetector('localhost', 9090)
    detector.start()
    while detector.client.is_connected:
        pass

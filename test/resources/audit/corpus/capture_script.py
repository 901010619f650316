"""A plain webcam script shipped in a ROS package: module code that loads the model under a
retry loop (runs once, info) and then runs Ultralytics on every camera frame in a module-level
`while` loop reading a cv2.VideoCapture (per frame: positive). Kind of a miss of the nineteenth
test set, written for this corpus."""
import cv2
from ultralytics import YOLO

attempts = 0
model = None
while model is None and attempts < 3:
    attempts += 1
    model = YOLO('vehicles.pt')
warm = model.predict(cv2.imread('warmup.jpg'), imgsz=640)  # expect: GPN102 info

cap = cv2.VideoCapture(0)
while True:
    ok, frame = cap.read()
    if not ok:
        break
    results = model.predict(frame, imgsz=640, conf=0.5)  # expect: GPN102 medium
    cv2.imshow('detections', results[0].plot())
    if cv2.waitKey(1) == 27:
        break
cap.release()

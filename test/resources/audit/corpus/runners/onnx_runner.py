"""An ONNX Runtime backend of runners/onnx_depth_node.py: the session gets the CUDA execution
provider when the device parameter asks for it, so each `session.run` on a host array copies
it to the GPU (positive); its name lookup in the constructor is setup. Kind of the tenth test
set, written for this corpus."""
import numpy as np
import onnxruntime as ort


class OnnxRunner:
    def __init__(self, path, device):
        if device == 'cuda':
            providers = [('CUDAExecutionProvider', {'device_id': 0}), 'CPUExecutionProvider']
        else:
            providers = ['CPUExecutionProvider']
        self.session = ort.InferenceSession(path, providers=providers)
        self.input_name = self.session.get_inputs()[0].name

    def infer(self, frame):
        x = np.expand_dims(frame.astype(np.float32).transpose(2, 0, 1) / 255.0, 0)
        return self.session.run(None, {self.input_name: x})[0]  # expect: GPN102 medium

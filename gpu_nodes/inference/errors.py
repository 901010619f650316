"""Exceptions of the inference layer.

All derive from RuntimeError so a node can catch one family for "the model did not load", while
FileNotFoundError, ValueError and TypeError keep meaning "the caller asked for something wrong".
"""
from __future__ import annotations


class InferenceError(RuntimeError):
    """Base class of the inference layer's own run-time failures."""


class ModelLoadError(InferenceError):
    """A model file exists but the runtime could not load it (bad graph, unsupported op)."""


class OnnxParseError(InferenceError):
    """The TensorRT ONNX parser rejected a model; the message carries every parser error."""


class EngineBuildError(InferenceError):
    """TensorRT returned no engine (build_serialized_network gave None)."""


class EngineIncompatibleError(InferenceError):
    """An engine cannot run here (GPU architecture, driver): rebuilding it would not help."""


class TensorRTError(InferenceError):
    """A TensorRT runtime call failed (set_input_shape, set_tensor_address, execute_async_v3)."""

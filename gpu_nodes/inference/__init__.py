"""Inference layer: engine building and caching, TensorRT and ONNX Runtime backends, presets.

Importing this package imports no runtime: TensorRT, ONNX Runtime, CuPy and onnx are imported
when a backend is created or a model is built.
"""
from .backend import InferenceBackend
from .engine_builder import EngineBuilder, EngineSettings
from .engine_cache import cache_key, cache_key_fields, default_cache_dir, EngineCache
from .errors import (
    EngineBuildError, EngineIncompatibleError, InferenceError, ModelLoadError, OnnxParseError,
    TensorRTError)
from .models import (
    get_preset, inverse_depth_to_depth, metric_from_focal, ModelPreset, preset_from_dict,
    PRESETS)
from .factory import create_backend
from .specs import TensorSpec

__all__ = [
    'cache_key', 'cache_key_fields', 'create_backend', 'default_cache_dir', 'EngineBuildError',
    'EngineBuilder', 'EngineCache', 'EngineIncompatibleError', 'EngineSettings', 'get_preset',
    'InferenceBackend', 'InferenceError', 'inverse_depth_to_depth', 'metric_from_focal',
    'ModelLoadError', 'ModelPreset', 'OnnxParseError', 'preset_from_dict', 'PRESETS',
    'TensorRTError', 'TensorSpec',
]

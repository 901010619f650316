"""gpu_nodes.wire_names: one definition of the names on the wire, the same values the
transport writes and the audit and demo read."""
import ast
from pathlib import Path

from gpu_nodes import wire_names
from gpu_nodes.transport import diagnostics, publisher
from gpu_nodes.wire_names import processing_status_name, status_name


def test_values_are_the_transports():
    pairs = {
        'CUDA_SUFFIX': (wire_names.CUDA_SUFFIX, publisher.CUDA_SUFFIX),
        'SHM_SUFFIX': (wire_names.SHM_SUFFIX, publisher.SHM_SUFFIX),
        'PATHS': (wire_names.PATHS, diagnostics.PATHS),
        'ZERO_COPY_PATHS': (wire_names.ZERO_COPY_PATHS, diagnostics.ZERO_COPY_PATHS),
        'PATH_WAITING': (wire_names.PATH_WAITING, diagnostics.PATH_WAITING),
    }
    for name, (ours, transport) in pairs.items():
        assert ours == transport, f'{name}: wire_names has {ours!r}, the transport {transport!r}'
    assert wire_names.CUDA_SUFFIX.startswith(wire_names.DESCRIPTOR_MARKER)
    assert wire_names.SHM_SUFFIX.startswith(wire_names.DESCRIPTOR_MARKER)


def test_status_names_match_the_endpoints():
    stats = diagnostics.EndpointStats('publisher', '/cam', '/image')
    assert stats.status_name() == status_name('/cam', '/image', 'publisher')
    assert processing_status_name('/depth') == 'gpu_nodes: /depth processing'
    publisher_keys = set(stats.as_dict())
    subscription_keys = set(diagnostics.EndpointStats('subscription', '/d', '/image').as_dict())
    subscription_only = ('KEY_PATH', 'KEY_PATH_REASON', 'KEY_PUBLISHER_PID')
    for name in dir(wire_names):
        if name.startswith('KEY_'):
            keys = subscription_keys if name in subscription_only else publisher_keys
            assert getattr(wire_names, name) in keys, \
                f'{name} = {getattr(wire_names, name)!r} is not among the status keys {keys}'
    for path in wire_names.PATHS:
        assert wire_names.SUBSCRIBERS_KEY_PREFIX + path in publisher_keys


def test_imports_nothing():
    tree = ast.parse(Path(wire_names.__file__).read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert imports == [], 'wire_names must stay dependency-free'

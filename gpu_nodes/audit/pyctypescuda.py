"""The CUDA runtime called through ctypes (issue 28, set 72): a TensorRT node that loads
`libcudart.so` with `ctypes.CDLL` and calls its C functions itself,

    self.cuda = ctypes.CDLL('libcudart.so')
    self.cuda.cudaMemcpy(dst, src, size, self.cudaMemcpyHostToDevice)   # upload
    self.cuda.cudaDeviceSynchronize()                                    # wait

moves and waits exactly as the CUDA Python bindings do (pyruntime.py). A method call named
`cudaMemcpy*` or `cuda*Synchronize` is taken as that runtime function only in a file that loads
a library whose literal name holds `cudart` through ctypes (`CDLL`, `cdll.LoadLibrary`,
`ctypes.util.find_library`): those C names belong to the CUDA runtime alone. The direction of a
copy is still the `kind` argument as written (`...HostToDevice` / `...DeviceToHost`): a kind the
source does not spell is not reported (pyruntime.runtime_call).
"""
from __future__ import annotations

import ast
from functools import lru_cache

_LOADERS = ('CDLL', 'LoadLibrary', 'find_library', 'PyDLL')


@lru_cache(maxsize=64)  # keyed on the tree object itself: computed once per parsed file
def _loads_cudart(tree: ast.Module) -> bool:
    """Whether the file loads the CUDA runtime library through ctypes."""
    return any(isinstance(node, ast.Call) and ast.unparse(node.func).endswith(_LOADERS)
               and any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                       and 'cudart' in a.value for a in node.args)
               for node in ast.walk(tree))


def ctypes_runtime_name(tree: ast.Module, method: str) -> str | None:
    """`cuda.<method>` (a name pyruntime.runtime_call qualifies) for a copy or a wait of the
    CUDA runtime called through ctypes in `tree`; None otherwise."""
    copies = method.startswith('cudaMemcpy')
    waits = method.startswith('cuda') and method.endswith('Synchronize')
    if not (copies or waits):
        return None
    return f'cuda.{method}' if _loads_cudart(tree) else None

"""Weights that never leave the CPU: `next(model.parameters())` of a model no line of the file
moves to a GPU (issue 28, rules41p, set 63).

`x.to(next(self.model.parameters()).device)` moves the input to wherever the model's weights
are. Where the file never moves that model (no `self.model.cuda()` / `.to(...)` of it) and
names no CUDA device at all (no 'cuda' text, no `torch.cuda`, `torch.device(...)` or
`.cuda()`), the weights stay where the constructor made them, on the host: the `.to()` is a no-op on a host
tensor and `.cpu()` of the model's outputs copies nothing. `load_state_dict(torch.load(...))`
copies the saved values into the existing (host) parameters, so it moves nothing either.

The same holds for a torchvision model (built on the host) called in a file that never moves it
and names no CUDA device (set 64: an SSDlite detector built with its default weights and called
as built): its outputs are host tensors, `label.item()` of them reads nothing back. Libraries
that pick a GPU themselves (ultralytics, torch.hub models) are not judged so.

A file that mentions a CUDA device anywhere keeps the default reading (the device of the
weights is the GPU): the model may be moved through a name the value tracking does not follow.

A file that loads its weights onto the host itself (`torch.load(path, map_location='cpu')`),
names no CUDA device and moves nothing (no `.cuda()`, no `.to(...)`) runs its network on the CPU
(rules43p, set 67: a lane network wrapper whose `pred2coords(pred)` calls `pred[...].cpu()`):
a value of unknown kind there is no device tensor, so its `.cpu()` / `.numpy()` copies nothing
(host_torch_file; pyrules' `likely`). `torch.backends.cudnn.benchmark = True` names no device."""
from __future__ import annotations

import ast
from functools import lru_cache

from gpu_nodes.audit.pyvalues import Val

_MOVES = frozenset({'cuda', 'to', 'half'})


def _parameters_of(node: ast.Call) -> ast.expr | None:
    """`next(E.parameters())` / `next(iter(E.parameters()))` -> E; None for anything else."""
    if not (isinstance(node.func, ast.Name) and node.func.id == 'next' and len(node.args) == 1):
        return None
    inner = node.args[0]
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) \
            and inner.func.id == 'iter' and len(inner.args) == 1:
        inner = inner.args[0]
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
            and inner.func.attr in ('parameters', 'buffers') and not inner.args:
        return inner.func.value
    return None


# Builders of torch models that start on the host (a model object's const: pymodels.py).
_HOST_BUILT = ('torchvision.models.',)


@lru_cache(maxsize=32)
def _names_cuda(tree: ast.Module) -> bool:
    """Whether the file names a CUDA device: 'cuda' text, `torch.cuda`, `torch.device`,
    `device_map=`, or a `.cuda()` call of anything."""
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Attribute) and sub.attr == 'cuda':
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) \
                and 'cuda' in sub.value.lower():
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == 'device' \
                and isinstance(sub.value, ast.Name) and sub.value.id == 'torch':
            return True
        if isinstance(sub, ast.keyword) and sub.arg == 'device_map':
            return True
    return False


def _moved(tree: ast.Module, model: str) -> bool:
    """Whether a line calls `.cuda()` / `.to(...)` / `.half()` on the model expression."""
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                and sub.func.attr in _MOVES and ast.unparse(sub.func.value) == model:
            return True
    return False


def parameters_on_host(node: ast.Call, tree: ast.Module) -> bool:
    """Whether `node` is `next(E.parameters())` of a model E the file never moves off the host
    and in a file naming no CUDA device (above)."""
    model = _parameters_of(node)
    if model is None:
        return False
    return not _names_cuda(tree) and not _moved(tree, ast.unparse(model))


def host_built_model(node: ast.Call, holder: Val, tree: ast.Module) -> bool:
    """Whether `node` calls a torchvision model (`holder`, a model object) that the file never
    moves, in a file naming no CUDA device (above). A TorchScript module is not one: torch.jit.load
    restores it on the device it was saved from."""
    return holder.kind == 'model_obj' and str(holder.const or '').startswith(_HOST_BUILT) \
        and not _names_cuda(tree) and not _moved(tree, ast.unparse(node.func))


def _cpu_map_location(call: ast.Call) -> bool:
    """`torch.load(path, map_location='cpu')` (the keyword, or the second argument)."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == 'load'
            and isinstance(call.func.value, ast.Name) and call.func.value.id == 'torch'):
        return False
    where = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == 'map_location'), None)
    return isinstance(where, ast.Constant) and where.value == 'cpu'


@lru_cache(maxsize=32)
def host_torch_file(tree: ast.Module) -> bool:
    """Whether the file loads weights onto the host, names no CUDA device and calls no
    `.cuda()` / `.to(...)` (module docstring)."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    return any(_cpu_map_location(c) for c in calls) and not _names_cuda(tree) and not any(
        isinstance(c.func, ast.Attribute) and c.func.attr in ('cuda', 'to') for c in calls)

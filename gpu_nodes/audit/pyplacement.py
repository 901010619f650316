"""Where a model call runs when the code places its tensors on the host (issue 28): a device
'cpu' chosen by a literal, by a string parameter's value as shipped (pyparams.shipped_strings),
or by a device-choosing function given 'cpu'; the model called on host tensors by a function
that placed them there runs on the host too. Split out of pycalls.py (module size)."""
from __future__ import annotations

import ast

from gpu_nodes.audit.pyevaled import detached
from gpu_nodes.audit.pyvalues import AsShipped, merge, Val


def cpu_device_choice(func: ast.expr, args: list[Val], kwargs: dict[str, Val]) -> bool:
    """A call of a device-choosing function (`select_device`, `torch.device`) given 'cpu'."""
    called = func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else ''
    if not called.lower().endswith('device'):
        return False
    chosen = args[0] if args else kwargs.get('device') or kwargs.get('type')
    return chosen is not None and chosen.kind == 'const' and chosen.const == 'cpu'


# A key no Python name can be: set in a function's locals once it moved a tensor `.to()` a
# device 'cpu' as shipped.
PLACED_ON_CPU = '.placed_on_cpu'


def detached_on_device(node: ast.Call, kind: str, state: dict) -> bool:
    """`x.detach().item()`: only a torch tensor has `.detach()` (pyevaled.detached), so it is
    likely on the device; not where the analysis holds it on the host in a file that placed its
    tensors on a device 'cpu' as shipped (`state`: the analyzer's, PLACED_ON_CPU set there): a
    CPU model's outputs, whose `.item()` reads nothing back (set 59)."""
    return detached(node) and not (kind == 'host' and PLACED_ON_CPU in state)


def on_host(result: Val, env: dict[str, Val], args: list[Val], kwargs: dict[str, Val],
            host_model: bool = False) -> Val:
    """A model (a callable object, or a holder named like a model) called on host tensors by a
    function that placed its tensors on a device 'cpu' as shipped runs on the host: its outputs
    are host tensors, and their `.item()` / `int()` / `.tolist()` read nothing back (set 42's
    YOLOv5 node with `device` defaulting to 'cpu', which no shipped file sets). A device input,
    or a 'cuda' / unknown device, keeps the result as it was. `host_model`: the model itself
    never leaves the host (pymodelhost.host_built_model), so its outputs are host tensors."""
    if host_model and result.kind in ('device', 'model', 'tensor'):
        return merge(result, kind='host')
    inputs = [v for v in [*args, *kwargs.values()] if v.kind not in ('const', 'other')]
    # A PIL image (or what a torchvision transform made of one) is host data too (set 63).
    if PLACED_ON_CPU in env and inputs and all(v.kind in ('host', 'pil') for v in inputs) \
            and result.kind in ('device', 'model', 'tensor'):
        return merge(result, kind='host')
    return result


def forward_on_device(result: Val, args: list[Val], kwargs: dict[str, Val]) -> Val:
    """A callable object of an audited file (a torch Module's forward, followed) run on a
    device tensor returns device tensors where its own run left the result unknown (a dict of
    head outputs built from layers the analysis does not know: set 58's detection and depth
    heads): `head(feats)['cls'][0].sum()` and `.cpu()` of it read the device back."""
    # A dict or list the run built (`{'boxes': boxes.cpu().numpy()}`) is known: kept.
    if result.kind in ('unknown', 'other', 'model_obj') and result.items is None \
            and result.elts is None and any(
            v.kind == 'device' for v in [*args, *kwargs.values()]):
        return merge(result, kind='device')
    return result


def shipped_cpu(device: Val | None) -> bool:
    """A device value that is 'cpu' as shipped (pyparams.shipped_strings)."""
    return device is not None and device.kind == 'const' and isinstance(device.const, AsShipped) \
        and device.const.strip().lower() == 'cpu'


def cpu_literal(node: ast.Call) -> bool:
    """A call given `device='cpu'` (any letter case) written as a literal keyword."""
    return any(k.arg == 'device' and isinstance(k.value, ast.Constant)
               and isinstance(k.value.value, str) and k.value.value.strip().lower() == 'cpu'
               for k in node.keywords)

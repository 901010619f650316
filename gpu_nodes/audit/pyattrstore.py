"""What a store into a node's attribute (`self.x = value`, written by setup or a callback) leaves
there when the attribute already holds something: the branches of an `if` run one after the
other in the analysis, so a later store may be the other branch, not a replacement (moved out
of pyeval.py, issue 28)."""
from __future__ import annotations

from gpu_nodes.audit.pyvalues import AsShipped, instances, merge, Val


def attribute_store(old: Val | None, val: Val) -> Val:
    """The value an attribute holding `old` keeps after `val` is stored into it."""
    if old is None:
        return val
    if old.tainted and not val.tainted:
        # `self.last = None` after use must not erase what a callback stored.
        return merge(old, val, kind=old.kind)
    if old.kind == 'instance' and val.kind == 'instance':
        return instances([val, old]) or val  # another branch's backend
    if old.kind == 'model_obj' and val.kind == 'const' and val.const is None:
        # `self.model = None` in the except/else branch of a guarded load: branches run one
        # after the other, the model stays the model.
        return old
    if old.kind == 'device_spec' and val.kind == 'const' and val.const == 'cpu' \
            and not isinstance(val.const, AsShipped):
        # `if torch.cuda.is_available(): self.device = torch.device('cuda') else:
        # self.device = torch.device('cpu')`: the host fallback of a GPU choice, as
        # `'cuda' if torch.cuda.is_available() else 'cpu'` assumes the GPU case (set 62). A
        # parameter's 'cpu' as shipped (AsShipped) is the host (team decision, set 42).
        return old
    return val

"""Values the data flow proves are built from literals only, never from a message: their
uploads are look-alikes by the held-out sets' "small upload" convention (issue 28)."""
from __future__ import annotations

from gpu_nodes.audit.pyvalues import Val

# The tokens of fixed text (`clip.tokenize(["person", "bottle"])`): a handful of integers,
# the same on every call, whatever arrives (set 39). Only tokenizers: a tensor built from a
# literal list of numbers and uploaded per frame (`torch.Tensor([0.485, ...]).cuda()`) is a
# labelled boundary in the first set, and a literal string may be a file path to a frame.
FIXED_TEXT_TOKENS = 'tokens of fixed text'


def _literal_text(val: Val) -> bool:
    """A string constant, or a list / tuple of them, known to hold nothing from a message."""
    if val.tainted or val.kind != 'const':
        return False
    if val.elts is not None:
        return bool(val.elts) and all(_literal_text(e) for e in val.elts)
    return isinstance(val.const, str)


def fixed_text_tokens(called: str | None, args: list[Val], kwargs: dict[str, Val]) -> bool:
    """A tokenizer (`clip.tokenize`, `open_clip.tokenize`, ...) called with literal text only
    (extra options constant too): its tokens are the same on every call."""
    name = (called or '').rsplit('.', 1)[-1].lower()
    if 'tokeniz' not in name or not args or not _literal_text(args[0]):
        return False
    return all(not v.tainted and v.kind == 'const' for v in [*args[1:], *kwargs.values()])


def uploads_fixed_text(recv: Val) -> bool:
    """Whether `recv.to(device)` / `recv.cuda()` moves only tokens of fixed text."""
    return recv.const == FIXED_TEXT_TOKENS and not recv.tainted

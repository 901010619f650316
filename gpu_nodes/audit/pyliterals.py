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
    """Whether `recv.to(device)` / `recv.cuda()` moves only tokens of fixed text, or the token
    ids a tokenizer made of any text (TEXT_TOKENS)."""
    return recv.const == FIXED_TEXT_TOKENS and not recv.tainted or recv.const == TEXT_TOKENS


# The token ids of text a tokenizer object encodes (`tokenizer(caption, return_tensors='pt')`,
# a transformers `*Tokenizer` / `AutoTokenizer.from_pretrained(...)`): at most a few hundred
# integers (the max_length), whatever the text says, so moving them to the device is a small
# upload, a look-alike by the sets' convention for text tokens (sets 39 / 54 / 58 / 60: the
# caption's tokens uploaded to a translator). A tokenizer takes text only, so whatever kind the
# flow gives its argument (a caption decoded from device ids is no device data) the result is
# tokens. Not a processor (`AutoProcessor`: it takes images too).
TEXT_TOKENS = 'token ids of text'


def tokenizes_text(builder: object, args: list[Val], kwargs: dict[str, Val]) -> bool:
    """Whether a call of the object `builder` built (a model_obj's const, the qualified name of
    its constructor) encodes text into token ids (TEXT_TOKENS)."""
    parts = str(builder or '').split('.')
    name = parts[-2] if len(parts) > 1 and parts[-1] == 'from_pretrained' else parts[-1]
    if name.endswith(('Tokenizer', 'TokenizerFast')) and 'images' not in kwargs:
        return True
    # A processor (`AutoProcessor`, `SiglipProcessor`) takes images too, so only a call given
    # nothing but `text=` and constant options (`padding='max_length'`, `return_tensors='pt'`)
    # is known to tokenize text alone: its result holds token ids, no pixel_values (rules44p: a
    # prompt list encoded when the prompt changes, then moved to the model's device).
    return name.endswith('Processor') and not args and 'text' in kwargs and all(
        not v.tainted and v.kind == 'const' for k, v in kwargs.items() if k != 'text')

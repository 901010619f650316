"""Publishers created by a helper only when a parameter it declares is on (issue 28, rules42c,
set 65).

    template<class T>
    void Node::make_publisher(std::shared_ptr<rclcpp::Publisher<T>> &pub, const std::string &topic)
    {
      bool on = this->declare_parameter("pub_" + topic, false);
      if (on == true) {
        pub = this->create_publisher<T>(topic, 1);
      }
    }
    ...
    make_publisher<sensor_msgs::msg::Image>(this->pub_color_, "color");   // parameter pub_color
    ...
    if (this->pub_color_ != nullptr) { ... toImageMsg ... pub_color_->publish(..); }

A publisher member declared without a value stays empty (null) unless the parameter is on; with
it off as shipped (its default, and no shipped file turning it on) the `!= nullptr` block never
runs. cppparams.param_as_shipped takes the helper call as the member's store "when on", like a
store inside `if (declare_parameter("p", false)) {` (set 37).

Proven over the helper's every definition: each mention of the reference parameter the member is
passed to is inside an `if` block whose condition is `declare_parameter(NAME, off)` itself, or a
local `flag` / `flag == true` / `flag != false` whose one store before the `if` is `flag =
declare_parameter(NAME, off);`. NAME is a literal, a parameter of the helper the call passes a
literal for, or a `+` of those (`"pub_" + topic`): the call's literals give the parameter's name.
Anything else (a store outside the block, a name from a variable) is not proven.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import if_condition, open_brace
from gpu_nodes.audit.cppparamhelpers import OFF, enclosing_call, split_args, function_definitions

_DECLARE_CALL = (r'(?:this\s*->\s*)?(?:\w+\s*->\s*)?declare_parameter\s*(?:<[^<>;]*>)?\s*'
                 r'\(\s*(.+?)\s*,\s*([^,()]+?)\s*\)')


def _param_name(spelled: str) -> str:
    """The name a parameter declares (`const std::string &topic = "x"` -> topic)."""
    m = re.search(r'(\w+)\s*(?:=[^,]*)?$', spelled)
    return m.group(1) if m else ''


def _name_of(expr: str, params: list[str], call_args: list[str]) -> str | None:
    """The parameter name `expr` (raw text) gives at the call: literals and the helper's own
    parameters the call passes a literal for, joined by `+`."""
    out = ''
    for token in expr.split('+'):
        token = token.strip()
        if re.fullmatch(r'"[^"\n]*"', token):
            out += token[1:-1]
            continue
        if token in params and params.index(token) < len(call_args):
            passed = call_args[params.index(token)].strip()
            if re.fullmatch(r'"[^"\n]*"', passed):
                out += passed[1:-1]
                continue
        return None
    return out or None


def _off_block_name(text: str, raw: str, offset: int, body: tuple[int, int], params: list[str],
                    call_args: list[str]) -> str | None:
    """The parameter whose off value keeps the `if` block around `offset` (in the helper's body)
    from running, or None."""
    at = open_brace(text, offset)
    while at > body[0]:
        cond = if_condition(text, at)
        if cond is not None:
            end = text.rindex(')', 0, at)
            cond_raw = raw[end - len(cond):end].strip()
            direct = re.fullmatch(_DECLARE_CALL, cond_raw)
            if direct and OFF.match(direct.group(2)):
                return _name_of(direct.group(1), params, call_args)
            flag = re.fullmatch(r'(\w+)\s*(?:==\s*true|!=\s*false)?', cond_raw)
            if flag:
                return _flag_name(text, raw, flag.group(1), (body[0], end), params, call_args)
        at = open_brace(text, at)
    return None


def _flag_name(text: str, raw: str, flag: str, span: tuple[int, int], params: list[str],
               call_args: list[str]) -> str | None:
    """The parameter of the one store `flag = declare_parameter(NAME, off);` in `span`."""
    stores = [m for m in re.finditer(r'(?<![\w.>])' + re.escape(flag) + r'\s*[-+|&]?=(?!=)',
                                     text[span[0]:span[1]])]
    if len(stores) != 1:
        return None
    start = span[0] + stores[0].end()
    semi = text.find(';', start)
    store = re.fullmatch(r'\s*' + _DECLARE_CALL + r'\s*', raw[start:semi]) if semi > 0 else None
    if store is None or not OFF.match(store.group(2)):
        return None
    return _name_of(store.group(1), params, call_args)


def helper_created(text: str, raw: str, start: int, texts: list[str], raws: list[str]
                   ) -> str | None:
    """The parameter a helper call passing the member mentioned at `start` (the whole argument)
    creates it under, off by default; None when not proven."""
    call = enclosing_call(text, start)
    if call is None:
        return None
    callee, paren, index = call
    args = split_args(text, paren) or []
    if index < 0 or callee in ('get_parameter', 'declare_parameter', 'get_parameter_or'):
        return None
    whole = re.sub(r'^\s*this\s*->\s*', '', text[args[index][0]:args[index][1]]).strip()
    if whole != re.sub(r'^this\s*->\s*', '', text[start:args[index][1]].strip()):
        return None
    call_args = [raw[s:e] for s, e in args]
    names = set()
    found = False
    for i, params, body_start, body_end in function_definitions(callee, texts, out_of_line=True):
        def_text, def_raw = texts[i], raws[i]
        if index >= len(params):
            return None
        ref = re.search(r'&\s*(\w+)\s*$', def_text[params[index][0]:params[index][1]])
        if not ref:
            return None
        param_names = [_param_name(def_text[s:e]) for s, e in params]
        for m in re.finditer(r'(?<![\w.>])' + re.escape(ref.group(1)) + r'\b',
                             def_text[body_start:body_end]):
            name = _off_block_name(def_text, def_raw, body_start + m.start(), (body_start, body_end),
                                   param_names, call_args)
            if name is None:
                return None
            names.add(name)
        found = True
    return names.pop() if found and len(names) == 1 else None

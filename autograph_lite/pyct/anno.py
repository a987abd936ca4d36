"""Annotations: analysis results attached to AST nodes under documented keys.

Keys:
  LIVE_OUT   set of names read after the node before being rewritten (If/While/For)
  LIVE_IN    set of names live at the head of a loop: read by its test or by its body
             before the body rebinds them, or live after it (While/For)
  EXTRA_TEST names of flags (set by `break`/`return`) that must be false for a For to go on
  PYTHON_IF  True on an If the converters wrote whose test is always a Python bool and whose body
             must stay in place (a `return` that ends a `finally` block): never staged
  FINALLY_RETURNS True on a Try whose `finally` holds a `return` (set by the return converter, so it
             finds the try again among the copies its rewrite makes)
  RETURN_GUARD True on an If the return converter wrote (`if not do_return:`) outside any `finally`,
             whose flag only goes from False to True: its body runs on no run where a `return` ran
"""
LIVE_OUT = "live_out"
LIVE_IN = "live_in"
EXTRA_TEST = "extra_test"
PYTHON_IF = "python_if"
FINALLY_RETURNS = "finally_returns"
RETURN_GUARD = "return_guard"

_FIELD = "___ag_anno"


def set(node, key, value):  # noqa: A001 - mirrors pyct's anno.setanno
    annotations = node.__dict__.setdefault(_FIELD, {})
    annotations[key] = value


def get(node, key, default=None):
    return node.__dict__.get(_FIELD, {}).get(key, default)


def has(node, key):
    return key in node.__dict__.get(_FIELD, {})

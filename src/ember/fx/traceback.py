"""``ember.fx.traceback``: carry node metadata (source stack, custom tags, provenance) from
the code being traced or transformed onto the nodes a tracer creates.

Inside :func:`preserve_node_meta`, every node a tracer makes copies the fields of the
*current meta* (``stack_trace``, ``nn_module_stack``, ``custom``, ``from_node``...); an
:class:`~ember.fx.Interpreter` or :class:`~ember.fx.Transformer` sets the current meta to
the node it is running (:func:`set_current_meta`), so a transformed graph keeps the stack
traces and tags of the graph it came from.

>>> import ember, ember.fx
>>> from ember.fx import traceback as fx_traceback
>>> with fx_traceback.preserve_node_meta(), fx_traceback.annotate({"stage": 1}):
...     gm = ember.fx.symbolic_trace(lambda x: x + 1)
>>> [node.meta.get("custom") for node in gm.graph.nodes]
[{'stage': 1}, {'stage': 1}, {'stage': 1}]
"""

from __future__ import annotations

import contextlib
import copy
import enum
import functools
import traceback

__all__ = ["annotate", "annotate_fn", "preserve_node_meta", "has_preserved_node_meta",
           "set_stack_trace", "set_grad_fn_seq_nr", "reset_grad_fn_seq_nr", "format_stack",
           "set_current_meta", "get_current_meta", "NodeSource", "NodeSourceAction",
           "get_graph_provenance_json", "set_current_replay_node", "get_current_replay_node"]

# The metadata new nodes inherit while node metadata is preserved.
current_meta = {}
current_replay_node = None
should_preserve_node_meta = False

# The meta fields a tracer copies from the current meta onto each node it creates.
COPIED_META_FIELDS = ("nn_module_stack", "torch_fn", "source_fn_stack", "original_aten",
                      "recompute", "ac_graph_id", "has_backward_hook", "from_node",
                      "quantization_tag", "custom", "partitioner_tag")


class NodeSourceAction(enum.Enum):
    """How a node came from another one: created from it, or replacing it."""

    CREATE = "create"
    REPLACE = "replace"


class NodeSource:
    """Provenance of a node: the node (name, target, graph) it was made from, by which pass
    and how, with that node's own provenance nested in ``from_node``.

    >>> import ember.fx
    >>> g = ember.fx.Graph(); x = g.placeholder("x")
    >>> NodeSource(x, "my_pass", NodeSourceAction.CREATE).to_dict()["pass_name"]
    'my_pass'
    """

    class NodeInfo:
        """The name, target (as text) and graph id of the source node."""

        def __init__(self, name, target, graph_id):
            self.name = name
            self.target = target
            self.graph_id = graph_id

    def __init__(self, node, pass_name="", action=None):
        actions = [] if action is None else action if isinstance(action, list) else [action]
        for one in actions:
            if not isinstance(one, NodeSourceAction):
                raise AssertionError(f"Expected NodeSourceAction, got {type(one)}")
        self.pass_name = pass_name
        self.action = actions
        if node:
            self.node_info = self.NodeInfo(node.name, str(node.target), id(node.graph))
            self.from_node = copy.deepcopy(node.meta.get("from_node", []))
        else:
            self.node_info = None
            self.from_node = []

    @property
    def name(self):
        """The source node's name ('' when unknown)."""
        return self.node_info.name if self.node_info else ""

    @property
    def target(self):
        """The source node's target as text ('' when unknown)."""
        return self.node_info.target if self.node_info else ""

    @property
    def graph_id(self):
        """``id()`` of the source node's graph (-1 when unknown)."""
        return self.node_info.graph_id if self.node_info else -1

    def _action_text(self):
        return "+".join(one.name.lower() for one in self.action)

    def print_readable(self, indent=0):
        """One line per level of provenance, indented by depth."""
        if indent > 9:
            return ""
        text = (" " * indent * 4 + f"(name={self.name}, pass_name={self.pass_name}, "
                f"action={self._action_text()}, graph_id={self.graph_id})\n")
        return text + "".join(source.print_readable(indent + 1) for source in self.from_node)

    def __repr__(self):
        return self.print_readable()

    def to_dict(self):
        """The provenance as plain dicts and lists (JSON-ready)."""
        return {"name": self.name, "target": self.target, "graph_id": self.graph_id,
                "pass_name": self.pass_name, "action": self._action_text(),
                "from_node": [source.to_dict() for source in self.from_node]}

    def __eq__(self, other):
        return isinstance(other, NodeSource) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(repr(self.to_dict()))


@contextlib.contextmanager
def preserve_node_meta(enable=True):
    """Within the block, nodes created by tracers inherit the current meta; the current
    meta is restored on exit."""
    global should_preserve_node_meta, current_meta
    saved_flag, saved_meta = should_preserve_node_meta, current_meta.copy()
    try:
        should_preserve_node_meta = enable
        yield
    finally:
        should_preserve_node_meta, current_meta = saved_flag, saved_meta


def has_preserved_node_meta():
    """Whether a :func:`preserve_node_meta` block is active."""
    return should_preserve_node_meta


def set_stack_trace(stack):
    """Set the current meta's ``stack_trace`` to the joined lines of ``stack`` (cleared when
    empty); only while node metadata is preserved."""
    if should_preserve_node_meta:
        if stack:
            current_meta["stack_trace"] = "".join(stack)
        else:
            current_meta.pop("stack_trace", None)


def format_stack():
    """The current stack as formatted lines, or the preserved ``stack_trace`` while node
    metadata is preserved.

    >>> isinstance(format_stack(), list)
    True
    """
    if should_preserve_node_meta:
        return [current_meta.get("stack_trace", "")]
    return traceback.format_list(traceback.extract_stack()[:-1])


def set_grad_fn_seq_nr(seq_nr):
    """Enter a backward function's scope: push its sequence number onto the current meta."""
    if should_preserve_node_meta:
        current_meta["grad_fn_seq_nr"] = current_meta.get("grad_fn_seq_nr", []) + [seq_nr]
        current_meta["in_grad_fn"] = current_meta.get("in_grad_fn", 0) + 1


def reset_grad_fn_seq_nr():
    """Leave the scope entered by :func:`set_grad_fn_seq_nr`."""
    if not should_preserve_node_meta:
        return
    level = current_meta.get("in_grad_fn", 0)
    if level <= 0:
        raise AssertionError(f"Expected current_level > 0, got {level}")
    if level == 1:
        del current_meta["in_grad_fn"]
        del current_meta["grad_fn_seq_nr"]
    else:
        current_meta["in_grad_fn"] = level - 1
        current_meta["grad_fn_seq_nr"] = current_meta["grad_fn_seq_nr"][:-1]


@contextlib.contextmanager
def set_current_meta(node, pass_name=""):
    """Within the block, the current meta is a copy of ``node.meta`` whose ``from_node``
    names ``node`` (only while node metadata is preserved and ``node`` has meta)."""
    global current_meta
    if not (should_preserve_node_meta and node.meta):
        yield
        return
    saved = current_meta
    try:
        current_meta = node.meta.copy()
        current_meta["from_node"] = [NodeSource(node, pass_name, NodeSourceAction.CREATE)]
        yield
    finally:
        current_meta = saved


def get_current_meta():
    """The metadata new nodes inherit (a dict, live)."""
    return current_meta


@contextlib.contextmanager
def annotate(annotation_dict):
    """Within the block, nodes created while metadata is preserved get ``annotation_dict``
    merged into ``node.meta["custom"]``.

    >>> with annotate({"tag": 1}):
    ...     get_current_meta()["custom"]
    {'tag': 1}
    """
    had_custom = "custom" in current_meta
    saved = copy.copy(current_meta.get("custom", {}))
    try:
        current_meta.setdefault("custom", {}).update(annotation_dict)
        yield
    finally:
        if had_custom:
            current_meta["custom"] = saved
        else:
            del current_meta["custom"]


def annotate_fn(annotation_dict):
    """Decorator: run the function inside ``annotate(annotation_dict)``.

    >>> @annotate_fn({"stage": 0})
    ... def custom_now():
    ...     return get_current_meta()["custom"]
    >>> custom_now()
    {'stage': 0}
    """
    def decorator(function):
        @functools.wraps(function)
        def annotated(*args, **kwargs):
            with annotate(annotation_dict):
                return function(*args, **kwargs)
        return annotated
    return decorator


@contextlib.contextmanager
def set_current_replay_node(node):
    """Within the block, :func:`get_current_replay_node` returns ``node``."""
    global current_replay_node
    saved = current_replay_node
    try:
        current_replay_node = node
        yield
    finally:
        current_replay_node = saved


def get_current_replay_node():
    """The node being regenerated, set by :func:`set_current_replay_node` (else ``None``)."""
    return current_replay_node


def get_graph_provenance_json(graph):
    """For each ``call_function`` node of ``graph``: its ``from_node`` provenance as dicts."""
    return {node.name: [source.to_dict() for source in node.meta.get("from_node", [])]
            for node in graph.nodes if node.op == "call_function"}

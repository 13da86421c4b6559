"""``ember.fx.subgraph_rewriter``: find every copy of a pattern in a traced graph and replace
it with another function's graph (torch.fx's ``replace_pattern``).

A pattern is a function (or module) traced with :func:`~ember.fx.symbolic_trace`; its
placeholders match any graph value, every other node must match a node with the same op,
target and arguments, and the nodes inside a match (all but those returned) must not be
used outside it. A pattern may return several values (a tuple); the replacement then returns
as many. Matches are searched in graph order and overlapping ones are dropped.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from .graph import Graph
from .graph_module import GraphModule
from .node import Node

__all__ = ["Match", "replace_pattern", "replace_pattern_with_filters", "ReplacedPatterns"]


class Match(NamedTuple):
    """One replaced copy of the pattern: the pattern's returned node (``anchor``) and the map
    from each pattern node to the graph node it matched."""

    anchor: Node
    nodes_map: dict


@dataclasses.dataclass
class ReplacedPatterns:
    """One replaced copy of the pattern: its ``anchor`` (the graph node the pattern's
    returned node matched), the pattern-to-graph ``nodes_map``, and the new nodes inserted
    in its place (``replacements``)."""

    anchor: Node
    nodes_map: dict
    replacements: list


class InternalMatch(NamedTuple):
    """What a match filter sees (torch's ``InternalMatch``): the pattern's ``anchors``, the
    node map, and the graph nodes bound to the pattern's inputs and returned values."""

    anchors: list
    nodes_map: dict
    placeholder_nodes: list
    returning_nodes: list


def _pattern_graph(pattern):
    if isinstance(pattern, Graph):
        return pattern
    if isinstance(pattern, GraphModule):
        return pattern.graph
    from ._symbolic_trace import symbolic_trace
    return symbolic_trace(pattern).graph


class _Matcher:
    """Matches the pattern backwards from its returned nodes (its anchors), one graph node
    at a time; with several returned values, each anchor is tried on every graph node."""

    def __init__(self, pattern_graph, ignore_literals=False, node_name_match=""):
        self.ignore_literals = ignore_literals
        self.node_name_match = node_name_match
        self.pattern_nodes = [n for n in pattern_graph.nodes if n.op not in ("placeholder",
                                                                             "output")]
        output = next(n for n in pattern_graph.nodes if n.op == "output")
        returned = output.args[0]
        self.returned = list(returned) if isinstance(returned, (tuple, list)) else [returned]
        if not self.returned or not all(isinstance(value, Node) and value.op != "placeholder"
                                        for value in self.returned):
            raise NotImplementedError("ember.fx.replace_pattern: the pattern must return "
                                      "values it computes (a node or a tuple of nodes)")
        # As torch: the anchors are the returned values nothing else in the pattern uses;
        # matching backwards from them reaches the other returned values.
        self.anchors = [value for value in self.returned if len(value.users) == 1]
        self.placeholders = [n for n in pattern_graph.nodes if n.op == "placeholder"]

    def match_at(self, graph_node, candidates=()):
        """The match whose first anchor is ``graph_node`` (the other anchors searched among
        ``candidates``), or None."""
        nodes_map = {}
        if not self.anchors or not self._match_node(self.anchors[0], graph_node, nodes_map):
            return None
        nodes_map = self._match_other_anchors(1, nodes_map, candidates)
        if nodes_map is None:
            return None
        return InternalMatch(list(self.anchors), nodes_map,
                             [nodes_map[n] for n in self.placeholders],
                             [nodes_map[value] for value in self.returned])

    def _match_other_anchors(self, index, nodes_map, candidates):
        if index == len(self.anchors):
            return nodes_map if self._is_self_contained(nodes_map) else None
        if self.anchors[index] in nodes_map:
            return self._match_other_anchors(index + 1, nodes_map, candidates)
        for candidate in candidates:
            attempt = dict(nodes_map)
            if self._match_node(self.anchors[index], candidate, attempt):
                found = self._match_other_anchors(index + 1, attempt, candidates)
                if found is not None:
                    return found
        return None

    def _match_node(self, pattern_node, graph_node, nodes_map):
        if pattern_node in nodes_map:
            return nodes_map[pattern_node] is graph_node
        if any(matched is graph_node for matched in nodes_map.values()):
            return False
        if pattern_node.op == "placeholder" or (self.node_name_match
                                                 and self.node_name_match in graph_node.name):
            nodes_map[pattern_node] = graph_node
            return True
        if (pattern_node.op != graph_node.op or pattern_node.target != graph_node.target
                or set(pattern_node.kwargs) != set(graph_node.kwargs)):
            return False
        nodes_map[pattern_node] = graph_node
        pairs = list(zip(pattern_node.kwargs.values(),
                         (graph_node.kwargs[key] for key in pattern_node.kwargs)))
        return (self._match_argument(pattern_node.args, graph_node.args, nodes_map)
                and all(self._match_argument(p, g, nodes_map) for p, g in pairs))

    def _match_argument(self, pattern_arg, graph_arg, nodes_map):
        if isinstance(pattern_arg, Node):
            return isinstance(graph_arg, Node) and self._match_node(pattern_arg, graph_arg,
                                                                    nodes_map)
        if isinstance(pattern_arg, (tuple, list)):
            return (type(pattern_arg) is type(graph_arg) and len(pattern_arg) == len(graph_arg)
                    and all(self._match_argument(p, g, nodes_map)
                            for p, g in zip(pattern_arg, graph_arg)))
        if self.ignore_literals:  # a literal in the pattern stands for any argument
            return True
        return not isinstance(graph_arg, Node) and pattern_arg == graph_arg

    def _is_self_contained(self, nodes_map):
        """Nodes computed inside the match (not the returned ones) are used only inside it."""
        inside = {nodes_map[n] for n in self.pattern_nodes}
        returned = {nodes_map[value] for value in self.returned}
        return all(user in inside for node in inside - returned for user in node.users)


def _find_matches(graph, matcher):
    matches, taken = [], set()
    candidates = [node for node in graph.nodes if node.op not in ("placeholder", "output")]
    for node in candidates:
        match = matcher.match_at(node, candidates)
        if match is None:
            continue
        computed = {match.nodes_map[n] for n in matcher.pattern_nodes}
        if computed & taken:
            continue
        taken |= computed
        matches.append(match)
    return matches


def _insertion_point(graph, returned):
    """Just before the first user of any matched returned value (the end when none)."""
    for node in graph.nodes:
        if any(node in value.users for value in returned):
            return node
    return None


def _replace(gm, match, matcher, replacement_graph, replaced):
    """Replace one match; ``replaced`` maps graph nodes already replaced to their new values
    (a later match may read one through a placeholder, as torch's rewriter records)."""
    graph = gm.graph
    for pattern_input in matcher.placeholders:
        bound = match.nodes_map[pattern_input]
        match.nodes_map[pattern_input] = replaced.get(bound, bound)
    replacement_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    value_map = {new: match.nodes_map[old]
                 for new, old in zip(replacement_placeholders, matcher.placeholders)}
    returned = match.returning_nodes
    before = set(graph.nodes)
    with graph.inserting_before(_insertion_point(graph, returned)):
        new_value = graph.graph_copy(replacement_graph, value_map)
    new_values = list(new_value) if len(returned) > 1 else [new_value]
    if len(new_values) != len(returned):
        raise RuntimeError(f"replace_pattern: the replacement returns {len(new_values)} "
                           f"values where the pattern returns {len(returned)}")
    for old_value, value in zip(returned, new_values):
        old_value.replace_all_uses_with(value)
        replaced[old_value] = value
    for pattern_node in reversed(matcher.pattern_nodes):
        graph.erase_node(match.nodes_map[pattern_node])
    return [node for node in graph.nodes if node not in before]


def replace_pattern_with_filters(gm, pattern, replacement=None, match_filters=None,
                                 ignore_literals=False, replacement_callback=None,
                                 node_name_match=""):
    """:func:`replace_pattern`, keeping only the matches for which every
    ``filter(match, original_graph, pattern_graph)`` in ``match_filters`` is true; returns
    a :class:`ReplacedPatterns` per replaced match. With ``ignore_literals`` a constant in
    the pattern matches any argument; ``replacement_callback(match, original_graph,
    pattern_graph)`` may give each match its own replacement graph; a non-empty
    ``node_name_match`` accepts any graph node whose name contains it.

    >>> import ember, ember.fx
    >>> gm = ember.fx.symbolic_trace(lambda x: ember.relu(x) + 1)
    >>> len(replace_pattern_with_filters(gm, lambda x: ember.relu(x), lambda x: x.abs(),
    ...                                  [lambda match, graph, pattern: False]))
    0
    """
    pattern_graph = _pattern_graph(pattern)
    matcher = _Matcher(pattern_graph, ignore_literals, node_name_match)
    matches = [match for match in _find_matches(gm.graph, matcher)
               if all(keep(match, gm.graph, pattern_graph) for keep in match_filters or ())]
    if replacement is None and replacement_callback is None:
        raise AssertionError("Must provide either a replacement GraphModule or a "
                             "replacement callback")
    replacement_graph = None if replacement is None else _pattern_graph(replacement)
    replaced, results = {}, []
    for match in matches:
        graph_for_match = (replacement_callback(match, gm.graph, pattern_graph)
                           if replacement_callback is not None else replacement_graph)
        new_nodes = _replace(gm, match, matcher, graph_for_match, replaced)
        results.append(ReplacedPatterns(match.anchors[0], match.nodes_map, new_nodes))
    gm.recompile()
    return results


def replace_pattern(gm, pattern, replacement):
    """Replace every non-overlapping copy of ``pattern`` in ``gm``'s graph with
    ``replacement`` (functions or modules taking the same inputs); returns the matches.

    >>> import ember, ember.fx
    >>> gm = ember.fx.symbolic_trace(lambda x: ember.relu(x) + ember.relu(x + 1))
    >>> matches = replace_pattern(gm, lambda x: ember.relu(x), lambda x: ember.sigmoid(x))
    >>> len(matches), "relu" in gm.code
    (2, False)
    """
    return [Match(result.anchor, result.nodes_map)
            for result in replace_pattern_with_filters(gm, pattern, replacement)]

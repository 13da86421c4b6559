"""Generated Python for a fused element-wise chain that trains: one straight-line function
for the forward (each step's operands and result kept for the backward) and one for the
backward of each pattern of needed gradients.

A fused chain of ``n`` steps interpreted by a loop pays, per step and per call, for building
the operand list, looking the step up and testing each operand reference; the backward also
tests, per operand, whether it is the chain's running value and whether its gradient is
needed. All of that is known when the chain is compiled, so it is written out once as source
and compiled with ``exec``: a step whose fusion rule is one array-module function is called
directly (``xp.tanh(v3)``), the others through their rule; the backward calls each step's
local derivative with a constant mask and adds the pieces into named gradients, in the order
the loop would (so the sums round as they did).

Example::

    >>> from ember.ops._registry import registry
    >>> ops = [registry[n][0] for n in ("add", "tanh")]
    >>> chain = Chain([ops[0].fuse.for_arity(2), ops[1].fuse.for_arity(1)], [(0, 1), (-1,)])
    >>> stash = []
    >>> out = chain.forward(np, [np.zeros(2), np.ones(2)], stash)
    >>> [round(float(v), 4) for v in out]
    [0.7616, 0.7616]
    >>> [round(float(v), 4) for v in chain.backward((True, False))(np, np.ones(2), stash)[0]]
    [0.42, 0.42]
"""

from __future__ import annotations

__all__ = ["Chain", "SourceWriter"]


class Chain:
    """A fused chain's generated forward and backwards. ``rules`` are the steps' fusion
    rules (``ops/_fusion.py``: ``step``, ``ufunc``, ``grad``), ``refs`` each step's operands:
    an input's position, or -1 for the previous step's result.

    Example::

        >>> from ember.ops._registry import registry
        >>> neg = registry["neg"][0].fuse.for_arity(1)
        >>> Chain([neg], [(0,)]).forward(np, [np.ones(1)], [])
        array([-1.])
    """

    def __init__(self, rules, refs):
        self.rules = list(rules)
        self.refs = [tuple(r) for r in refs]
        self.arity = 1 + max((r for step in self.refs for r in step), default=-1)
        self.forward = self._compile_forward()
        self._backwards = {}

    # ------------------------------------------------------------ forward

    def _compile_forward(self):
        """``forward(xp, arrays, stash) -> result``; appends to ``stash`` one tuple holding
        every step's operand list and result."""
        names = {}
        lines = ["def forward(xp, arrays, stash):"]
        if self.arity:
            lines.append(f"    {', '.join(f'a{i}' for i in range(self.arity))}, = arrays")
        kept = []
        for j, (rule, refs) in enumerate(zip(self.rules, self.refs)):
            operands = ", ".join(f"v{j - 1}" if r < 0 else f"a{r}" for r in refs)
            lines.append(f"    r{j} = [{operands}]")
            if rule.ufunc is not None:
                lines.append(f"    v{j} = xp.{rule.ufunc}({operands})")
            else:
                names[f"S{j}"] = rule.step
                lines.append(f"    v{j} = S{j}(xp, r{j}, None)")
            kept.append(f"r{j}, v{j}")
        lines.append(f"    stash.append(({', '.join(kept)},))")
        lines.append(f"    return v{len(self.rules) - 1}")
        return _compile("\n".join(lines), names, "forward")

    # ------------------------------------------------------------ backward

    def backward(self, needed):
        """``backward(xp, g, stash) -> gradients``: one entry per input (None where
        ``needed[i]`` is false or no step reads it), from the chain's output gradient ``g``
        and the ``stash`` a forward filled."""
        function = self._backwards.get(needed)
        if function is None:
            function = self._backwards[needed] = self._compile_backward(needed)
        return function

    def _compile_backward(self, needed):
        names = {}
        n = len(self.rules)
        kept = ", ".join(f"r{j}, v{j}" for j in range(n))
        lines = ["def backward(xp, g, stash):", f"    {kept}, = stash[0]"]
        assigned = set()
        for j in reversed(range(n)):
            refs = self.refs[j]
            wants = [r < 0 or bool(needed[r]) for r in refs]
            if not any(wants):
                continue
            names[f"D{j}"], names[f"M{j}"] = self.rules[j].grad, wants
            lines.append(f"    p = D{j}(xp, g, r{j}, v{j}, M{j})")
            takes_running = False
            for k, r in enumerate(refs):
                if r < 0:
                    lines.append(f"    g = p[{k}]")
                    takes_running = True
                elif needed[r]:
                    if r in assigned:
                        lines.append(f"    G{r} = G{r} + p[{k}]")
                    else:
                        lines.append(f"    G{r} = p[{k}]")
                        assigned.add(r)
            if not takes_running:
                lines.append("    g = None")
        results = [f"G{i}" if i in assigned else "None" for i in range(self.arity)]
        lines.append(f"    return ({', '.join(results)},)")
        return _compile("\n".join(lines), names, "backward")


def _compile(source, names, name):
    namespace = dict(names)
    exec(compile(source, f"<ember fused chain {name}>", "exec"), namespace)
    return namespace[name]


class SourceWriter:
    """What the writers of generated straight-line code share: a name per graph value
    (``v0``, ``v1``...), objects bound into the function's globals under fresh names, and the
    final ``exec``. ``replay.py`` (tensors through ember's operators) and ``joint.py``
    (arrays through the kernels) subclass it.

    Example::

        >>> writer = SourceWriter({"x": 1})
        >>> writer.bind("K", 2)
        'K1'
        >>> writer.compiled("def f(): return x + K1", "f", "<example>")()
        3
    """

    def __init__(self, names):
        self.names = dict(names)
        self.variables = {}
        self.lines = []

    def variable(self, value):
        """The name of ``value`` in the generated code."""
        name = self.variables.get(value)
        if name is None:
            name = self.variables[value] = f"v{len(self.variables)}"
        return name

    def bind(self, prefix, obj):
        """A fresh global name for ``obj`` in the generated code."""
        name = f"{prefix}{len(self.names)}"
        self.names[name] = obj
        return name

    def compiled(self, source, name, filename):
        """The function ``name`` defined by ``source``, with the bound names as globals and
        its source kept as ``.source``."""
        namespace = dict(self.names)
        exec(compile(source, filename, "exec"), namespace)
        function = namespace[name]
        function.source = source
        return function

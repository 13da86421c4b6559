"""``ember.jit.generate_bytecode``: torch's mobile-bytecode upgrader tools (TorchScript mobile
runtime; not in ember).

Example::

    >>> from ember.jit.generate_bytecode import format_bytecode
    >>> format_bytecode((("instructions", (("STOREN", 1, 2),)),))
    {'instructions': [['STOREN', 1, 2]]}
"""

__all__ = ["format_bytecode", "generate_upgraders_bytecode"]


def format_bytecode(table):
    """A nested tuple bytecode table as dicts and lists (as torch formats it)."""

    def listify(content):
        return [listify(c) for c in content] if isinstance(content, tuple) else content

    return {entry[0]: listify(entry[1]) for entry in table}


def generate_upgraders_bytecode():
    """torch's TorchScript operator-upgrader bytecode: ember has no TorchScript mobile runtime."""
    raise NotImplementedError("torch.jit.generate_bytecode.generate_upgraders_bytecode needs "
                              "TorchScript's mobile runtime, which ember does not have")

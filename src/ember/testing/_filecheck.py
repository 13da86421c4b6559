"""``torch.testing.FileCheck``: LLVM FileCheck's directives for testing generated text.

Directives are chained and then run on a string: ``check`` finds text after the previous
match, ``check_next`` on the next line, ``check_same`` on the same line, ``check_not`` must
not occur before the next positive match, ``check_count`` finds a number of occurrences,
``check_dag`` finds a group of texts in any order, ``check_regex`` a regular expression.
A failed directive raises RuntimeError naming what was expected and where the search was.

Example::

    >>> from ember.testing import FileCheck
    >>> FileCheck().check("def forward").check_next("return").run("def forward(x):\\n  return x")
"""

from __future__ import annotations

import re

__all__ = ["FileCheck"]


class _Check:
    __slots__ = ("kind", "text", "count", "exactly", "regex")

    def __init__(self, kind, text, count=1, exactly=False, regex=False):
        self.kind, self.text, self.count, self.exactly, self.regex = (
            kind, text, count, exactly, regex)

    def label(self):
        names = {"check": "CHECK", "next": "CHECK-NEXT", "same": "CHECK-SAME",
                 "not": "CHECK-NOT", "dag": "CHECK-DAG", "count": f"CHECK-COUNT-{self.count}",
                 "regex": "CHECK-REGEX"}
        return names[self.kind]

    def find(self, source, start, end=None):
        """``(begin, stop)`` of the first match in ``source[start:end]``, or None."""
        end = len(source) if end is None else end
        if self.regex:
            match = re.compile(self.text).search(source, start, end)
            return None if match is None else match.span()
        where = source.find(self.text, start, end)
        return None if where < 0 else (where, where + len(self.text))


class FileCheck:
    """A chain of FileCheck directives, run on a string with :meth:`run`.

    Example::

        >>> FileCheck().check_count("add", 2, exactly=True).run("add; mul; add")
    """

    def __init__(self):
        self._checks = []

    def _add(self, check):
        self._checks.append(check)
        return self

    def check(self, text):
        """Find ``text`` after the previous match."""
        return self._add(_Check("check", text))

    def check_next(self, text):
        """Find ``text`` on the line after the previous match."""
        return self._add(_Check("next", text))

    def check_same(self, text):
        """Find ``text`` on the same line as the previous match."""
        return self._add(_Check("same", text))

    def check_not(self, text):
        """``text`` must not occur between the previous match and the next positive one."""
        return self._add(_Check("not", text))

    def check_count(self, text, count, exactly=False):
        """Find ``count`` occurrences of ``text``; with ``exactly``, no more follow."""
        return self._add(_Check("count", text, count=count, exactly=exactly))

    def check_dag(self, text):
        """Find ``text`` after the previous match; consecutive dag checks match in any order."""
        return self._add(_Check("dag", text))

    def check_regex(self, pattern):
        """Find the regular expression ``pattern`` after the previous match."""
        return self._add(_Check("check", pattern, regex=True))

    def check_source_highlighted(self, text):
        """Find ``text`` (as torch, for highlighted source excerpts: the same as check)."""
        return self._add(_Check("check", text))

    def run(self, test_string):
        """Apply the directives to ``test_string``; RuntimeError at the first that fails."""
        _Runner(self._checks, test_string).run()


class _Runner:
    def __init__(self, checks, source):
        self.checks, self.source = checks, source
        self.position = 0          # where the next search starts
        self.previous = (0, 0)     # the last positive match
        self.pending_nots = []

    def run(self):
        index = 0
        while index < len(self.checks):
            check = self.checks[index]
            if check.kind == "not":
                self.pending_nots.append(check)
            elif check.kind == "dag":
                group = [check]
                while index + 1 < len(self.checks) and self.checks[index + 1].kind == "dag":
                    index += 1
                    group.append(self.checks[index])
                self._match_dags(group)
            else:
                self._match(check)
            index += 1
        self._resolve_nots(len(self.source))

    def _fail(self, check, at, found=False):
        if found:
            message = f'Expected to not find "{check.text}" but found it'
        else:
            message = f'Expected to find "{check.text}" but did not find it\nSearched string:'
        excerpt = self.source[at:at + 200]
        raise RuntimeError(f"{message}\n{excerpt}\nFrom {check.label()}: {check.text}\n")

    def _resolve_nots(self, end):
        for check in self.pending_nots:
            if check.find(self.source, self.position, end) is not None:
                self._fail(check, self.position, found=True)
        self.pending_nots = []

    def _match(self, check):
        start = self.position
        repeats = check.count if check.kind == "count" else 1
        first = None
        for _ in range(repeats):
            span = check.find(self.source, start)
            if span is None:
                self._fail(check, self.position)
            first = span if first is None else first
            start = span[1]
        if check.kind in ("next", "same"):
            self._check_line_distance(check, first[0])
        self._resolve_nots(first[0])
        if check.kind == "count" and check.exactly and check.find(self.source, start) is not None:
            self._fail(check, start, found=True)
        self.previous, self.position = (first[0], start), start

    def _check_line_distance(self, check, match_start):
        """CHECK-NEXT wants exactly one line break since the previous match, CHECK-SAME none."""
        breaks = self.source.count("\n", self.previous[1], match_start)
        wanted = 1 if check.kind == "next" else 0
        if breaks != wanted:
            message = "not find" if breaks > wanted else "find"
            raise RuntimeError(f'Expected to {message} "\\n" but '
                               f'{"found" if breaks > wanted else "did not find"} it\n'
                               f"{self.source[self.previous[1]:match_start + 40]}\n"
                               f"From {check.label()}: {check.text}\n")

    def _match_dags(self, group):
        spans = []
        for check in group:
            span = check.find(self.source, self.position)
            if span is None:
                self._fail(check, self.position)
            spans.append(span)
        self._resolve_nots(min(s[0] for s in spans))
        end = max(s[1] for s in spans)
        self.previous, self.position = (min(s[0] for s in spans), end), end

"""The OpInfo checks that ember fails today, each with the reason.

Keys are (op id, check), with check one of "forward", "backward", "forward_ad"; the op id
is the OpInfo's name plus its variant (``linalg.pinv.hermitian``). ``test_opinfo.py`` runs
these as strict xfails: fix the op, then delete its entry. This list only shrinks.
"""

KNOWN_FAILURES = {
}

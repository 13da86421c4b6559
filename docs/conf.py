"""Sphinx configuration for ember's documentation (``make -C docs html``)."""

import os
import sys

sys.path.insert(0, os.path.abspath("../src"))

project = "ember"
author = "the ember developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "none"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
myst_enable_extensions = []
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
extensions.append("myst_parser")
exclude_patterns = ["_build", "benchmarks.md"]
html_theme = "alabaster"
suppress_warnings = ["myst.header", "autodoc.import_object"]
nitpicky = False

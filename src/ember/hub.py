"""``ember.hub``: torch.hub's model loading: hubconf entrypoints and cached checkpoints.

* :func:`load_state_dict_from_url` downloads a checkpoint once into ``get_dir()/checkpoints``
  (any URL ``urllib`` opens, ``file://`` included) and loads it with :func:`ember.load`;
* :func:`load`, :func:`list` and :func:`help` call the entrypoints of a repository's
  ``hubconf.py``: with ``source="local"`` a directory, with ``source="github"`` the copy
  cached under ``get_dir()`` as ``owner_repo_ref`` (downloaded from GitHub when missing).

The cache is torch's (``$TORCH_HOME/hub``, default ``~/.cache/torch/hub``), so files torch
downloaded are reused. Without network access a missing download fails with a clear error.

Example::

    >>> import ember.hub
    >>> ember.hub.get_dir().endswith("hub")
    True
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from urllib.error import URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024

_hub_dir = None


def _get_torch_home():
    default = os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")
    return os.path.expanduser(os.getenv("TORCH_HOME", default))


def get_dir():
    """The hub cache directory: the one :func:`set_dir` chose, else ``$TORCH_HOME/hub``.

    Example::

        >>> os.path.basename(get_dir())
        'hub'
    """
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    return _hub_dir if _hub_dir is not None else os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    """Use ``d`` as the hub cache directory from now on.

    Example::

        >>> old = get_dir(); set_dir("/tmp/hub"); get_dir()
        '/tmp/hub'
        >>> set_dir(old)
    """
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _open_url(url):
    try:
        return urlopen(Request(url, headers={"User-Agent": "torch.hub"}))
    except URLError as e:
        raise RuntimeError(f"torch.hub could not open {url}: {e.reason}. Without network "
                           "access, place the file in the hub cache (ember.hub.get_dir()) or "
                           "use a file:// URL or source='local'") from e


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download ``url`` to the file ``dst`` (through a temporary file, so a failed download
    never leaves a partial ``dst``); with ``hash_prefix``, check the SHA-256 digest starts
    with it.

    Example::

        >>> import pathlib, tempfile
        >>> src = pathlib.Path(tempfile.mkdtemp(), "w.bin"); _ = src.write_bytes(b"abc")
        >>> download_url_to_file(src.as_uri(), str(src) + ".copy", progress=False)
    """
    dst = os.path.expanduser(dst)
    partial = f"{dst}.{uuid.uuid4().hex}.partial"
    digest = hashlib.sha256() if hash_prefix is not None else None
    try:
        with _open_url(url) as response, open(partial, "wb") as out:
            while chunk := response.read(READ_DATA_CHUNK):
                out.write(chunk)
                if digest is not None:
                    digest.update(chunk)
        if digest is not None and not digest.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                               f'"{digest.hexdigest()}")')
        shutil.move(partial, dst)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _is_legacy_zip_format(filename):
    if not zipfile.is_zipfile(filename):
        return False
    infolist = zipfile.ZipFile(filename).infolist()
    return len(infolist) == 1 and not infolist[0].is_dir()


def _legacy_zip_load(filename, model_dir, map_location, weights_only):
    """A checkpoint zipped by hand around one ``torch.save`` file (old torch.hub format)."""
    with zipfile.ZipFile(filename) as archive:
        member = archive.infolist()[0]
        archive.extractall(model_dir)
    from .serialization import load as _load
    return _load(os.path.join(model_dir, member.filename), map_location=map_location,
                 weights_only=weights_only)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """Download the checkpoint at ``url`` once (into ``model_dir``, default
    ``get_dir()/checkpoints``) and load it with :func:`ember.load`.

    ``check_hash`` checks the file's SHA-256 against the hex prefix in its name
    (``name-<hash>.ext``), as torch does.

    Example::

        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp(), "w.pt"); ember.save({"a": 1}, path)
        >>> load_state_dict_from_url(path.as_uri(), model_dir=tempfile.mkdtemp())
        {'a': 1}
    """
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    model_dir = model_dir if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        if progress:
            sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            hash_prefix = match.group(1) if match else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached_file):
        return _legacy_zip_load(cached_file, model_dir, map_location, weights_only)
    from .serialization import load as _load
    return _load(cached_file, map_location=map_location, weights_only=weights_only)


# ---- hubconf repositories ----

def _import_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_hubconf(repo_dir, skip_validation=False):
    """Import ``repo_dir/hubconf.py`` (with ``repo_dir`` on ``sys.path`` meanwhile)."""
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: a hub repository needs a hubconf.py")
    sys.path.insert(0, repo_dir)
    try:
        module = _import_module(MODULE_HUBCONF, path)
    finally:
        sys.path.remove(repo_dir)
    missing = [dep for dep in getattr(module, VAR_DEPENDENCY, None) or []
               if importlib.util.find_spec(dep) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entrypoint(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _parse_repo_info(github):
    if ":" in github:
        owner_and_name, ref = github.split(":", 1)
    else:
        owner_and_name, ref = github, None
    if owner_and_name.count("/") != 1:
        raise ValueError(f'Invalid input: repo_or_dir should be in the form of '
                         f'"repo_owner/repo_name[:ref]", got {github}')
    owner, name = owner_and_name.split("/")
    return owner, name, ref


def _trusted_list_file():
    return os.path.join(get_dir(), "trusted_list")


def _check_repo_is_trusted(owner, name, owner_name_branch, trust_repo, calling_fn="load"):
    """torch's trust check: a repository must be trusted before its code is run."""
    trusted_file = _trusted_list_file()
    trusted = set()
    if os.path.exists(trusted_file):
        with open(trusted_file) as f:
            trusted = {line.strip() for line in f}
    key = f"{owner}_{name}"
    is_trusted = key in trusted or owner in _TRUSTED_REPO_OWNERS or \
        os.path.exists(os.path.join(get_dir(), owner_name_branch))
    if trust_repo is None:
        if not is_trusted:
            warnings.warn("You are about to download and run code from an untrusted repository. "
                          "In a future release, this won't be allowed. To add the repository to "
                          "your trusted list, change the command to {calling_fn}(..., "
                          "trust_repo=False) and a command prompt will appear asking for an "
                          "explicit confirmation of trust, or "
                          f"{calling_fn}(..., trust_repo=True), which will assume that the "
                          "prompt is to be answered with 'yes'. You can also use "
                          f"{calling_fn}(..., trust_repo='check') which will only prompt for "
                          "confirmation if the repo is not already trusted. This will "
                          "eventually be the default behaviour", stacklevel=3)
        return
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        answer = input(f"The repository {owner}/{name} does not belong to the list of trusted "
                       "repositories and as such cannot be downloaded. Do you trust this "
                       "repository and wish to add it to the trusted list of repositories "
                       "(y/N)?")
        if answer.lower() in ("y", "yes"):
            trust_repo = True
        else:
            raise Exception("Untrusted repository.")  # noqa: TRY002  (torch's exception)
    if trust_repo is True and key not in trusted:
        os.makedirs(get_dir(), exist_ok=True)
        with open(trusted_file, "a") as f:
            f.write(key + "\n")


def _github_repo_dir(github, force_reload, trust_repo, calling_fn, verbose=True):
    """The cached checkout ``get_dir()/owner_name_ref`` (downloaded when missing)."""
    owner, name, ref = _parse_repo_info(github)
    hub_dir = get_dir()
    candidates = [ref] if ref is not None else ["main", "master"]
    for branch in candidates:
        folder = f"{owner}_{name}_{branch.replace('/', '_')}"
        repo_dir = os.path.join(hub_dir, folder)
        if os.path.isdir(repo_dir) and not force_reload:
            _check_repo_is_trusted(owner, name, folder, trust_repo, calling_fn)
            if verbose:
                sys.stderr.write(f"Using cache found in {repo_dir}\n")
            return repo_dir
    branch = candidates[0]
    folder = f"{owner}_{name}_{branch.replace('/', '_')}"
    _check_repo_is_trusted(owner, name, folder, trust_repo, calling_fn)
    return _download_repo(owner, name, branch, os.path.join(hub_dir, folder), verbose)


def _download_repo(owner, name, branch, repo_dir, verbose):
    os.makedirs(os.path.dirname(repo_dir), exist_ok=True)
    url = f"https://github.com/{owner}/{name}/zipball/{branch}"
    archive = os.path.join(tempfile.mkdtemp(), f"{branch.replace('/', '_')}.zip")
    if verbose:
        sys.stderr.write(f'Downloading: "{url}" to {archive}\n')
    download_url_to_file(url, archive, progress=False)
    with zipfile.ZipFile(archive) as z:
        top = z.infolist()[0].filename.split("/")[0]
        z.extractall(os.path.dirname(archive))
    if os.path.exists(repo_dir):
        shutil.rmtree(repo_dir)
    shutil.move(os.path.join(os.path.dirname(archive), top), repo_dir)
    return repo_dir


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):  # noqa: A001
    """The entrypoint names of the repository ``owner/name[:ref]``.

    Example::

        >>> list("pytorch/vision:main", trust_repo=True)  # doctest: +SKIP
    """
    repo_dir = _github_repo_dir(github, force_reload, trust_repo, "list", verbose)
    module = _load_hubconf(repo_dir, skip_validation)
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):  # noqa: A001
    """The docstring of the entrypoint ``model`` of the repository ``owner/name[:ref]``.

    Example::

        >>> help("pytorch/vision:main", "resnet18", trust_repo=True)  # doctest: +SKIP
    """
    repo_dir = _github_repo_dir(github, force_reload, trust_repo, "help", verbose=True)
    return _entrypoint(_load_hubconf(repo_dir, skip_validation), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """Call the entrypoint ``model(*args, **kwargs)`` of a repository's ``hubconf.py``.

    ``source="local"``: ``repo_or_dir`` is a directory; ``"github"``: ``owner/name[:ref]``.

    Example::

        >>> net = load("path/to/repo", "tiny_model", source="local")  # doctest: +SKIP
    """
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _github_repo_dir(repo_or_dir, force_reload, trust_repo, "load", verbose)
    module = _load_hubconf(repo_or_dir, skip_validation)
    return _entrypoint(module, model)(*args, **kwargs)


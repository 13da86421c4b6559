"""ember.random, ember.hub and ember.futures at torch's paths, each against torch."""

import pathlib
import threading

import numpy as np
import pytest
import torch
import torch.futures as TF
import torch.hub as TH

import ember
import ember.futures as EF
import ember.hub as EH
import ember.random as ER


def test_random_module_names_and_state_round_trip_like_torch():
    import torch.random as TR
    assert set(ER.__all__) == set(TR.__all__)
    for R, lib in ((TR, torch), (ER, ember)):
        R.manual_seed(5)
        assert R.initial_seed() == 5
        state = R.get_rng_state()
        first = lib.rand(3).tolist()
        R.set_rng_state(state)
        assert lib.rand(3).tolist() == first
        with R.fork_rng():
            lib.rand(10)
        after = lib.rand(2).tolist()
        R.set_rng_state(state)
        lib.rand(3)
        assert lib.rand(2).tolist() == after
        assert R.thread_safe_generator() is None
    TR.manual_seed(7)
    ER.manual_seed(7)
    assert ember.rand(4).tolist() == torch.rand(4).tolist()


def test_future_then_wait_and_errors_match_torch():
    for F in (TF, EF):
        fut = F.Future()
        chained = fut.then(lambda f: f.wait() + 1)
        seen = []
        fut.add_done_callback(lambda f: seen.append(f.value()))
        assert not fut.done()
        fut.set_result(3)
        assert fut.done() and chained.wait() == 4 and seen == [3]
        with pytest.raises(RuntimeError, match="marked completed once"):
            fut.set_result(4)
        failed = F.Future()
        failed.set_exception(ValueError("bad"))
        with pytest.raises(ValueError, match="bad"):
            failed.wait()
        with pytest.raises(RuntimeError, match="Got the following error when running the "
                                               "callback: ValueError: bad"):
            failed.then(lambda f: f.wait()).wait()
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fut.then(lambda f: 1 / 0).wait()
        with pytest.raises(AssertionError, match="not an Exception"):
            F.Future().set_exception(3)
        assert F.wait_all([fut, chained]) == [3, 4]
        with pytest.raises(ValueError, match="bad"):
            F.wait_all([fut, failed])


def test_futures_complete_from_another_thread_like_torch():
    for F in (TF, EF):
        futures = [F.Future() for _ in range(3)]
        collected = F.collect_all(futures)
        assert not collected.done()
        workers = [threading.Thread(target=f.set_result, args=(i * 10,))
                   for i, f in enumerate(futures)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert [f.wait() for f in collected.wait()] == [0, 10, 20]


@pytest.fixture
def hub_dirs(tmp_path):
    old_t, old_e = TH.get_dir(), EH.get_dir()
    TH.set_dir(str(tmp_path / "torch_hub"))
    EH.set_dir(str(tmp_path / "ember_hub"))
    yield tmp_path
    TH.set_dir(old_t)
    EH.set_dir(old_e)


def test_load_state_dict_from_url_caches_and_checks_hash_like_torch(hub_dirs):
    weights = {"w": torch.arange(6.0).reshape(2, 3)}
    source = hub_dirs / "weights.pt"
    torch.save(weights, source)
    t = TH.load_state_dict_from_url(source.as_uri(), progress=False)
    e = EH.load_state_dict_from_url(source.as_uri(), progress=False)
    np.testing.assert_array_equal(t["w"].numpy(), e["w"].numpy())
    assert (pathlib.Path(EH.get_dir()) / "checkpoints" / "weights.pt").exists()
    source.unlink()  # the cached copy is used from now on
    assert EH.load_state_dict_from_url(source.as_uri(), progress=False)["w"].shape == (2, 3)
    digest_named = hub_dirs / "model-deadbeef.pt"
    torch.save(weights, digest_named)
    for H in (TH, EH):
        with pytest.raises(RuntimeError, match="invalid hash value"):
            H.load_state_dict_from_url(digest_named.as_uri(), check_hash=True, progress=False,
                                       model_dir=str(hub_dirs / f"{H.__name__}_ck"))
    assert not (hub_dirs / "ember.hub_ck" / "model-deadbeef.pt").exists()


def test_download_url_to_file_and_unreachable_url(hub_dirs):
    payload = hub_dirs / "blob.bin"
    payload.write_bytes(b"0123456789" * 1000)
    for H in (TH, EH):
        dst = hub_dirs / f"copy_{H.__name__}.bin"
        H.download_url_to_file(payload.as_uri(), str(dst), progress=False)
        assert dst.read_bytes() == payload.read_bytes()
    with pytest.raises(RuntimeError, match="could not open"):
        EH.download_url_to_file((hub_dirs / "missing.bin").as_uri(), str(hub_dirs / "x"))


HUBCONF = '''
dependencies = ["numpy"]

def tiny(scale=1.0):
    """A tiny entrypoint."""
    import numpy
    return {"scale": scale, "numpy": numpy.__name__}

def _private():
    return None
'''


def test_hub_local_and_cached_repositories_match_torch(hub_dirs):
    repo = hub_dirs / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(HUBCONF)
    for H in (TH, EH):
        assert H.load(str(repo), "tiny", 2.0, source="local") == {"scale": 2.0, "numpy": "numpy"}
        with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
            H.load(str(repo), "nope", source="local")
        with pytest.raises(ValueError, match="Unknown source"):
            H.load(str(repo), "tiny", source="web")
        cached = pathlib.Path(H.get_dir()) / "someone_models_main"
        cached.mkdir(parents=True)
        (cached / "hubconf.py").write_text(HUBCONF)
    results = [(H.list("someone/models:main", trust_repo=True, verbose=False),
                H.help("someone/models:main", "tiny", trust_repo=True),
                H.load("someone/models:main", "tiny", trust_repo=True, verbose=False))
               for H in (TH, EH)]
    assert results[0] == results[1]
    (repo / "hubconf.py").write_text('dependencies = ["no_such_package_xyz"]\n')
    for H in (TH, EH):
        with pytest.raises(RuntimeError, match="Missing dependencies: no_such_package_xyz"):
            H.load(str(repo), "tiny", source="local")


def test_fork_raises_at_once_and_returns_the_futures_class():
    for lib in (ember, torch):
        with pytest.raises(ZeroDivisionError):
            lib.jit.fork(lambda: 1 / 0)
    assert ember.Future is ember.futures.Future is ember.jit.Future
    assert isinstance(ember.jit.fork(lambda: 1), ember.futures.Future)
    with pytest.raises(RuntimeError, match="Got the following error when running the callback"):
        done = ember.Future()
        chained = done.then(lambda f: 1 / 0)
        done.set_result(1)
        chained.wait()

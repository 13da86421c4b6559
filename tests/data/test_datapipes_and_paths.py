"""torch.utils.data's DataPipes, graph settings and DistributedSampler path, against torch."""

import io
import random

import pytest
import torch
import torch.utils.data.datapipes as tdp
import torch.utils.data.graph_settings as tgs

import ember
import ember.utils.data.datapipes as edp
import ember.utils.data.graph_settings as egs

pytestmark = pytest.mark.filterwarnings("ignore:Local function is not supported")


def both(build):
    """The same pipeline built from torch's and ember's DataPipes (``build(lib_datapipes)``)."""
    return build(tdp), build(edp)


PIPELINES = {
    "map_filter_batch": lambda D: D.iter.IterableWrapper(range(10)).map(lambda x: x * 3)
    .filter(lambda x: x % 2 == 0).batch(2),
    "map_columns": lambda D: D.iter.IterableWrapper([(1, 2, 3), (4, 5, 6)])
    .map(lambda a, b: a + b, input_col=[0, 2]),
    "map_output_col": lambda D: D.iter.IterableWrapper([[1, 2], [3, 4]])
    .map(lambda a: -a, input_col=1, output_col=-1),
    "dict_column": lambda D: D.iter.IterableWrapper([{"a": 1}, {"a": 2}])
    .map(lambda a: a * 5, input_col="a"),
    "batch_unbatch": lambda D: D.iter.IterableWrapper(range(7)).batch(3).batch(2).unbatch(2),
    "unbatch_all": lambda D: D.iter.IterableWrapper([[[0, 1], [2]], [[3]]]).unbatch(-1),
    "concat_zip": lambda D: D.iter.IterableWrapper(range(3)).concat(D.iter.IterableWrapper(
        range(5, 7))).zip(D.iter.IterableWrapper("abcdefg")),
    "mux": lambda D: D.iter.IterableWrapper(range(4)).mux(D.iter.IterableWrapper([10, 20])),
    "groupby": lambda D: D.iter.IterableWrapper(range(11)).groupby(
        lambda x: x % 3, keep_key=True, buffer_size=5),
    "groupby_size": lambda D: D.iter.IterableWrapper(range(12)).groupby(
        lambda x: x % 2, group_size=3),
    "sharded": lambda D: D.iter.IterableWrapper(range(11)).sharding_filter(),
    "shuffled": lambda D: D.iter.IterableWrapper(range(20)).shuffle(buffer_size=5).set_seed(7),
    "shuffle_unbatch": lambda D: D.iter.IterableWrapper([[1, 2], [3, 4], [5]]).shuffle(
        unbatch_level=1).set_seed(3),
    "collate": lambda D: D.iter.IterableWrapper([[1, 2], [3, 4]]).collate(
        collate_fn=lambda batch: sum(batch)),
    "sampler": lambda D: D.iter.Sampler(D.iter.IterableWrapper([4, 5, 6])),
    "map_style": lambda D: D.map.SequenceWrapper(range(5)).map(lambda x: x + 1).batch(2),
    "map_zip_concat": lambda D: D.map.SequenceWrapper([1, 2]).concat(D.map.SequenceWrapper(
        [3])).zip(D.map.SequenceWrapper("xyz")),
    "map_shuffle": lambda D: D.map.SequenceWrapper(list(range(10))).shuffle().set_seed(5),
}


def as_lists(items):
    return [list(x) if isinstance(x, list) else x for x in items]


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_yields_torchs_items(name):
    t, e = both(PIPELINES[name])
    t_items = list(t) if not isinstance(t, tdp.datapipe.MapDataPipe) else [t[i] for i in
                                                                          range(len(t))]
    e_items = list(e) if not isinstance(e, edp.datapipe.MapDataPipe) else [e[i] for i in
                                                                          range(len(e))]
    assert as_lists(e_items) == as_lists(t_items)
    try:
        expected_len = len(t)
    except TypeError:
        with pytest.raises(TypeError):
            len(e)
    else:
        assert len(e) == expected_len


@pytest.mark.parametrize("num,instance", [(3, 0), (3, 2), (4, 1)])
def test_sharding_and_shuffle_settings_match_torch(num, instance):
    t, e = both(lambda D: D.iter.IterableWrapper(range(13)).shuffle().sharding_filter())
    tgs.apply_sharding(t, num, instance)
    egs.apply_sharding(e, num, instance)
    tgs.apply_shuffle_settings(t, shuffle=False)
    egs.apply_shuffle_settings(e, shuffle=False)
    assert list(e) == list(t)
    assert len(e) == len(t)


def test_nested_sharding_groups_combine_as_torchs():
    P = torch.utils.data.datapipes.iter.sharding.SHARDING_PRIORITIES
    Q = ember.utils.data.datapipes.iter.sharding.SHARDING_PRIORITIES
    t, e = both(lambda D: D.iter.IterableWrapper(range(30)).sharding_filter())
    t.apply_sharding(2, 1, P.DISTRIBUTED)
    t.apply_sharding(3, 2, P.MULTIPROCESSING)
    e.apply_sharding(2, 1, Q.DISTRIBUTED)
    e.apply_sharding(3, 2, Q.MULTIPROCESSING)
    assert list(e) == list(t)
    with pytest.raises(RuntimeError, match="cannot mix DEFAULT"):
        e.apply_sharding(2, 0)
    t2, e2 = both(lambda D: D.iter.IterableWrapper(range(4)).sharding_filter().sharding_filter())
    with pytest.raises(RuntimeError, match="Sharding twice"):
        tgs.apply_sharding(t2, 2, 0)
    with pytest.raises(RuntimeError, match="Sharding twice"):
        egs.apply_sharding(e2, 2, 0)


def test_fork_and_demux_match_torch():
    ta, tb = tdp.iter.IterableWrapper(range(5)).fork(2)
    ea, eb = edp.iter.IterableWrapper(range(5)).fork(2)
    assert list(zip(ea, eb)) == list(zip(ta, tb))
    assert list(ea) == list(ta)
    t_parts = tdp.iter.IterableWrapper(range(9)).demux(3, lambda x: x % 3)
    e_parts = edp.iter.IterableWrapper(range(9)).demux(3, lambda x: x % 3)
    assert [list(p) for p in e_parts] == [list(p) for p in t_parts]
    bad = edp.iter.IterableWrapper(range(3)).demux(2, lambda x: 5)
    with pytest.raises(ValueError, match="should be between 0 and 1"):
        list(bad[0])
    with pytest.raises(BufferError):
        list(edp.iter.IterableWrapper(range(10)).fork(2, buffer_size=3)[0])


def test_errors_match_torch():
    for build, error in [
        (lambda D: D.iter.IterableWrapper([1]).batch(0), AssertionError),
        (lambda D: D.iter.IterableWrapper([1]).map(lambda x: x, output_col=1), ValueError),
        (lambda D: D.iter.IterableWrapper([1]).map(lambda a, b: a, input_col=0), ValueError),
        (lambda D: D.iter.Concater(), ValueError),
        (lambda D: list(D.iter.IterableWrapper([1]).filter(lambda x: 1)), ValueError),
        (lambda D: D.iter.IterableWrapper([1]).fork(0), ValueError),
        (lambda D: D.iter.FileOpener(["x"], mode="w"), ValueError),
        (lambda D: D.iter.IterableWrapper([1]).no_such_function, AttributeError),
    ]:
        with pytest.raises(error) as expected:
            build(tdp)
        with pytest.raises(error) as got:
            build(edp)
        assert str(got.value).split(",")[0] == str(expected.value).split(",")[0]


def test_files_streams_and_decoders_match_torch(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "b.json").write_text('{"k": [1, 2]}')
    (tmp_path / "a.txt").write_text("hello")
    (tmp_path / "sub" / "c.txt").write_text("deep")
    (tmp_path / "d.csv").write_text("1,2")
    results = []
    for D in (tdp, edp):
        listed = list(D.iter.FileLister(str(tmp_path), ["*.txt", "*.json"], recursive=True))
        opened = D.iter.FileOpener(D.iter.FileLister(str(tmp_path), "*.txt"), mode="t")
        texts = [(p, s) for p, s in D.iter.StreamReader(opened, chunk=3)]
        decoded = list(D.iter.RoutedDecoder(D.iter.FileOpener(
            D.iter.FileLister(str(tmp_path), ["*.json", "*.txt"]), mode="b")))
        results.append((listed, texts, decoded))
    assert results[0] == results[1]
    stream = io.BytesIO(b"abc")
    wrapped = ember.utils.data.datapipes.utils.common.StreamWrapper(stream)
    assert wrapped.read() == b"abc"
    wrapped.close()
    assert stream.closed


def test_functional_datapipe_registration_and_graph():
    @ember.utils.data.functional_datapipe("twice_for_test")
    class Twice(ember.utils.data.IterDataPipe):
        def __init__(self, source):
            self.source = source

        def __iter__(self):
            for x in self.source:
                yield 2 * x

    pipe = edp.iter.IterableWrapper([1, 2]).twice_for_test().map(str)
    assert list(pipe) == ["2", "4"]
    graph = ember.utils.data.graph.traverse_dps(pipe)
    names = [type(dp).__name__ for dp in egs.get_all_graph_pipes(graph)]
    t_pipe = tdp.iter.IterableWrapper([1, 2]).map(str)
    t_names = [type(dp).__name__ for dp in tgs.get_all_graph_pipes(
        torch.utils.data.graph.traverse_dps(t_pipe))]
    assert names == ["MapperIterDataPipe", "Twice", "IterableWrapperIterDataPipe"]
    assert t_names == ["MapperIterDataPipe", "IterableWrapperIterDataPipe"]


def test_determinism_guard_and_validation_decorators_like_torch():
    for lib in (torch, ember):
        D = lib.utils.data

        @D.non_deterministic
        class Coin(D.IterDataPipe):
            def __iter__(self):
                yield random.random()

        Coin()
        with D.guaranteed_datapipes_determinism(), pytest.raises(TypeError,
                                                                 match="non-deterministic"):
            Coin()

        with pytest.raises(TypeError, match="Can not decorate function"):
            D.runtime_validation(lambda self: None)
        with D.runtime_validation_disabled():
            pass


@pytest.mark.parametrize("n,replicas,shuffle,seed,drop_last,epoch", [
    (10, 3, False, 0, False, 0), (10, 3, True, 0, False, 0), (10, 3, True, 5, True, 2),
    (7, 4, True, 1, False, 1), (2, 5, False, 0, False, 0), (9, 2, True, 3, True, 0)])
def test_distributed_sampler_path_yields_torchs_indices(n, replicas, shuffle, seed, drop_last,
                                                        epoch):
    from torch.utils.data.distributed import DistributedSampler as T

    from ember.utils.data.distributed import DistributedSampler as E
    for rank in range(replicas):
        t = T(range(n), num_replicas=replicas, rank=rank, shuffle=shuffle, seed=seed,
              drop_last=drop_last)
        e = E(range(n), num_replicas=replicas, rank=rank, shuffle=shuffle, seed=seed,
              drop_last=drop_last)
        t.set_epoch(epoch)
        e.set_epoch(epoch)
        assert list(e) == list(t) and len(e) == len(t)
    with pytest.raises(ValueError, match="Invalid rank"):
        E(range(n), num_replicas=replicas, rank=replicas)


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_shuffles_and_shards_a_datapipe_as_torch(workers):
    orders = []
    for lib, D in ((torch, tdp), (ember, edp)):
        lib.manual_seed(5)
        pipe = D.iter.IterableWrapper(range(12)).shuffle().sharding_filter()
        loader = lib.utils.data.DataLoader(pipe, batch_size=None, num_workers=workers,
                                           shuffle=True)
        orders.append([int(x) for x in loader])
    assert orders[0] == orders[1]
    assert sorted(orders[1]) == list(range(12))  # each item once: the workers shard

"""Batches added by the service's writer process (neardup.server.writer): the same index,
the same errors, a lower priority, and a writer that dies is replaced."""

from __future__ import annotations

import os
import signal

import pytest

from neardup import Index
from neardup.errors import InputError
from neardup.index.storage import DuplicateIdError, IndexBusyError
from neardup.server.writer import WRITER_NICE, BatchWriter
from neardup.synth import make_corpus


@pytest.fixture
def writer(tmp_path):
    path = tmp_path / "ix.db"
    ix = Index(path, threshold=0.6)
    w = BatchWriter(ix, str(path), {"flush_docs": 20})
    yield ix, w
    w.close()
    ix.close()


def _helper_pid(w: BatchWriter) -> int:
    (pid,) = list(w._pool._processes)
    return pid


def test_batches_are_added_by_a_process_of_lower_priority(writer):
    ix, w = writer
    texts, _ = make_corpus(60, dup_fraction=0.5, seed=2, words=(40, 80), kinds=("edit",))
    mem = Index(threshold=0.6)
    for b in range(0, 60, 15):
        part = [(f"d{i}", texts[i]) for i in range(b, b + 15)]
        assert w.add_many(part) == 15
        mem.add_many(part)
        # what the writer process committed is read here at once, segments included
        for t in texts[: b + 15 : 4]:
            assert ix.query(t) == mem.query(t)
    assert w.process and len(ix) == 60
    pid = _helper_pid(w)
    assert pid != os.getpid()
    assert os.getpriority(os.PRIO_PROCESS, pid) == min(
        os.getpriority(os.PRIO_PROCESS, 0) + WRITER_NICE, 19
    )


def test_errors_come_back_as_themselves(writer):
    ix, w = writer
    w.add_many([("a", "one text of several words here"), ("b", "another text entirely")])
    with pytest.raises(DuplicateIdError) as e:
        w.add_many([("c", "a third text"), ("a", "taken already")])
    assert e.value.doc_id == "a" and not e.value.in_batch
    with pytest.raises(DuplicateIdError) as e:
        w.add_many([("x", "some words"), ("x", "some words again")])
    assert e.value.doc_id == "x" and e.value.in_batch
    with pytest.raises(InputError, match="not str"):
        w.add_many([("y", 42)])
    assert sorted(ix.ids()) == ["a", "b"]  # all or nothing


def test_a_writer_that_dies_is_replaced(writer):
    ix, w = writer
    w.add_many([("a", "one text of several words here")])
    os.kill(_helper_pid(w), signal.SIGKILL)
    with pytest.raises(IndexBusyError, match="send it again"):
        w.add_many([("b", "a batch sent as the writer died")])
    assert w.add_many([("b", "a batch sent as the writer died")]) == 1
    assert sorted(ix.ids()) == ["a", "b"]


def test_an_index_in_memory_is_written_in_process():
    ix = Index()
    w = BatchWriter(ix, ":memory:")
    assert not w.process
    assert w.add_many([("a", "a text of a few words")]) == 1 and "a" in ix
    w.close()

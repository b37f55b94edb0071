"""Runtime: shared services stay usable while the model starts."""

from __future__ import annotations

import contextlib
import threading
import time

from interviewer.config import load_settings
from interviewer.runtime import Runtime
from interviewer.session import Ports

from .conftest import FIXTURE_CONTENT


def test_store_and_bank_do_not_wait_for_a_starting_model(tmp_path, monkeypatch):
    rt = Runtime(load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path))
    rt.store.check()
    rt.bank  # noqa: B018 - built before the warm-up, as `launch` does
    started = threading.Event()

    def slow_start(progress):  # the embedded model's first start assembles weights for minutes
        started.set()
        time.sleep(3)
        raise RuntimeError("not needed")

    monkeypatch.setattr(rt, "_start_embedded", slow_start)
    warm = threading.Thread(target=_swallow, args=(rt.model,))
    warm.start()
    assert started.wait(5)
    t0 = time.perf_counter()
    rt.store.list(owner="me")  # Past sessions, Report and Progress use these
    assert rt.bank.questions
    rt.scorer()  # a report scores what was answered but not scored yet
    assert time.perf_counter() - t0 < 1.0
    warm.join()
    rt.close()


def _swallow(fn) -> None:
    with contextlib.suppress(RuntimeError):
        fn()


def test_retrieval_switched_off_is_not_a_degradation(tmp_path):
    rt = Runtime(load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path, retrieval=False))
    assert rt.retriever() is None and rt.ports("me", with_model=False).retriever is None
    assert rt.notices == []  # the user chose it: nothing to warn about
    assert not (tmp_path / "chroma").exists()  # and no index was built
    rt.close()


def test_an_interview_started_while_the_index_builds_gets_knowledge_once_it_is_built(tmp_path):
    rt = Runtime(load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path))
    building, release = threading.Event(), threading.Event()

    def build_elsewhere() -> None:  # the app's warm-up thread holds the lock for the whole build
        with rt._retriever_lock:
            building.set()
            release.wait(60)
        rt.retriever()

    warm = threading.Thread(target=build_elsewhere)
    warm.start()
    assert building.wait(5)
    # The build goes on until released: an interview start that waited for it would not return at all.
    started: list[Ports] = []
    t = threading.Thread(target=lambda: started.append(rt.ports("me", with_model=False)), daemon=True)
    t.start()
    t.join(120)
    assert started, "starting an interview waited for the index build"
    ports = started[0]
    assert ports.retriever is not None
    query = "Amdahl's law speedup with eight workers"
    assert list(ports.retriever.retrieve(query, k=2)) == []  # nothing yet, and no waiting
    release.set()
    warm.join()
    assert [p.source for p in ports.retriever.retrieve(query, k=2)], "the built index was never used"
    # Built, the retriever is handed out even while another thread holds the lock.
    with rt._retriever_lock:
        got: list[object] = []
        t = threading.Thread(target=lambda: got.append(rt.ports("me", with_model=False).retriever))
        t.start()
        t.join()
    assert got == [rt.retriever()]
    rt.close()

"""The model's fair queue: namespaces take turns, a full queue refuses at once, and a request whose
client left never reaches the model. Every wait here is on an observable event, never a sleep."""

from __future__ import annotations

import threading

import pytest

from qrag_qdrant.generation.scheduler import GenerationScheduler, LeftQueue, QueueFull


class Model:
    """Who held the model, in order; each holder waits for its own go before giving it back."""

    def __init__(self, scheduler: GenerationScheduler):
        self.scheduler, self.order, self.threads = scheduler, [], []
        self.lock = threading.Lock()

    def ask(self, namespace: str, name: str, cancelled: threading.Event | None = None, positions=None) -> None:
        def run() -> None:
            try:
                with self.scheduler.turn(namespace, cancelled, positions.append if positions is not None else None):
                    with self.lock:
                        self.order.append(name)
            except LeftQueue:
                with self.lock:
                    self.order.append(f"{name} left")

        before = self.scheduler.stats.waiting
        thread = threading.Thread(target=run)
        thread.start()
        self.threads.append(thread)
        while self.scheduler.stats.waiting == before and thread.is_alive():  # queued, or done at once
            thread.join(0.01)

    def join(self) -> list[str]:
        for thread in self.threads:
            thread.join(60)
        return self.order


def test_a_burst_from_one_team_does_not_starve_another():
    scheduler = GenerationScheduler(capacity=50)
    model = Model(scheduler)
    with scheduler.turn("team-a"):  # the model is busy with team a's first answer
        for n in range(1, 21):
            model.ask("team-a", f"a{n}")  # a burst of 20 more
        model.ask("team-b", "b1")  # then team b's one question
        assert scheduler.stats.waiting == 21
    order = model.join()
    assert order.index("b1") == 0  # next, as team a holds the model: not after twenty of team a's
    assert order == ["b1", *(f"a{n}" for n in range(1, 21))]


def test_a_full_queue_refuses_at_once_with_a_retry_time():
    scheduler = GenerationScheduler(capacity=2, seconds_per_answer=10)
    model = Model(scheduler)
    with scheduler.turn("team-a"):
        model.ask("team-a", "a1")
        model.ask("team-b", "b1")
        with pytest.raises(QueueFull) as full:
            with scheduler.turn("team-c"):
                pass
        with pytest.raises(QueueFull):
            scheduler.check_room()
    assert full.value.retry_after == 20 and scheduler.stats.refused == 2
    assert model.join() == ["b1", "a1"]  # team a had the model: team b goes first


def test_a_request_whose_client_left_never_reaches_the_model():
    scheduler = GenerationScheduler()
    model, gone = Model(scheduler), threading.Event()
    with scheduler.turn("team-a"):
        model.ask("team-a", "a1", cancelled=gone)
        model.ask("team-b", "b1")
        gone.set()  # a1's client disconnects while it waits
        model.threads[0].join(60)
    assert model.join() == ["a1 left", "b1"]
    assert scheduler.stats.dropped == 1 and scheduler.stats.served == 2  # the holder and b1
    assert scheduler.stats.waiting == 0


def test_a_waiting_request_is_told_its_place_as_it_moves_up():
    scheduler = GenerationScheduler()
    model, positions = Model(scheduler), []
    release = [threading.Event(), threading.Event()]

    def hold(index: int) -> None:
        with scheduler.turn(("team-a", "team-c")[index]):
            release[index].wait(60)

    holders = [threading.Thread(target=hold, args=(index,)) for index in range(2)]
    holders[0].start()
    while scheduler._running == 0:  # the model is taken
        holders[0].join(0.01)
    holders[1].start()
    while scheduler.stats.waiting == 0:  # team c waits first in line
        holders[1].join(0.01)
    model.ask("team-b", "b1", positions=positions)
    assert positions == [2]
    release[0].set()  # team c takes the model: b1 is next
    while positions[-1] != 1:
        model.threads[0].join(0.01)
    release[1].set()
    assert model.join() == ["b1"] and positions == [2, 1]
    for holder in holders:
        holder.join(60)

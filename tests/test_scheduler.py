"""The model's fair queue: namespaces take turns, a full queue refuses at once, and a request whose
client left never reaches the model. Every wait here is on an observable event, never a sleep."""

from __future__ import annotations

import threading

import pytest

from qrag_qdrant.generation.scheduler import GenerationScheduler, LeftQueue, QueueFull

from .waiting import wait_until


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
        wait_until(lambda: self.scheduler.stats.waiting != before or not thread.is_alive(), f"{name} queued or done")

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
            scheduler.check_room("team-c")
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
    holding = threading.Event()

    def hold(index: int) -> None:
        with scheduler.turn(("team-a", "team-c")[index]):
            holding.set()
            release[index].wait(60)

    holders = [threading.Thread(target=hold, args=(index,)) for index in range(2)]
    holders[0].start()
    assert holding.wait(60)  # the model is taken
    holders[1].start()
    wait_until(lambda: scheduler.stats.waiting == 1, "team c waits first in line")
    model.ask("team-b", "b1", positions=positions)
    assert positions == [2]
    release[0].set()  # team c takes the model: b1 is next
    wait_until(lambda: positions[-1] == 1, "b1 is next")
    release[1].set()
    assert model.join() == ["b1"] and positions == [2, 1]
    for holder in holders:
        holder.join(60)


def test_one_team_holds_at_most_its_share_so_another_teams_answer_gets_in():
    """The probe: team a held every place of a queue of 7, and team b got 503 model_busy."""
    scheduler = GenerationScheduler(capacity=7, seconds_per_answer=10, share=0.5)
    model = Model(scheduler)
    with scheduler.turn("team-a"):  # team a's first answer holds the model
        for n in range(1, 3):
            model.ask("team-a", f"a{n}")  # two more wait: team a holds 3 places, its share
        with pytest.raises(QueueFull, match="its share of the queue") as refused:
            scheduler.check_room("team-a")  # the rest of its burst is refused
        with pytest.raises(QueueFull):
            with scheduler.turn("team-a"):
                pass
        scheduler.check_room("team-b")  # while team b, under its share, is admitted
        model.ask("team-b", "b1")
        assert scheduler.stats.waiting == 3
    assert refused.value.retry_after == 30
    assert model.join() == ["b1", "a1", "a2"]


def test_a_share_of_one_caps_only_the_queue_and_a_small_queue_keeps_a_place_per_team():
    assert GenerationScheduler(capacity=64, share=1.0).per_namespace == 64
    assert GenerationScheduler(capacity=1, share=0.5).per_namespace == 1

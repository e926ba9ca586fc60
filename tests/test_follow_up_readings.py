"""A follow-up is searched as the user asked it: the rewrite keeps the user's words whole, a
second reading drops a carried word only when it is a rival of the user's word (not the thing they
ask about, nor a heading), a chosen reading is searched as itself, and a reading keeps the user's
capitals. Through ``QuorumRAG.retrieve`` with a history, with a model that writes given rewrites."""

from __future__ import annotations

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation import BackendDefaults, register_backend
from qrag_qdrant.retrieval.conversation import CLARIFYING, Turn, chosen_reading
from qrag_qdrant.retrieval.readings import other_reading

LOANS = "# Loans\n\nBooks may be borrowed for 28 days.\n\nDVDs may be borrowed for 7 days.\n"
FINES = "# Fines\n\nA late book costs 20 cents a day.\n\nA late DVD costs 1 euro a day.\n"
HOURS = (
    "# Opening hours\n\nOn weekdays the gym opens at 06:00 and closes at 23:00.\n\n"
    "On weekends it opens at 08:00 and closes at 20:00.\n"
)
PLANS = "# Plans\n\nThe Plus plan costs 45 euros a month.\n\nThe Premium plan costs 69 euros a month.\n"
#: the follow-up -> the stand-alone question the model rewrites it as
REWRITES: dict[str, str] = {}


class Rewrites(BackendDefaults):
    def __init__(self, settings):
        pass

    def complete(self, system, prompt, max_tokens, cancelled):
        return next(rewrite for follow_up, rewrite in REWRITES.items() if f"Last question: {follow_up}" in prompt)


@pytest.fixture(scope="module")
def rag(tmp_path_factory, embedder):
    register_backend("rewrites", Rewrites)
    root = tmp_path_factory.mktemp("follow-ups")
    for name, text in (("loans.md", LOANS), ("fines.md", FINES), ("hours.md", HOURS), ("plans.md", PLANS)):
        (root / "corpus" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "corpus" / name).write_text(text)
    settings = load_settings(store=root / "store", generation={"backend": "rewrites"})
    with QuorumRAG(settings, embedder=embedder) as opened:
        opened.ingest(root / "corpus")
        yield opened


def after(question: str, answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


@pytest.mark.parametrize(
    ("earlier", "follow_up", "rewrite", "gold"),
    [
        # "borrowed" is said beside "Books": it is what the user asks about, not a rival of it
        ("How long can I borrow a DVD?", "And books?", "And how long can I borrow a book?", "28 days"),
        # "# Fines" is a heading, not an alternative to "DVD"
        ("What is the fine for a late book?", "And for a DVD?", "And for a DVD, what is the fine?", "1 euro"),
        # "gym" stands for the user's "it"
        (
            "When does the gym open on weekends?",
            "And when does it close?",
            "When does the gym close on weekends?",
            "20:00",
        ),
    ],
)
def test_a_word_the_follow_up_elides_is_not_searched_without(rag, earlier, follow_up, rewrite, gold):
    REWRITES[follow_up] = rewrite
    evidence = rag.retrieve(follow_up, history=after(earlier, "..."))
    assert evidence.searched_for == rewrite
    assert evidence.conversation is not None and evidence.conversation.note is None
    assert gold in evidence.clusters[0].passages[0].text


def test_a_word_that_points_back_is_not_put_after_the_rewrite(rag):
    """ "one" of "the Premium one" is what the rewrite replaced: no "... costs? one"."""
    REWRITES["And the Premium one?"] = "How much does the Premium plan cost?"
    evidence = rag.retrieve("And the Premium one?", history=after("How much does the Plus plan cost?", "45 euros"))
    assert evidence.searched_for == "How much does the Premium plan cost?"


@pytest.mark.parametrize("reply", ["2", "the second one", "The latter.", "the Premium one"])
def test_a_chosen_reading_is_searched_as_itself_without_the_model(rag, reply):
    first, second = "How much does the Plus plan cost?", "How much does the Premium plan cost?"
    REWRITES.clear()  # the model is not asked: a rewrite would raise StopIteration
    evidence = rag.retrieve(reply, history=after("How much is a plan?", CLARIFYING.format(first, second)))
    assert evidence.searched_for == second
    assert evidence.conversation is not None and evidence.conversation.how == "chosen"
    assert "69 euros" in evidence.clusters[0].passages[0].text


def test_a_reply_that_picks_neither_reading_is_a_follow_up():
    offered = [Turn("user", "How much is a plan?"), Turn("assistant", CLARIFYING.format("Plus plan?", "Premium plan?"))]
    assert chosen_reading("the first one", offered) == "Plus plan?"
    assert chosen_reading("what about the Basic plan?", offered) is None
    assert chosen_reading("2", [Turn("assistant", "Two readings.")]) is None
    assert chosen_reading("2", [*offered, Turn("user", "hello")]) is None


def test_a_reading_keeps_the_users_capitals():
    """The last question typed "C204", which replaces the older question's "C310" in the rewrite."""
    reading = other_reading(
        "Is it booked?",
        "Is the projector in room C310 booked?",
        ["What must I wear in room C310?", "And in room C204?"],
        [],
        lambda a, b: 1.0,
    )
    assert reading is not None and reading.instead == "C204"
    assert reading.searched_for == "Is the projector in room C204 booked?"

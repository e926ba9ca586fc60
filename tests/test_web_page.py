"""The web page at ``/`` in a real headless browser (Debian's chromium through chromedriver):
ask, watch the answer stream in, see the evidence with its support badge and the cited passage
highlighted, and give a thumbs up that reaches the feedback file; hold a conversation whose
follow-up is searched as its stand-alone rewrite, then start a new one."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings

from .conversation_cases import FIRST, FOLLOW_UP, STAND_ALONE
from .live_server import live_server
from .oidc_provider import oidc_provider
from .ollama_standin import ollama_standin
from .service_helpers import BEES, free_port

pytest.importorskip("fastapi", reason="the service extra brings FastAPI")
uvicorn = pytest.importorskip("uvicorn", reason="the service extra brings uvicorn")
webdriver = pytest.importorskip("selenium.webdriver", reason="the test extra brings selenium")
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
if not (CHROMIUM and CHROMEDRIVER):
    pytest.skip("no browser: apt-get install chromium chromium-driver (CI installs them)", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from qrag_qdrant.service.app import create_app  # noqa: E402
from qrag_qdrant.service.auth.keys import KeyFile  # noqa: E402

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

#: the longest any step may take on a slow shared box; each wait ends as soon as its event is seen
PATIENCE_S = 180


@contextmanager
def serving(
    tmp_path, corpus, embedder, port: int | None = None, generation: dict | None = None, **service
) -> Iterator[tuple[str, str, Any]]:
    """The service over the sample corpus on a real port, answering through the Ollama stand-in."""
    store, key_file = tmp_path / "store", tmp_path / "keys.toml"
    with QuorumRAG(load_settings(store=store), embedder=embedder) as rag:
        rag.ingest(corpus)
    key = KeyFile.load(key_file).add("default", "read-write")
    tokens = ["Foragers ", "perform ", "the waggle dance ", "[1]."]
    with ollama_standin(tokens=tokens, rewrites={FOLLOW_UP: STAND_ALONE}) as ollama:
        settings = load_settings(
            store=store,
            service={"keys": key_file, **service},
            ollama={"host": ollama.host},
            generation={"backend": "ollama", "judge": False, **(generation or {})},
        )
        with live_server(create_app(settings, embedder=embedder), PATIENCE_S, port=port) as base:
            yield base, key, ollama


@pytest.fixture
def served(tmp_path, corpus, embedder) -> Iterator[tuple[str, str, Any]]:
    with serving(tmp_path, corpus, embedder) as started:
        yield started


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    options.set_capability("goog:loggingOptions", {"browser": "ALL"})  # the console, CSP violations included
    # chromium leaves a socket folder (org.chromium.Chromium.*) in TMPDIR after every run: give it one of its own,
    # short (a unix socket's path must fit in 108 bytes, which pytest's tmp_path may not), and remove it after
    with tempfile.TemporaryDirectory(prefix="qrag-browser-") as temporary:
        service = webdriver.ChromeService(executable_path=CHROMEDRIVER, env={**os.environ, "TMPDIR": temporary})
        driver = webdriver.Chrome(options=options, service=service)
        try:
            yield driver
        finally:
            driver.quit()


def test_ask_watch_the_answer_see_the_evidence_and_give_feedback(served, browser, tmp_path):
    base, key, _ = served
    wait = WebDriverWait(browser, PATIENCE_S)
    browser.get(base + "/")
    assert browser.title == "qrag-qdrant"
    browser.find_element(By.ID, "key").send_keys(key)
    browser.find_element(By.ID, "question").send_keys(BEES)
    browser.find_element(By.ID, "submit").click()

    feedback = browser.find_element(By.ID, "feedback")
    wait.until(lambda _: feedback.is_displayed())  # shown when the final event has arrived
    answer = browser.find_element(By.ID, "answer")
    assert answer.text == "Foragers perform the waggle dance [1]."
    link = answer.find_element(By.CSS_SELECTOR, "a.cite")
    assert link.text == "[1]" and link.get_attribute("href").endswith("#passage-1")

    clusters = browser.find_elements(By.CSS_SELECTOR, "#clusters > li")
    assert clusters
    context = browser.find_element(By.ID, "context").text  # how much the model read, and why
    assert re.fullmatch(r"\d+ words sent to the model \(adaptive: .+\)", context), context
    badge = clusters[0].find_element(By.CLASS_NAME, "support").text
    assert re.fullmatch(r"[1-4]/4 retrievers", badge), badge
    cited = browser.find_element(By.ID, "passage-1")
    assert "cited" in cited.get_attribute("class").split()
    assert cited.find_element(By.CLASS_NAME, "source").text == "[1] honeybees.txt"
    assert "waggle dance" in cited.find_element(By.CLASS_NAME, "text").text
    others = browser.find_elements(By.CSS_SELECTOR, ".passage:not(#passage-1)")
    assert all("cited" not in p.get_attribute("class").split() for p in others)  # only what the answer cites

    browser.find_element(By.CSS_SELECTOR, "#feedback button[data-rating='up']").click()
    status = browser.find_element(By.ID, "feedback-status")
    wait.until(lambda _: status.text)
    assert status.text == "Thanks: recorded."
    (row,) = [json.loads(line) for line in (tmp_path / "store" / "feedback-default.jsonl").read_text().splitlines()]
    assert row["rating"] == "up" and row["question"] == BEES


def test_a_wrong_key_is_shown_as_the_services_one_line_error(served, browser):
    base, _, _ = served
    browser.get(base + "/")
    browser.find_element(By.ID, "key").send_keys("qrag_wrong")
    browser.find_element(By.ID, "question").send_keys(BEES)
    browser.find_element(By.ID, "submit").click()
    status = browser.find_element(By.ID, "status")
    WebDriverWait(browser, PATIENCE_S).until(lambda _: "error" in status.get_attribute("class"))
    assert status.text == "a valid bearer key is needed: Authorization: Bearer <key>"


def test_the_page_and_the_api_docs_run_under_the_strict_csp_with_nothing_from_elsewhere(served, browser):
    base, _, _ = served
    browser.get(base + "/")
    assert browser.find_element(By.ID, "ask").is_displayed()
    browser.get(base + "/docs")
    WebDriverWait(browser, PATIENCE_S).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".swagger-ui .opblock"))
    assert browser.find_elements(By.CSS_SELECTOR, "[data-path='/v1/chat/completions']")  # rendered offline
    console = [entry["message"] for entry in browser.get_log("browser")]
    assert not [m for m in console if "Content Security Policy" in m or "Refused to" in m], console


def ask(browser, question: str) -> None:
    """Types the question, sends it, and waits for the final event (the feedback buttons show)."""
    field = browser.find_element(By.ID, "question")
    field.clear()
    field.send_keys(question)
    browser.find_element(By.ID, "submit").click()
    feedback = browser.find_element(By.ID, "feedback")
    WebDriverWait(browser, PATIENCE_S).until(lambda _: feedback.is_displayed())


def test_a_follow_up_is_sent_with_the_conversation_and_shows_what_was_searched(served, browser):
    base, key, ollama = served
    browser.get(base + "/")
    browser.find_element(By.ID, "key").send_keys(key)
    ask(browser, FIRST)
    searched = browser.find_element(By.ID, "searched-for")
    assert not searched.is_displayed()  # a first turn is searched as typed
    ask(browser, FOLLOW_UP)
    assert searched.is_displayed() and searched.find_element(By.TAG_NAME, "span").text == f"searched for: {STAND_ALONE}"
    assert browser.find_element(By.ID, "asked").text == FOLLOW_UP
    turns = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#conversation > li")]
    assert turns[0] == f"You: {FIRST}" and turns[1].startswith("Answer: Foragers perform the waggle dance [1].")
    assert len(turns) == 2 and turns[1].endswith(("Supported", "Not supported"))  # each answer with its mark
    (rewrite,) = [
        r
        for r in ollama.requests
        if FOLLOW_UP in r["messages"][-1]["content"] and "<conversation>" in r["messages"][-1]["content"]
    ]
    assert FIRST in rewrite["messages"][-1]["content"]  # the page sent the earlier turns

    browser.find_element(By.ID, "new-conversation").click()
    assert browser.find_elements(By.CSS_SELECTOR, "#conversation > li") == []
    ask(browser, FOLLOW_UP)  # now a first turn: searched as typed, no rewrite asked for
    assert not browser.find_element(By.ID, "searched-for").is_displayed()
    assert sum("<conversation>" in r["messages"][-1]["content"] for r in ollama.requests) == 1


def test_the_documents_panel_lists_removes_and_uploads(served, browser, tmp_path):
    base, key, _ = served
    wait = WebDriverWait(browser, PATIENCE_S)
    browser.get(base + "/")
    browser.find_element(By.ID, "key").send_keys(key)
    browser.find_element(By.CSS_SELECTOR, "#documents summary").click()

    def rows() -> list[str]:  # read in one step: the list may be redrawn between two reads
        return browser.execute_script(
            "return [...document.querySelectorAll('#documents-table tbody tr')].map((r) => r.dataset.source)"
        )

    wait.until(lambda _: len(rows()) == 5)
    assert rows() == sorted(rows()) and "lighthouses.txt" in rows()
    assert browser.find_element(By.ID, "documents-status").text == "5 documents"
    browser.find_element(By.CSS_SELECTOR, "tr[data-source='lighthouses.txt'] button.remove").click()
    browser.switch_to.alert.accept()
    wait.until(lambda _: "lighthouses.txt" not in rows())
    assert len(rows()) == 4 and browser.find_element(By.ID, "documents-status").text.startswith(
        "Removed lighthouses.txt."
    )

    owls = tmp_path / "owls.txt"
    owls.write_text("Barn owls find mice in the dark by sound alone, turning their heads toward the faintest rustle.\n")
    browser.find_element(By.ID, "upload-files").send_keys(str(owls))
    browser.find_element(By.ID, "upload-submit").click()
    wait.until(lambda _: "owls.txt" in rows())
    assert len(rows()) == 5


def test_sign_in_through_the_identity_provider_then_ask_and_sign_out(tmp_path, corpus, embedder, browser):
    port = free_port()
    with oidc_provider(tmp_path, redirect_uris=[f"http://127.0.0.1:{port}/"]) as provider:
        oidc = provider.settings(client_id="qrag-web", mapping={"team-a-writers": "default:read-write"})
        with serving(tmp_path, corpus, embedder, port=port, oidc=oidc, audit_log=tmp_path / "audit.jsonl") as served:
            base, _, _ = served
            wait = WebDriverWait(browser, PATIENCE_S)
            browser.get(base + "/")
            sign_in = browser.find_element(By.ID, "sign-in")
            wait.until(lambda _: sign_in.is_displayed())
            sign_in.click()
            wait.until(lambda b: b.current_url.startswith(provider.issuer))  # the provider's login page
            browser.find_element(By.NAME, "login").send_keys("alice")
            browser.find_element(By.NAME, "password").send_keys("any password")
            browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            wait.until(lambda b: b.current_url.startswith(base), f"{browser.current_url} {browser.page_source[:2000]}")
            signed_in_as = browser.find_element(By.ID, "signed-in-as")
            wait.until(lambda _: signed_in_as.text == "signed in as alice")
            assert browser.current_url == base + "/"  # the code is not left in the address bar
            assert not browser.find_element(By.ID, "key").is_displayed()
            ask(browser, BEES)
            assert browser.find_element(By.ID, "answer").text == "Foragers perform the waggle dance [1]."
            browser.find_element(By.ID, "sign-in").click()  # now "Sign out"
            assert browser.find_element(By.ID, "key").is_displayed()
            assert browser.find_element(By.ID, "sign-in").text == "Sign in"
            console = [entry["message"] for entry in browser.get_log("browser")]
            assert not [m for m in console if "Content Security Policy" in m or "Refused to" in m], console
    written = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(w["key"], w["namespace"]) for w in written if w["event"] == "sign-in"] == [("oidc:alice", "default")]


def test_the_page_says_how_many_readings_agree(tmp_path, corpus, embedder, browser):
    with serving(tmp_path, corpus, embedder, generation={"samples": 2}) as (base, key, _):
        browser.get(base + "/")
        browser.find_element(By.ID, "key").send_keys(key)
        ask(browser, BEES)
        agreement = browser.find_element(By.ID, "agreement")
        assert agreement.is_displayed() and agreement.text == "3 of 3 readings agree"


#: a small company's documents, each fact where a user would look for it
FJORD = {
    "travel-norway.md": "# Travel in Norway\n\nDomestic travel within Norway: the per diem is NOK 550 per day. "
    "Trains are booked through the Fjordline travel desk.",
    "travel-abroad.md": "# Travel abroad\n\nInternational travel: the per diem is NOK 800 per day. Flights abroad "
    "are booked through the Fjordline travel agency.",
    "per-diem.md": "# Per diem rates\n\nDomestic travel within Norway: the per diem is NOK 550 per day. "
    "International travel: the per diem is NOK 800 per day.",
    "primary-carer.md": "# Primary carer\n\nThe primary carer gets 16 weeks of paid parental leave at Fjordline.",
    "secondary-carer.md": "# Secondary carer\n\nThe secondary carer gets 4 weeks of unpaid parental leave at "
    "Fjordline.",
    "vacation.md": "# Vacation\n\nFjordline employees get 25 days of paid vacation per year.",
}
#: (question, the model's answer, the history before it, the model's rewrite, the mark the page shows)
MARKS = [
    ("What is the per diem for international travel?", "NOK 800 per day [1]", [], None, "Supported"),
    ("How many sick days do Fjordline employees get?", "25 days [1]", [], None, "Not supported"),
    (
        "According to the per diem rates, what is the per diem for domestic travel within Norway?",
        "NOK 800 per day [1]",
        [],
        None,
        "Ambiguous",
    ),
    (
        "Is it paid?",
        "unpaid [1]",
        [
            ("How many weeks of parental leave does the primary carer get?", "16 weeks [1]"),
            ("And for the secondary one?", "4 weeks [1]"),
        ],
        "Is the parental leave of the primary carer paid?",
        "Which did you mean?",
    ),
]


@pytest.mark.parametrize(("question", "reply", "history", "rewrite", "label"), MARKS, ids=[m[4] for m in MARKS])
def test_each_answer_carries_its_mark_in_words(
    tmp_path, embedder, ingest_documents, browser, question, reply, history, rewrite, label
):
    """Supported, not supported and why, ambiguous with both sentences highlighted, and a question
    back when two readings of a follow-up find different evidence: in the page, in plain words.
    With QRAG_TEST_SCREENSHOTS set to a folder, each is saved there (docs/assets/ holds them)."""
    store, key_file = ingest_documents(FJORD), tmp_path / "keys.toml"
    key = KeyFile.load(key_file).add("default", "read-write")
    rewrites = {question: rewrite} if rewrite else {}
    with ollama_standin(tokens=[reply], rewrites=rewrites) as ollama:
        settings = load_settings(
            store=store,
            service={"keys": key_file},
            ollama={"host": ollama.host},
            generation={"backend": "ollama"},
            retrieval={"min_confidence": 0.0},
        )
        with live_server(create_app(settings, embedder=embedder), PATIENCE_S) as base:
            browser.set_window_size(1100, 1400)
            browser.get(base + "/")
            browser.find_element(By.ID, "key").send_keys(key)
            for earlier, answered in history:  # the conversation so far, as the page holds it
                browser.execute_script(
                    "conversation.push({role: 'user', content: arguments[0]},"
                    " {role: 'assistant', content: arguments[1]});",
                    earlier,
                    answered,
                )
            ask(browser, question)
            mark = browser.find_element(By.ID, "mark")
            clarify = browser.find_element(By.ID, "clarify")
            if label == "Which did you mean?":
                assert clarify.is_displayed() and not mark.is_displayed()
                readings = [b.text for b in clarify.find_elements(By.CSS_SELECTOR, "button.reading")]
                assert len(readings) == 2 and any("secondary" in r for r in readings)
                assert "Do you mean" in clarify.find_element(By.CLASS_NAME, "question").text
            else:
                assert mark.is_displayed() and mark.find_element(By.CLASS_NAME, "label").text == label + ":"
                reason = mark.find_element(By.CLASS_NAME, "reason").text
                highlighted = [m.text for m in browser.find_elements(By.CSS_SELECTOR, ".passage mark")]
                if label == "Supported":
                    assert "International travel: the per diem is NOK 800 per day." in reason
                    assert browser.find_elements(By.CSS_SELECTOR, ".passage mark.supporting")
                elif label == "Not supported":
                    assert 'does not mention "sick"' in reason
                else:  # both sentences, the one the answer came from and its rival, highlighted
                    assert "Domestic travel within Norway" in reason
                    assert browser.find_elements(By.CSS_SELECTOR, ".passage mark.rival")
                    assert any("International travel" in text for text in highlighted)
            if folder := os.environ.get("QRAG_TEST_SCREENSHOTS"):
                name = label.lower().replace(" ", "-").replace("?", "")
                browser.find_element(By.ID, "result").screenshot(os.path.join(folder, f"mark-{name}.png"))

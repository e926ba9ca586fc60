"""The supported mark reads what a user would read: each case is a small corpus of its own, asked
through the answer path users get (``QuorumRAG.answer``), with a backend that writes a given
answer, so what is tested is the mark, not a model. A right answer is marked supported; a wrong one,
or one whose question the corpus does not answer, is not."""

from __future__ import annotations

import math

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation import BackendDefaults, register_backend
from qrag_qdrant.generation.checks.answer_check import check_answer
from qrag_qdrant.generation.checks.claim_reading import answers_with_its_words
from qrag_qdrant.generation.checks.sentence import coverage, rival_of, sentence_check, sentence_referred_to
from qrag_qdrant.generation.checks.specifics import lacking
from qrag_qdrant.results import Answer, Passage
from qrag_qdrant.text.terms import asked_with

MARK = load_settings().generation

ROOMS = """# Room C310: laser lab

Everyone entering room C310 must wear laser safety glasses rated OD 7 at 1064 nm.

The lab holds at most six people at once, and the door stays locked when the laser is on.

# Room C204: seminar room

Room C204 seats at most 40 people, and the projector is booked through the front desk.
"""
TRIAL = """# Home trial and warranty

During the 30-day home trial, a faulty unit is replaced with a new one at no cost to the customer.

Returns after the trial are refunded minus a restocking fee of 15 percent of the price.

In the EU the warranty lasts two years from the day of delivery.
"""
TRAINS = """# Trains to the airport

The first train leaves the central station at 05:10.

The trip from the central station to the airport takes 22 minutes.
"""
SCHEDULE = """# Schedule

The opening keynote starts at 09:00 in Hall 1.

The data track starts at 10:30 in Hall 2.

The closing panel starts at 16:00 in Hall 1.

Lunch is served in the foyer at 12:30.
"""
FILMS = """# Spectre

Thomas Newman composed the score of Spectre. Scenes were filmed in Austria, in the Solden ski resort.

The shop on the harbour opened on 12 March 1990 and closed in 2016.

The Ujazdow Park lies behind the harbour. Since 2011 the Harbour Gallery Weekend is held on the last weekend of
September. The lack of a cinema remained an important complaint of the harbour's residents.

The Old Pier was rebuilt in 1995, and the New Pier in 2004. The Harbour Film Society meets on Fridays.
"""
#: a file whose sentences speak of what its name says without saying it
FERRIES = """They leave the harbour every 20 minutes from 06:00, and the last one sails at 23:40.

Some Huguenot families on the island keep the feast of their patron Saint Nicolas.

One of the first captains to serve on the night crossing was Hervé, in the 1990s.
"""
#: a file about a body a question may name by its abbreviation, written with an ampersand or points;
#: its name says which body
MUSEUM = """In 2002 the museum acquired the Costiff collection of 178 costumes.

The museum's shop ships to the United States for a fee of 30 dollars.
"""
#: a park whose name is made of the question's words, a count of a word said in its other plural,
#: and a year beside a span of years
PARKS = """# Parks and battles

Kearney Park is the largest park of the region and is home to the historic Kearney Mansion.

Roeding Park lies west of the river and holds the city zoo.

At the battle of Carillon, 3,600 Frenchmen defeated a force of 18,000 regulars.

In the fall of 2015, the zoo stopped using its 1998–2002 jingle in its advertising.
"""
#: the question -> what the model writes
WRITES: dict[str, str] = {}
#: the question -> how sure the model was of what it writes (unset: it does not say)
SURE: dict[str, float] = {}
#: the follow-up -> the stand-alone question the model rewrites it as
REWRITES: dict[str, str] = {}


class Writes(BackendDefaults):
    """A model that writes the answer ``WRITES`` gives for the question, and the rewrite
    ``REWRITES`` gives for a follow-up."""

    def __init__(self, settings):
        pass

    def stream(self, question, passages, result):
        if question in SURE:
            result.answer_logprobs = [(WRITES[question], math.log(SURE[question]))]
        yield WRITES[question]

    def complete(self, system, prompt, max_tokens, cancelled):
        return next(rewrite for follow_up, rewrite in REWRITES.items() if follow_up in prompt)


@pytest.fixture(scope="module")
def rag(tmp_path_factory, embedder):
    register_backend("writes", Writes)
    root = tmp_path_factory.mktemp("marks")
    for name, text in (
        ("rooms.md", ROOMS),
        ("trial.md", TRIAL),
        ("trains.md", TRAINS),
        ("schedule.md", SCHEDULE),
        ("films.md", FILMS),
        ("harbour-ferries.txt", FERRIES),
        ("victoria-and-albert-museum.txt", MUSEUM),
        ("parks.md", PARKS),
    ):
        (root / "corpus" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "corpus" / name).write_text(text)
    settings = load_settings(store=root / "store", generation={"backend": "writes"})
    with QuorumRAG(settings, embedder=embedder) as opened:
        opened.ingest(root / "corpus")
        yield opened


def marked(rag, question: str, written: str):
    WRITES[question] = written
    return rag.answer(question)


def test_a_citation_of_a_paragraph_inside_the_one_passage_shown_is_read_as_that_passage(rag):
    """The model, shown one passage of several paragraphs, numbered the paragraphs: [2] can only
    mean the passage it was shown."""
    answer = marked(rag, "What happens to a faulty unit during the home trial?", "replaced with a new one [2]")
    assert [p.citation for p in answer.passages] == [1]
    assert answer.mark == "supported", answer.mark_reason
    assert answer.answer == "replaced with a new one [1]"
    assert "one passage was shown, so it is read as [1]" in answer.warnings[0]


def test_a_question_verb_is_not_required_in_the_sentence(rag):
    answer = marked(rag, "What happens to a faulty unit during the home trial?", "replaced with a new one [1]")
    assert answer.mark == "supported", answer.mark_reason
    wrong = marked(rag, "What happens to a faulty unit during the home trial?", "a restocking fee [1]")
    assert wrong.mark != "supported"


def test_an_adjectives_other_degree_a_places_adjective_and_another_spelling_say_the_word():
    """ "the top 400 richest Americans" says "richer"; "South African holdings" says "South Africa",
    "Sackler Centre" "Sackler Center"; a rare word in no document ("weakest") is not read as absent
    where the passage says "weak"."""
    weights = {"richer": 1.0, "americans": 0.5}
    assert coverage("The top 400 richest Americans have more wealth than half of all Americans.", weights) == (1.0, ())
    assert coverage("The 400 poorest Americans.", weights)[1] == ("richer",)
    question = "By how much did Harvard reduce its South Africa holdings?"
    assert lacking(question, "Harvard did reduce its South African holdings by $230 million.") == []
    assert lacking("Which scenes were filmed in Austria?", "Scenes were filmed in Australian towns.") == ["Austria"]
    assert lacking("When did the Sackler Center open?", "The Sackler Centre opened in 2008.") == []
    said = "Only four interactions are known: strong, electromagnetic, weak, and gravitational."
    passage = Passage(citation=1, source="physics.txt", start=0, end=len(said), text=said)
    weights = {"weakest": 1.0, "interaction": 0.5}
    check = sentence_check("gravitational", said, None, [passage], weights, unseen=["weakest"])
    assert check.coverage == 1.0


@pytest.mark.parametrize(
    ("question", "written"),
    [
        ("What safety glasses are required in the laser lab?", "laser safety glasses rated OD 7 at 1064 nm [1]"),
        ("What is the maximum number of people in room C204?", "40 [1]"),
    ],
)
def test_a_heading_is_not_a_rival_value(rag, question, written):
    """'# Room C310: laser lab' names what follows it; its number answers no question."""
    answer = marked(rag, question, written)
    assert answer.mark == "supported", answer.mark_reason


def test_a_rival_sentence_still_makes_a_sibling_value_ambiguous(rag):
    answer = marked(rag, "How many people may be in room C204 at once?", "six [1]")
    assert answer.mark != "supported"


def test_a_hesitant_model_is_trusted_where_the_sentence_says_every_word_of_the_question(rag):
    """Asked "How long does the trip to the airport take?", the sentence "The trip from the central
    station to the airport takes 22 minutes." says all of it: 22 minutes written at 75% is
    supported; at 60%, or over a sentence that says less of the question, it is not."""
    question = "How long does the trip to the airport take?"
    SURE[question] = 0.75
    assert marked(rag, question, "22 minutes [1]").mark == "supported"
    SURE[question] = 0.6
    unsure = marked(rag, question, "22 minutes [1]")
    assert unsure.mark == "not supported" and "60%" in (unsure.mark_reason or "")
    partly = "How long does the trip to the airport take on Sundays?"
    SURE[partly] = 0.75
    assert marked(rag, partly, "22 minutes [1]").mark != "supported"


@pytest.mark.parametrize(("weight_left_out", "supported"), [(0.4, True), (0.8, False)])
def test_a_hesitant_model_is_trusted_where_the_sentence_says_nearly_every_word_of_the_question(
    weight_left_out, supported
):
    """ "How long does the whole trip from the central station to the airport take?": the sentence
    leaves out "whole". Where that word weighs little (0.9 of the question's weight said), 75% is
    enough; where it weighs more (0.83 said), it is not."""
    question = "How long does the whole trip from the central station to the airport take?"
    said = "The trip from the central station to the airport takes 22 minutes."
    answer = Answer(question=question, abstained=False, retrievers=4, clusters=[], timings_ms={})
    answer.answer = "22 minutes [1]"
    answer.key_terms = {"trip": 1.0, "central": 1.0, "station": 1.0, "airport": 1.0, "whole": weight_left_out}
    answer.answer_probability = 0.75
    check_answer(answer, [Passage(citation=1, source="trains.md", start=0, end=len(said), text=said)], None, MARK)
    assert (answer.mark == "supported") is supported, answer.mark_reason


def test_a_value_the_question_states_is_no_rival_answer():
    """Asked who was the oldest quarterback to play in a Super Bowl, a sentence saying "he" was is
    no rival to the name: its only name is the question's own "Super Bowl"."""
    weights = {"oldest": 1.0, "quarterback": 0.6, "play": 0.1, "super": 0.5, "bowl": 0.5}
    playbook = Passage(
        citation=1,
        source="qb.txt",
        start=0,
        end=120,
        text="Peyton Manning led two teams to the final. He is the oldest quarterback to play in a Super Bowl, at 39. "
        "Tom Brady is the oldest quarterback to win a Super Bowl.",
    )
    holding = "Peyton Manning led two teams to the final."
    assert rival_of("Peyton Manning", holding, 0.0, [playbook], weights) == (
        "Tom Brady is the oldest quarterback to win a Super Bowl."
    )
    alone = playbook.model_copy(update={"text": playbook.text.rsplit(" Tom", 1)[0]})
    assert rival_of("Peyton Manning", holding, 0.0, [alone], weights) is None
    # "Who" of "Doctor Who" opening a sentence says nothing: no rival to "Trevor Martin"
    staged = alone.model_copy(update={"text": "Doctor Who has appeared on stage numerous times."})
    played = "In the 1970s, Trevor Martin played the role on stage."
    assert rival_of("Trevor Martin", played, 0.0, [staged], {"stage": 1.0, "doctor": 0.5}) is None


def passage_of(text: str) -> Passage:
    return Passage(citation=1, source="history.txt", start=0, end=len(text), text=text)


def test_a_sentence_naming_the_answer_in_part_is_no_rival():
    """A sentence that matches the question better but names the answer itself, whole or by one of
    its words ("Saudi" of "Saudi Arabia", "TEU" of "the Treaty on European Union (TEU)"), offers no
    other value; a name that shares only a word
    ("New Paltz" beside "New Rochelle") does, and a possessive of a question's name ("Israel's")
    is the question's own."""
    weights = {"arms": 1.0, "purchases": 1.0, "exceeded": 0.5, "israel": 1.0, "country": 0.2}
    holding = "Another motive for the purchase of arms by Saudi Arabia was the fall of the Shah."
    arms = passage_of(f"By 1979, Saudi arms purchases from the US exceeded five times Israel's. {holding}")
    assert rival_of("Saudi Arabia", holding, 0.5, [arms], weights) is None
    whole = passage_of(f"By 1979, arms purchases of Saudi Arabia exceeded Israel's. {holding}")
    assert rival_of("Saudi Arabia", holding, 0.5, [whole], weights) is None
    weights = {"treaty": 0.3, "metropolitan": 0.4, "territories": 0.4, "applied": 0.2}
    holding = "The core treaty is the Treaty on European Union (TEU)."
    treaties = passage_of(f"{holding} The TEU establishes that its law applies to the metropolitan territories.")
    assert rival_of("the Treaty on European Union (TEU)", holding, 0.3, [treaties], weights) is None
    weights = {"town": 0.2, "upstate": 1.0, "settled": 0.5, "huguenots": 0.8}
    holding = "The Huguenots named a town New Rochelle."
    towns = passage_of(f"{holding} Huguenots settled a third town further upstate, New Paltz.")
    assert rival_of("New Rochelle", holding, 0.4, [towns], weights) == (
        "Huguenots settled a third town further upstate, New Paltz."
    )


def test_a_plural_the_stemmer_leaves_alone_covers_the_word():
    """ "DVDs may be borrowed for 7 days" answers "How long can I borrow a DVD?"."""
    weights = {"DVD": 1.0, "borrow": 0.4}
    assert coverage("DVDs may be borrowed for 7 days.", weights) == (1.0, ())
    assert coverage("Books may be borrowed for 28 days.", weights) == (round(0.4 / 1.4, 4), ("DVD",))
    # and the name the question states is stated
    assert lacking("How long can I borrow a DVD?", "DVDs may be borrowed for 7 days.") == []
    assert lacking("How long can I borrow a DVD?", "Books may be borrowed for 28 days.") == ["DVD"]


@pytest.mark.parametrize(
    ("question", "written"),
    [
        ("How often do the harbour ferries leave?", "every 20 minutes [1]"),  # the file's name says "ferries"
        ("Who is the patron saint of the Huguenots?", "Saint Nicolas [1]"),  # "Huguenot families"
        ("When did Herve serve on the night crossing?", "in the 1990s [1]"),  # "Hervé"
    ],
)
def test_a_sentence_states_what_its_file_name_says_and_a_name_in_the_plural_or_unaccented(rag, question, written):
    """A sentence of a file about the harbour ferries need not say "ferries" (the file's name stands
    for the title its metadata does not give), a name the question says in the plural is stated
    in the singular, and one without its accent is stated with it."""
    answer = marked(rag, question, written)
    assert answer.mark == "supported", answer.mark_reason


def test_a_question_that_points_at_what_it_does_not_name_is_not_supported_until_a_conversation_names_it(rag):
    """ "this pier" with two piers in the documents: the answer may be about the other one."""
    answer = marked(rag, "When was this pier rebuilt?", "2004 [1]")
    assert answer.mark == "not supported"
    assert answer.mark_reason == 'the question says "this" or "these" without naming which one it means'
    REWRITES["When was this pier rebuilt?"] = "When was the New Pier rebuilt?"
    WRITES["When was the New Pier rebuilt?"] = "2004 [1]"
    history = [{"role": "user", "content": "What is the New Pier?"}, {"role": "assistant", "content": "a pier [1]"}]
    followed = rag.answer("When was this pier rebuilt?", history=history)
    assert followed.searched_for == "When was the New Pier rebuilt?"
    assert followed.mark == "supported", followed.mark_reason
    ferries = marked(rag, "How often do these ferries leave?", "every 20 minutes [1]")  # harbour-ferries.txt
    assert ferries.mark == "supported", ferries.mark_reason  # the document is named for them
    this_year = marked(rag, "When is the Harbour Gallery Weekend held this year?", "the last weekend of September [1]")
    assert this_year.mark == "supported", this_year.mark_reason  # a time the calendar names


def test_a_name_in_the_plural_is_held_by_its_singular_but_an_abbreviation_keeps_its_letters():
    assert lacking("Where did the Huguenots settle?", "The Huguenot families settled in Dublin.") == []
    assert lacking("What does FISS stand for?", "The FIS or Front Islamique de Salut was founded.") == ["FISS"]
    assert lacking("What did 'Da Yuan Tong Zhi' mean?", "The Da Yuan Tong Zhi was a code of laws.") == []
    assert lacking("When was the Forest tapestry woven?", "Morris designed 'The Forest' tapestry of 1887.") == []


def test_a_number_is_stated_in_figures_in_words_or_in_roman_numerals():
    assert lacking("In what year did ABC apply for 5 licences?", "In 1947, ABC submitted five applications.") == []
    assert lacking("Where did de Gaulle operate in World War 2?", "In World War II, de Gaulle used the colonies.") == []
    assert lacking("What did the 1,200 members vote?", "The 1200 members voted to strike.") == []
    assert lacking("In what year did ABC apply for 6 licences?", "In 1947, ABC submitted five applications.") == ["6"]
    assert lacking("What did I say in chapter 1?", "I said it in chapter one.") == []
    assert lacking("Which demographic saw ABC drop to 4th?", "ABC dropped to fourth place among viewers.") == []
    assert lacking("Where was the Feb 2010 call published?", "In February 2010, scientists called for it.") == []
    assert lacking("Where was the Mar 2010 call published?", "In February 2010, scientists called for it.") == ["Mar"]
    assert lacking('Who asserted the right to "self-determination?"', "Lenin asserted self-determination.") == []
    assert lacking("What is the Mongols' capital?", "The Mongol capital was Karakorum.") == []
    assert lacking("When did Börte give birth?", "She gave birth to a son.") == ["Börte"]  # as the question spells it


def test_an_abbreviation_matches_its_expansion_both_ways():
    weights = {"warranty": 1.0, "eu": 1.0}
    assert coverage("In the European Union the warranty lasts two years.", weights) == (1.0, ())
    spelled = {"warranty": 1.0, "european": 0.5, "union": 0.5}
    assert coverage("In the EU the warranty lasts two years.", spelled) == (1.0, ())
    assert coverage("In the US the warranty lasts one year.", weights)[1] == ("eu",)  # another one's initials
    assert coverage("The Department of Human Resources decides.", {"hr": 1.0}) == (1.0, ())
    assert coverage("Sam Bankman-Fried testified.", {"testified": 1.0, "sbf": 1.0}) == (1.0, ())  # hyphen parts


@pytest.mark.parametrize(
    ("question", "written", "supported"),
    [
        ("When did the V&A acquire the Costiff collection?", "2002 [1]", True),
        ("When did the British Museum acquire the Costiff collection?", "2002 [1]", False),
        ("What is the museum shop's fee to ship to the U.S.?", "30 dollars [1]", True),
        ("What is the museum shop's fee to ship to the U.K.?", "30 dollars [1]", False),
        ("Approximately how many costumes are in the Costiff collection?", "178 [1]", True),
        ("Which park is home to the Kearney Mansion?", "Kearney Park [1]", True),
        ("Which park is home to the Kearney Mansion?", "the Kearney Mansion [1]", False),
        ("Which one holds the city zoo, Kearney Park or Roeding Park?", "Roeding Park [1]", True),
        ("How many Frenchman won the battle of Carillon?", "3,600 [1]", True),
    ],
)
def test_a_name_or_word_the_question_writes_is_read_as_the_sentence_writes_it(rag, question, written, supported):
    """ "V&A" is the Victoria and Albert Museum the file's name says, "U.S." the United States; the
    British Museum and the U.K. are not. "Approximately" asks how many: no sentence need say it. A
    name the question does not write, though its words are the question's ("Kearney Park"),
    answers; saying back the question's own name ("the Kearney Mansion") does not, and one of the
    choices a question offers ("... or ...") does. "3,600 Frenchmen" says how many "Frenchman" asks."""
    answer = marked(rag, question, written)
    assert (answer.mark == "supported") is supported, answer.mark_reason


def test_a_word_of_degree_the_question_writes_in_brackets_is_the_questions_own():
    """ "very" is the question's word in "(very) similar" as in "very similar": the answer adds no
    degree, so it is an echo; "very" added to "How similar ...?" answers."""
    assert not answers_with_its_words("Is the copy (very) similar?", "very similar")
    assert answers_with_its_words("How similar was it?", "very similar")


@pytest.mark.parametrize(
    ("question", "written", "supported"),
    [
        ("In what year did the zoo stop using its jingle in advertising?", "1998–2002 [1]", False),
        ("In what year did the zoo stop using its jingle in advertising?", "2015 [1]", True),
        ("When was the zoo's jingle used in its advertising?", "1998–2002 [1]", True),
    ],
)
def test_a_year_asked_is_not_answered_with_a_span_of_years(rag, question, written, supported):
    """The span names the jingle, not the year it was dropped: "what year" asks for one year, and
    a question that asks when something lasted is answered by a span."""
    answer = marked(rag, question, written)
    assert (answer.mark == "supported") is supported, answer.mark_reason


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("In what country is Lisieux located?", {"country"}),
        ("What sport attracts most tourists to Jacksonville?", {"sport"}),
        ("What year did the war end?", {"year"}),
        ("What kind of people attend the meetings?", {"kind"}),  # "attend" is no verb's -s or -ed
        ("What countries are in the EU?", {"countries"}),
        ("What caused the fire?", set()),  # a verb, not a noun
        ("What causes floods?", set()),
        ("What is the capital of Kenya?", set()),
        ("Which NFL team represented the NFC?", set()),  # a name is a detail, never the kind asked
    ],
)
def test_the_noun_a_question_asks_with(question, asked):
    assert asked_with(question) == asked


def test_the_noun_a_question_asks_with_counts_only_where_the_sentence_says_it():
    """ "country" names the kind of the answer: a sentence need not say it, and one that does
    still counts it (a rival is judged on every word)."""
    weights = {"country": 0.3, "lisieux": 1.0}
    assert coverage("Elmsford is twinned with Lisieux in Normandy, France.", weights)[0] < 1.0
    assert coverage("Elmsford is twinned with Lisieux in Normandy, France.", weights, frozenset({"country"})) == (
        1.0,
        (),
    )
    assert coverage("Lisieux is a country town.", weights, frozenset({"country"})) == (1.0, ())
    assert coverage("Elmsford is in the Tessel valley.", weights, frozenset({"country"}))[1] == ("lisieux",)


def test_an_abbreviations_capitals_however_written():
    assert lacking("What is the warranty in the U.S.?", "In the US the warranty lasts one year.") == []
    assert lacking("What is the warranty in the US?", "In the U.S. the warranty lasts one year.") == []
    assert lacking("What is the warranty in the U.S.?", "In the U.K. the warranty lasts one year.") == ["U.S."]
    assert lacking("Who rated S&P's bonds?", "Standard & Poor's rated them.") == []
    assert lacking("What is the AT&T plan?", "Verizon offers a plan.") == ["AT&T"]


def test_the_sentence_read_is_the_one_that_says_most_of_the_question(rag):
    """ "Hall 1" is in the keynote's sentence and the closing panel's: the panel's is read."""
    answer = marked(rag, "Where is the closing panel?", "Hall 1 [1]")
    assert answer.mark == "supported", answer.mark_reason
    assert "closing panel" in answer.claims[0].sentence


def test_clusters_every_retriever_backs_equally_lead_with_the_one_that_says_the_question(rag):
    """Over these few files "Where is lunch served?" finds the ferries' "serve" and the schedule's
    "Lunch is served" with the same score (one retriever's first is another's second); the one
    that holds both words leads, so the gate reads it and does not withhold the answer."""
    evidence = rag.retrieve("Where is lunch served?")
    first, second = evidence.clusters[:2]
    assert first.score == pytest.approx(second.score)
    assert not evidence.abstained
    assert "Lunch is served" in first.passages[0].text


def test_a_follow_up_asks_for_what_the_user_asked_for(rag):
    """The rewrite kept the earlier question's "when": the follow-up asked where."""
    REWRITES["And where?"] = "When is lunch served?"
    history = [{"role": "user", "content": "When is lunch served?"}, {"role": "assistant", "content": "12:30 [1]"}]
    WRITES["Where is lunch served?"] = "12:30 [1]"  # the earlier answer, copied
    answer = rag.answer("And where?", history=history)
    assert answer.searched_for == "Where is lunch served?"
    assert answer.mark != "supported"  # a time is no answer to where
    WRITES["Where is lunch served?"] = "in the foyer [1]"
    assert rag.answer("And where?", history=history).mark == "supported"


@pytest.mark.parametrize(
    ("question", "written", "swapped"),
    [
        ("On what day of March did the shop on the harbour open?", "12 [1]", None),
        ("The shop on the harbour opened on 11 of what month?", "March [1]", "11"),
        ("In which country were scenes of Spectre filmed?", "Austria [1]", None),
        ("Scenes of Spectre were filmed in Australia at which ski resort?", "Solden [1]", "Australia"),
        ("What did Thomas Newman compose?", "the score of Spectre [1]", None),
        ("Newman Thomas composed what for Spectre?", "the score of Spectre [1]", "Newman Thomas"),
        ("When is the Harbour Gallery Weekend held?", "the last weekend of September [1]", None),
        ("When is the Ujazdow Gallery Weekend held?", "the last weekend of September [1]", "Ujazdow Gallery Weekend"),
        ("What remained an important complaint of the harbour's residents?", "the lack of a cinema [1]", None),
        ("What was not an important complaint of the harbour's residents?", "the lack of a cinema [1]", "not"),
        ("When was the New Pier rebuilt?", "2004 [1]", None),  # "New" after the Old Pier's "Pier"
        ("When was the Long Pier rebuilt?", "2004 [1]", "Long Pier"),
        ("When does the harbour's HFS meet for films?", "on Fridays [1]", None),  # the Harbour Film Society
    ],
)
def test_a_detail_the_question_swapped_is_not_supported(rag, question, written, swapped):
    """A question that states a detail its sentence does not (a number, a name, a name's words in
    another order, another name's word where the sentence's name has its own, a "not" the sentence
    does not deny) is about something else, however many of its other words match."""
    answer = marked(rag, question, written)
    if swapped is None:
        assert answer.mark == "supported", answer.mark_reason
    else:
        assert answer.mark == "not supported" and f'does not mention "{swapped}"' in answer.mark_reason


@pytest.mark.parametrize(
    ("before", "supported"),
    [
        ("While studying law in England, Iqbal joined the London branch of the League.", True),
        ("While studying law in England, Ahmed joined the London branch of the League.", False),
    ],
)
def test_a_sentence_that_says_he_is_read_with_the_sentence_it_points_back_to(before, supported):
    """ "He came back to Lahore in 1908." answers "What year did Iqbal return to Lahore?" where the
    sentence before it names Iqbal, and not where it names someone else."""
    weights = {"iqbal": 1.0, "lahore": 0.8, "return": 0.4, "year": 0.2}
    text = f"{before} He came back to Lahore in 1908."
    answer = checked("What year did Iqbal return to Lahore?", "1908 [1]", text, weights)
    assert (answer.mark == "supported") is supported, answer.mark_reason


@pytest.mark.parametrize(("sure", "supported"), [(0.9, True), (0.75, False)])
def test_a_hesitant_model_is_not_trusted_on_the_words_of_the_sentence_pointed_back_to(sure, supported):
    """Every word of the question is said once "He" is read as Iqbal, but the answer's own sentence
    says only "Lahore": 75% is not sure enough there, as it would be over a sentence that says it all."""
    weights = {"iqbal": 1.0, "lahore": 0.8, "return": 0.4, "year": 0.2}
    text = "Iqbal returned in the year he finished his studies. He came back to Lahore in 1908."
    answer = checked("What year did Iqbal return to Lahore?", "1908 [1]", text, weights, sure)
    assert answer.claims[0].coverage == 1.0
    assert (answer.mark == "supported") is supported, answer.mark_reason


@pytest.mark.parametrize(
    ("before", "supported"),
    [
        ("In 1886 Tesla founded Tesla Electric Light & Manufacturing, a lighting company.", True),
        ("In 1884 Tesla sailed to New York to work for Edison.", False),  # no company before "The company"
    ],
)
def test_the_company_is_read_as_the_company_the_sentence_before_names(before, supported):
    question = "What did Tesla Electric Light & Manufacturing install?"
    weights = {"tesla": 0.8, "electric": 0.5, "light": 0.4, "manufacturing": 0.6, "install": 0.4}
    text = f"{before} The company installed arc lighting systems."
    answer = checked(question, "arc lighting systems [1]", text, weights)
    assert (answer.mark == "supported") is supported, answer.mark_reason


def test_what_a_sentence_points_back_to():
    text = "By 1954, ABC's revenue increased by 67%. However that year, ABC had only 14 primary affiliates."
    assert sentence_referred_to(text, "However that year, ABC had only 14 primary affiliates.").startswith("By 1954")
    text = "Tesla sailed to New York. The company installed arc lighting. Parachutes slowed the descent."
    assert sentence_referred_to(text, "The company installed arc lighting.") == ""  # no company before it
    assert sentence_referred_to(text, "Parachutes slowed the descent.") == ""  # points at nothing
    text = "The historic Tower Theatre is on the list. The theater was built in 1939."
    assert sentence_referred_to(text, "The theater was built in 1939.").startswith("The historic")
    assert sentence_referred_to("He left.", "He left.") == ""  # the passage's first sentence: nothing before it


def checked(question: str, written: str, text: str, weights: dict[str, float], sure: float | None = None) -> Answer:
    """``written``'s mark over one passage of ``text``, the question's key words weighed ``weights``,
    the model ``sure`` of it (None: the backend does not say)."""
    answer = Answer(question=question, abstained=False, retrievers=4, clusters=[], timings_ms={})
    answer.answer, answer.key_terms, answer.answer_probability = written, weights, sure
    check_answer(answer, [Passage(citation=1, source="notes.txt", start=0, end=len(text), text=text)], None, MARK)
    return answer

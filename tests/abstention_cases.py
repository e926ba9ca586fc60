"""Abstention cases over the sample corpus: questions it answers, and questions it cannot.

The out-of-corpus questions are chosen to be hard, not off-topic: most sit next to a topic of
the corpus (an insect that is not a bee, a volcano it does not describe, another bread), so
the retrievers find related text and usually agree on it. Only the gate can tell that the
text does not hold the answer.
"""

IN_CORPUS = [
    ("How does a honeybee forager tell her sisters the direction of flowers?", "honeybees.txt"),
    ("Who decoded the dance language of bees?", "honeybees.txt"),
    ("Which volcano is the largest active volcano on Earth by volume?", "volcanoes.md"),
    ("Which Roman towns were buried by the eruption of Mount Vesuvius?", "volcanoes.md"),
    ("Why is sourdough bread sour?", "food/sourdough.txt"),
    ("Which IBM machine defeated Garry Kasparov in 1997?", "games/chess.txt"),
    ("What rating does a chess grandmaster title require?", "games/chess.txt"),
    ("Who invented the lens used in lighthouses in 1822?", "lighthouses.txt"),
    ("When did the last lighthouse keepers leave their towers?", "lighthouses.txt"),
]

OUT_OF_CORPUS = [
    "How many eyes does a jumping spider have?",
    "What is the height of Mount Kilimanjaro?",
    "Which volcano destroyed the town of Saint-Pierre on Martinique in 1902?",
    "At what temperature should a baguette be baked?",
    "Who won the 1972 World Chess Championship in Reykjavik?",
    "What is the capital of Mongolia?",
    "Who painted the ceiling of the Sistine Chapel?",
    "How tall is the Eiffel Tower?",
    "Which country has the most lighthouses in Asia?",
    "What is the boiling point of liquid nitrogen?",
]

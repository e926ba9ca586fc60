"""A first question and its follow-up, as the conversation tests ask them."""

FIRST = "Which is the largest active volcano on Earth?"
FOLLOW_UP = "What did it grow over?"
STAND_ALONE = "What did Mauna Loa, the largest active volcano on Earth, grow over?"
HISTORY = [{"role": "user", "content": FIRST}, {"role": "assistant", "content": "Mauna Loa in Hawaii [1]."}]

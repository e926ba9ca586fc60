"""Writes qrag_qdrant/text/english-zipf.tsv: how often general English uses each word, on the Zipf
scale (log10 of uses per billion words), from wordfreq's English "best" list.

The supported mark and the gate read a word's rarity (``text.terms.general_rarity``): a word under
``ZIPF_RARE`` counts as fully rare, so only the words at or above it are kept (about 15,000, 190 KB,
where wordfreq and its libraries take about 65 MB installed). wordfreq keeps Zipf values in
hundredths, which the table holds exactly.

    pip install 'wordfreq==3.1.1' && python scripts/word_frequencies.py
    python scripts/word_frequencies.py --compare $DATA    # the table's rarity against wordfreq's

``--compare`` reads every word of the data sets' questions, queries and conversations as the
checks read a question (``[\\w'-]+``, lower case) and counts those whose rarity differs.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

from wordfreq import get_frequency_dict, zipf_frequency

from qrag_qdrant.text.terms import ZIPF_COMMON, ZIPF_RARE, ZIPF_TABLE, general_rarity

#: where the figures come from, and their licence, which the table keeps (the package's code is Apache-2.0)
HEADER = (
    "# English word frequencies on the Zipf scale, from wordfreq 3.1.1's English 'best' list\n"
    "# (https://github.com/rspeer/wordfreq, Robyn Speer): the words at or above 3.50, without digits.\n"
    "# wordfreq's data is licensed CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/);\n"
    "# so is this table. Written by scripts/word_frequencies.py.\n"
)


def compare(data: Path) -> None:
    """How many words of the data sets' questions the table gives another rarity than wordfreq."""
    words: set[str] = set()
    for path in sorted(data.glob("*/*.jsonl")):
        if path.name in ("questions.jsonl", "queries.jsonl", "conversations.jsonl"):
            words.update(re.findall(r"[\w'-]+", path.read_text(encoding="utf-8").lower()))
    span = ZIPF_COMMON - ZIPF_RARE
    differ = sorted(
        word
        for word in words
        if abs(min(1.0, max(0.0, (ZIPF_COMMON - zipf_frequency(word, "en")) / span)) - general_rarity(word)) > 1e-9
    )
    plain = [word for word in differ if not any(c.isdigit() for c in word)]
    print(f"{len(words)} words; {len(differ)} with another rarity, {len(plain)} of them without a digit: {plain[:20]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", type=Path, metavar="DATA", help="compare with wordfreq on DATA's questions")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare)
        return
    frequencies = get_frequency_dict("en", "best")
    rows = sorted(
        (round(math.log10(frequency) + 9, 2), word)
        for word, frequency in frequencies.items()
        if round(math.log10(frequency) + 9, 2) >= ZIPF_RARE and not any(c.isdigit() for c in word)
    )
    rows.sort(key=lambda row: (-row[0], row[1]))
    Path(ZIPF_TABLE).write_text(HEADER + "".join(f"{zipf:.2f}\t{word}\n" for zipf, word in rows), encoding="utf-8")
    print(f"{len(rows)} words at or above Zipf {ZIPF_RARE} written to {ZIPF_TABLE}")


if __name__ == "__main__":
    main()

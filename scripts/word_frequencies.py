"""Writes qrag_qdrant/text/english-zipf.tsv: how often general English uses each word, on the Zipf
scale (log10 of uses per billion words), from wordfreq's English "best" list.

The supported mark and the gate read a word's rarity (``text.terms.general_rarity``): a word under
``ZIPF_RARE`` counts as fully rare, so only the words at or above it are kept (about 15,000, 190 KB,
where wordfreq and its libraries take about 65 MB installed). wordfreq keeps Zipf values in
hundredths, which the table holds exactly.

    pip install 'wordfreq==3.1.1' && python scripts/word_frequencies.py
"""

from __future__ import annotations

import math
from pathlib import Path

from wordfreq import get_frequency_dict

from qrag_qdrant.text.terms import ZIPF_RARE, ZIPF_TABLE

#: where the figures come from, and their licence, which the table keeps (the package's code is Apache-2.0)
HEADER = (
    "# English word frequencies on the Zipf scale, from wordfreq 3.1.1's English 'best' list\n"
    "# (https://github.com/rspeer/wordfreq, Robyn Speer): the words at or above 3.50, without digits.\n"
    "# wordfreq's data is licensed CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/);\n"
    "# so is this table. Written by scripts/word_frequencies.py.\n"
)


def main() -> None:
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

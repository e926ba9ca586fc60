"""Dates as documents and questions write them: "October 2, 2023", "2 October 2023", "2023-10-02",
and a month alone, "February 2023". A question's parts read the days and periods it names; a time
order reads the date a sentence, a title or a file name states where a document's metadata gives
none."""

from __future__ import annotations

import re
from datetime import date

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
#: "October 2, 2023", "2 October 2023", "2023-10-02"
DATE = re.compile(
    rf"\b(?:(?P<month>{'|'.join(MONTHS)})\s+(?P<day>\d{{1,2}}),?\s+(?P<year>\d{{4}})"
    rf"|(?P<day2>\d{{1,2}})\s+(?P<month2>{'|'.join(MONTHS)})\s+(?P<year2>\d{{4}})"
    r"|(?P<iso>\d{4}-\d{2}-\d{2}))\b",
    re.IGNORECASE,
)
#: a month of a year: "February 2023", "2023-02" (a file name's "minutes-2023-02")
MONTH_OF_YEAR = re.compile(
    rf"\b(?:(?P<month>{'|'.join(MONTHS)}),?\s+(?P<year>(?:19|20)\d{{2}})|(?P<iso_year>(?:19|20)\d{{2}})-(?P<iso_month>0[1-9]|1[0-2]))\b",
    re.IGNORECASE,
)


def day_of(match: re.Match[str]) -> date | None:
    """The day a ``DATE`` match names; None for one no calendar has ("February 30, 2023")."""
    try:
        if match["iso"]:
            return date.fromisoformat(match["iso"])
        month = (match["month"] or match["month2"]).lower()
        return date(int(match["year"] or match["year2"]), MONTHS.index(month) + 1, int(match["day"] or match["day2"]))
    except ValueError:
        return None


def stated_when(text: str) -> str | None:
    """The one day ("2023-02-08") or month ("2023-02") ``text`` states, as ISO 8601; None where it
    states none, or several that differ."""
    days = {day.isoformat() for match in DATE.finditer(text) if (day := day_of(match))}
    if days:
        return days.pop() if len(days) == 1 else None
    months = {
        f"{match['year']}-{MONTHS.index(match['month'].lower()) + 1:02d}"
        if match["month"]
        else f"{match['iso_year']}-{match['iso_month']}"
        for match in MONTH_OF_YEAR.finditer(text)
    }
    return months.pop() if len(months) == 1 else None

"""Dates in Cursor's Markdown exports and SpecStory histories are written in the user's locale: a date
whose day and month could be either (`05/06/2025`) is read in the order the file's other dates show (a
`20/06/2025` anywhere in it is day first), and its zone (`CEST`, `GMT+2`) is honoured."""

from __future__ import annotations

from datetime import UTC, datetime

from quarry.ingest.parse import parse_bytes, parse_file
from tests.shared_paths import REAL_LOGS, needs_shared

RENT = REAL_LOGS / "cursor" / "semikolon__kimonokittens__transcripts__cursor_adjusting_rent_message_for_janua.md"


def utc_ms(*parts: int) -> int:
    return int(datetime(*parts, tzinfo=UTC).timestamp() * 1000)


def export(date: str, chat: str) -> bytes:
    return (
        f"# Rent for June\n_Exported on {date} from Cursor (1.1.7)_\n\n---\n\n**User**\n\n{chat}\n\n---\n\n"
        "**Cursor**\n\nNoted.\n\n"
    ).encode()


def created(data: bytes) -> int:
    (session,) = parse_bytes(data, "cursor_rent_for_june.md").sessions
    return session.created_ms


def test_a_day_first_date_elsewhere_in_the_export_makes_its_date_day_first() -> None:
    data = export("05/06/2025 at 14:30:00 CEST", "The rent is due on 20/06/2025, please remind everyone.")
    assert created(data) == utc_ms(2025, 6, 5, 12, 30)  # 5 June, 14:30 at UTC+2


def test_a_month_first_date_elsewhere_keeps_it_month_first() -> None:
    data = export("05/06/2025 at 14:30:00 CEST", "The rent is due on 6/20/2025.")
    assert created(data) == utc_ms(2025, 5, 6, 12, 30)


def test_the_zone_is_honoured_and_a_date_that_shows_its_order_needs_no_other() -> None:
    assert created(export("20/06/2025 at 10:00:00 CEST", "hi")) == utc_ms(2025, 6, 20, 8, 0)
    assert created(export("6/20/2025 at 10:00:00 GMT-5", "hi")) == utc_ms(2025, 6, 20, 15, 0)
    # version numbers and times are no dates: nothing shows an order, so a slash date stays month first
    assert created(export("05/06/2025 at 14:30:00 CEST", "Cursor 1.13.20 at 10:15:30")) == utc_ms(2025, 5, 6, 12, 30)


def test_specstory_s_title_and_headings_follow_the_file_s_order() -> None:
    data = (
        b"## SpecStory\n\n## Rent reminders (05/06/2025, 14:30:00 CEST)\n\n"
        b"_**User (20/06/2025, 09:00:00 CEST)**_\n\nremind them\n\n---\n\n_**Assistant**_\n\nDone.\n\n---\n\n"
    )
    (session,) = parse_bytes(data, "2025-06-05_12-30-rent-reminders.md").sessions
    assert session.created_ms == utc_ms(2025, 6, 5, 12, 30)
    user = next(m for m in session.messages if m.role == "user")
    assert user.time_ms == utc_ms(2025, 6, 20, 7, 0)


@needs_shared
def test_the_real_export_s_date_without_other_dates_stays_month_first() -> None:
    # head -2: `_Exported on 7/3/2025 at 19:38:42 GMT+2 from Cursor (1.1.7)_`, and no other d/m/yyyy date
    # in the file shows an order: 3 July (Swedish summer time is GMT+2; 7 March would be GMT+1)
    text = RENT.read_text()
    assert "_Exported on 7/3/2025 at 19:38:42 GMT+2 from Cursor (1.1.7)_" in text.split("\n")[1]
    (session,) = parse_file(RENT).sessions
    assert session.created_ms == utc_ms(2025, 7, 3, 17, 38, 42)

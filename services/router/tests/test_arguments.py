"""Arguments from the tool's JSON schema, offline: each kind of property, and the required
argument nothing in the message fills (reported, never guessed)."""

from __future__ import annotations

from datetime import date

import pytest

from weir_common.events import Observation
from weir_router.arguments import fill
from weir_router.known_paths import KnownPaths

pytestmark = pytest.mark.unit

TODAY = date(2026, 12, 4)
ROOTS = Observation(tool="list_allowed_directories", content="Allowed directories:\n/srv/share\n")
LISTING = Observation(
    tool="list_directory",
    arguments={"path": "/srv/share/projects"},
    content="[DIR] old\n[FILE] falcon.txt\n[FILE] notes.md",
)
PATH = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def schema(**properties: object) -> dict[str, object]:
    return {"type": "object", "properties": properties, "required": list(properties)}


def test_a_file_name_resolves_against_what_a_listing_returned() -> None:
    known = KnownPaths.seen_in([ROOTS, LISTING])
    filled = fill(PATH, "Read the file falcon.txt", known)
    assert filled.arguments == {"path": "/srv/share/projects/falcon.txt"}
    assert filled.complete


def test_a_file_name_not_listed_goes_under_the_only_allowed_root() -> None:
    filled = fill(PATH, "what does report.pdf say?", KnownPaths.seen_in([ROOTS]))
    assert filled.arguments == {"path": "/srv/share/report.pdf"}


def test_a_path_nobody_has_shown_is_missing_not_guessed() -> None:
    filled = fill(PATH, "Read the file falcon.txt", KnownPaths())
    assert filled.arguments == {}
    assert filled.missing == ["path"]
    assert not filled.complete


def test_an_absolute_path_in_the_message_is_taken_as_written() -> None:
    assert fill(PATH, "show /etc/hosts please").arguments == {"path": "/etc/hosts"}


def test_a_directory_request_takes_the_allowed_root() -> None:
    filled = fill(PATH, "List the files in the allowed directory", KnownPaths.seen_in([ROOTS]))
    assert filled.arguments == {"path": "/srv/share"}


def test_several_paths_fill_an_array_of_strings() -> None:
    paths = schema(paths={"type": "array", "items": {"type": "string"}})
    known = KnownPaths.seen_in([ROOTS, LISTING])
    filled = fill(paths, "compare falcon.txt and notes.md", known)
    assert filled.arguments == {
        "paths": ["/srv/share/projects/falcon.txt", "/srv/share/projects/notes.md"]
    }


def test_quoted_strings_numbers_and_enums() -> None:
    write = schema(path={"type": "string"}, content={"type": "string"})
    known = KnownPaths.seen_in([ROOTS])
    filled = fill(write, 'Write "launch at dawn" to plan.txt', known)
    assert filled.arguments == {"path": "/srv/share/plan.txt", "content": "launch at dawn"}
    sort = schema(sortBy={"type": "string", "enum": ["name", "size"]}, limit={"type": "integer"})
    assert fill(sort, "list the 5 biggest, sorted by size").arguments == {
        "sortBy": "size",
        "limit": 5,
    }
    assert fill(sort, "list them").missing == ["sortBy", "limit"]


def test_dates_explicit_and_relative_in_both_languages() -> None:
    day = schema(date={"type": "string", "format": "date"})
    assert fill(day, "sales on 2026-11-30", today=TODAY).arguments == {"date": "2026-11-30"}
    assert fill(day, "sales yesterday", today=TODAY).arguments == {"date": "2026-12-03"}
    assert fill(day, "明天的会议", today=TODAY).arguments == {"date": "2026-12-05"}
    assert fill(day, "sales", today=TODAY).missing == ["date"]


def test_time_zones_from_city_names() -> None:
    tz = schema(timezone={"type": "string"})
    assert fill(tz, "现在东京几点？").arguments == {"timezone": "Asia/Tokyo"}
    assert fill(tz, "What time is it in Tokyo?").arguments == {"timezone": "Asia/Tokyo"}


def test_a_required_property_the_schema_does_not_describe_is_missing() -> None:
    odd = {"type": "object", "properties": {}, "required": ["token"]}
    assert fill(odd, "anything").missing == ["token"]


def test_file_names_do_not_become_numbers() -> None:
    numbers = schema(a={"type": "number"})
    assert fill(numbers, "open v2.txt").missing == ["a"]

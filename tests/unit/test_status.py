"""The crawldb status transition table, enumerated (as Nutch's TestCrawlDbStates)."""
import pytest

from crawlkit.status import Schedule, Status, FetchStatus as F, transition

RETRY_MAX = 3

CASES = [
    # old status,        outcome,              retries, new status,          schedule,        retries
    (Status.UNFETCHED,     F.SUCCESS,            0, Status.FETCHED,        Schedule.NORMAL, 0),
    (Status.RETRY,         F.SUCCESS,            2, Status.FETCHED,        Schedule.NORMAL, 0),
    (Status.FETCHED,       F.NOT_MODIFIED,       0, Status.NOT_MODIFIED,   Schedule.NORMAL, 0),
    (Status.UNFETCHED,     F.REDIRECT_PERM,      0, Status.REDIRECT_PERM,  Schedule.NORMAL, 0),
    (Status.UNFETCHED,     F.REDIRECT_TEMP,      0, Status.REDIRECT_TEMP,  Schedule.NORMAL, 0),
    (Status.UNFETCHED,     F.NOT_FOUND,          0, Status.GONE,           Schedule.GONE,   0),
    (Status.FETCHED,       F.GONE,               0, Status.GONE,           Schedule.GONE,   0),
    (Status.UNFETCHED,     F.ACCESS_DENIED,      0, Status.GONE,           Schedule.GONE,   0),
    (Status.UNFETCHED,     F.ROBOTS_DENIED,      0, Status.GONE,           Schedule.GONE,   0),
    (Status.UNFETCHED,     F.BLOCKED,            0, Status.GONE,           Schedule.GONE,   0),
    (Status.UNFETCHED,     F.UNSUPPORTED_TYPE,   0, Status.FETCHED,        Schedule.NORMAL, 0),
    (Status.UNFETCHED,     F.RETRY,              0, Status.RETRY,          Schedule.RETRY,  1),
    (Status.FETCHED,       F.RETRY,              1, Status.RETRY,          Schedule.RETRY,  2),
    (Status.RETRY,         F.RETRY,              3, Status.GONE,           Schedule.GONE,   4),
    (Status.UNFETCHED,     F.SKIPPED,            0, Status.UNFETCHED,      Schedule.RETRY,  0),
    (Status.FETCHED,       F.SKIPPED,            2, Status.FETCHED,        Schedule.RETRY,  2),
    (Status.GONE,          F.SUCCESS,            0, Status.FETCHED,        Schedule.NORMAL, 0),
]


@pytest.mark.parametrize("old,outcome,retries,want_status,want_schedule,want_retries", CASES)
def test_transition(old, outcome, retries, want_status, want_schedule, want_retries):
    assert transition(old, outcome, retries, RETRY_MAX) == (want_status, want_schedule, want_retries)


def test_every_fetch_outcome_has_a_transition():
    covered = {case[1] for case in CASES}
    assert covered == set(F)

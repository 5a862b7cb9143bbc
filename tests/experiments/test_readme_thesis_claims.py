"""The README's "Wang's thesis: where its claims stand" against the sections it sums up: every
number and verdict it gives is one those sections give (and their own tests check against the
data), in the section it names."""

import re
from pathlib import Path

import pytest

from tests.experiments.test_readme_herasched_physical import flat

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "README.md").read_text()


def between(start: str, end: str) -> str:
    i = TEXT.index(start)
    return flat(TEXT[i:TEXT.index(end, i)])


SUMMARY = between("### Wang's thesis: where its claims stand", "## Real clusters")
DBF = between("## DBF (Wang's thesis Ch. 3)", "## HeraSched (Wang's thesis Ch. 4)")
HERA = flat(TEXT[TEXT.index("## HeraSched (Wang's thesis Ch. 4)"):])

#: (what the summary says, what the section says: the same fact where it is shown)
DBF_FACTS = [
    ("AWT: 3,019 ± 213 s against LCFS with EASY's 3,259 s", "AWT **3,019 ± 213 s**"),
    ("Below on the mean, on 2 of 3 seeds", "2 of 3 seeds are below on AWT by themselves"),
    ("12.1 ± 0.1 jobs against SJF's 11.6", "queue length **12.1 ± 0.1** jobs against Ch. 3's "
                                            "SJF's 11.6"),
    ("on no seed", "0 of 3 on queue length"),
    ("it waits more than SJF: 8,580 against 8,227 s", "| SJF (`sqf`) | 3,916 | 8,227 |"),
    ("8,580 against", "| M32-4@masked (3 seeds) | 3,019 | 8,580 |"),
    ("**holds** (Insp-SJF-o 50.37%)", "lowest utilisation (thesis: SchedInspector (online and "
                                      "offline) has the lowest utilisation): HOLDS: lowest: "
                                      "Insp-SJF-o 50.37%"),
    ("(M = 10: 58,324 to 5,033 s)", "M = 10: AWT 58,324 ± 7,846 (52,727, 67,291, 54,953) -> "
                                    "5,033 ± 242"),
    ("One tail slot lowers the AWT for M <= 20*: **holds**", "with M <= 20, one tail slot lowers AWT and queue length "
                                 "(thesis: a large gain): HOLDS"),
    ("57.5 % of the jobs of more than 128 cores are not started by an episode's end, against "
     "47.2 % without a tail", "57.5 % of the jobs of more than 128 cores not started by an "
                              "episode's end against 47.2 % without a"),
    ("ours 16.7 ± 1.9", "mean queue length with M = 20, M_t = 0 (thesis: 31): DOES NOT HOLD: "
                        "16.7 ± 1.9"),
]
HERA_FACTS = [
    ("95,959 s against 106,235 s, 10,276 s lower paired (standard error 1,739 s)",
     "mean MWT 95,959 s against the lowest cell's 106,235 s (FCFS + topology), S > 2 against all "
     "21 cells, and 10,276 s lower paired (standard error 1,739 s)"),
    ("(72,831 s against 93,010 s), resting on two", "72,831 s against 93,010 s (WFP3 + best-fit)"),
    ("for the imitated starts, now on all three", "now on all three seeds (78,921, 64,235 and "
                                                  "75,926 s)"),
    ("(39,882 s against 40,577 s), but within the noise (-695 ± 1,805 s paired)",
     "(39,882 s) and the rule they imitate (38,328 s) are below every cell's mean, the lowest "
     "being FCFS + best-fit's 40,577 s. But paired they differ from it by -695 ± 1,805 s"),
    ("46,810 s was a lucky draw: 101,185 s on the mean", "46,810 and 57,454 s as generated) were "
                                                         "lucky draws: 101,185 and 85,133 s"),
    ("The shipped seeds wait 46,810 s", "41,842, 61,273, 37,315; 46,810 ± 12,728 | no (lowest "
                                        "cell 28,956 s"),
    ("against FCFS + topology's 28,956 s", "| 28,956 (FCFS + topology) |"),
    ("five seeds of the squared-wait reward 57,454 s", "mean MWT 57,454 s, S > 2 against 17 of "
                                                       "21 cells"),
    ("97,289 s against 101,386 s, S > 2 against all 21 cells", "MWT 97,289 s against 101,386 s"),
    ("This rests on four seeds of five", "on five, on four seeds and a 4.0 % margin"),
    ("(75,529 s against 90,396 s)", "MWT 75,529 s, below the lowest cell's 90,396 s"),
    ("On five seeds the MWT fails (117,950 s)", "on five seeds the mean MWT, 117,950 s, is above "
                                                "the lowest cell's 90,396 s"),
    ("(316,014 s on five seeds against 183,611 s)", "mean MWT 316,014 s against the lowest "
                                                    "cell's 183,611 s"),
    ("best.pt scores S 0.53 against it on the test weeks", "S 0.53 against FCFS + best-fit"),
    ("does as well (118,144 s)", "(117,950 against 118,144 s, both below 10 cells)"),
    ("is below every cell (89,526 s)", "below every cell on Physical's test period** (89,526 s)"),
    ("does worse on the test weeks (430,110 s)", "Mean AWT 18,485.7 s and MWT 430,110 s"),
    ("waits less (258,598 against 320,746 s", "waits less** than the trained selectors "
                                              "(258,598 against 320,746 s)"),
    ("does worse (143,446 s, 30 updates)", "Mean MWT 143,446 s (per seed"),
    ("from 543,939 to 406,304 s", "from 543,939 to 406,304 s on the test weeks"),
    ("a flat rule (404,218 s)", "406,304 against 404,218 s on the test weeks"),
    ("on Deeplearn it beats no cell on the test period", "and it beats no cell"),
    ("wait 33,520 s, within 82 s of each other", "MWT 33,520 s (33,493, 33,456 and 33,612 s)"),
    ("within 82 s of each other", "the seeds agree closely (sd 82 s)"),
    ("waits 98,699 s at most", "AWT 23,821.5 s and MWT 98,699 s, below every cell's MWT"),
    ("imitates the flat rule first (98,505 s)", "mean MWT 98,505 ± 1,111 s"),
    ("meet both criteria before any update (73,807 s), on two seeds of three",
     "mean MWT 73,807 s (69,892, 52,882 and 98,646 s), below every cell"),
    ("one update costs 111 times ours in CPU", "111 times as much"),
]


@pytest.mark.parametrize("said, shown", DBF_FACTS + HERA_FACTS)
def test_each_fact_is_the_sections(said, shown):
    section = DBF if (said, shown) in DBF_FACTS else HERA
    assert said in SUMMARY, said
    assert shown in section, shown


def test_every_number_of_the_summary_is_checked():
    """No number in the summary that no fact above accounts for."""
    numbers = set(re.findall(r"\d[\d,.]*\d|\d", SUMMARY))
    covered = set()
    for said, _ in DBF_FACTS + HERA_FACTS:
        covered |= set(re.findall(r"\d[\d,.]*\d|\d", said))
    # the issues' numbers, the figure and chapter numbers, the window and thresholds named
    named = {"16", "17", "3", "4", "3.4", "32", "31", "20", "10", "128", "2", "21", "1", "5"}
    assert numbers - covered - named == set()

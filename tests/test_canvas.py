"""The Canvas export's parts that need no gradebook (autograder/canvas.py): scores as Canvas reads them, the roster,
the assignments named on the command line, and an earlier export set aside after a refusal. The export of a graded
class, end to end: tests/test_class_report.py."""
from __future__ import annotations

import pytest

from autograder.canvas import STALE, ExportError, Person, number, parse_assignments, read_roster, set_aside


@pytest.mark.parametrize("score, shown", [(6.75, "6.75"), (13.0, "13"), (0.0, "0"), (0.5, "0.5"),
                                          (2 / 3, "0.67"), (12.345678, "12.35"), (None, "")])
def test_a_score_keeps_two_decimals_and_a_held_back_one_is_blank(score, shown):
    assert number(score) == shown


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_the_roster_maps_each_student_to_canvas_by_the_ids_it_has(tmp_path):
    roster = write(tmp_path / "students.csv", "\ufeffid,first_name,last_name,lms_user_id,sis_user_id,section\n"
                                              "ada,Ada,Lovelace, 1001 ,,A\n"
                                              "bob,,,,S-2,\n")
    assert read_roster(roster) == {
        "ada": Person("ada", "Lovelace, Ada", "1001", "", "", "A"),
        "bob": Person("bob", "bob", "", "S-2", "", ""),   # no name: the id stands for it; a missing column is empty
    }


@pytest.mark.parametrize("text, message", [("first_name,lms_user_id\nAda,1001\n", "has no `id` column"),
                                           ("", "has no `id` column")])
def test_a_roster_without_student_ids_is_refused(tmp_path, text, message):
    with pytest.raises(ExportError, match=message):
        read_roster(write(tmp_path / "students.csv", text))


def test_a_missing_roster_is_refused_with_its_path(tmp_path):
    with pytest.raises(ExportError, match=f"cannot read the roster {tmp_path / 'none.csv'}"):
        read_roster(tmp_path / "none.csv")


def test_assignments_are_named_with_their_numeric_canvas_ids():
    known = ["01_floats", "02_tensors_on_gpu"]
    assert parse_assignments(["01_floats=4021", "02_tensors_on_gpu= 4022 "], known) == \
        {"01_floats": "4021", "02_tensors_on_gpu": "4022"}
    for specs, message in [(["01_floats"], "numeric assignment id"), (["01_floats=abc"], "numeric assignment id"),
                           (["03_strides_views=4023"], "has no assignment '03_strides_views'"),
                           ([], "name at least one assignment")]:
        with pytest.raises(ExportError, match=message):
            parse_assignments(specs, known)


def test_an_earlier_export_is_set_aside_after_a_refusal(tmp_path):
    out = tmp_path / "canvas-grades.csv"
    assert set_aside(out) == ""                       # nothing there: nothing said
    write(out, "old")
    write(tmp_path / f"canvas-grades.csv{STALE}", "older")
    said = set_aside(out)
    assert not out.exists() and (tmp_path / f"canvas-grades.csv{STALE}").read_text() == "old"
    assert f"was renamed canvas-grades.csv{STALE}" in said and "not uploaded by mistake" in said

"""MemBench loader on hand-written trajectories in the upstream layouts (tests/fixtures/membench):
the merged data file, MemData's per-type files and the released, pre-formatted test files."""

from __future__ import annotations

import json
import shutil

import pytest
from memharness.data_prep import membench
from memharness.data_prep.base import DatasetError
from paths import FIXTURES

FIX = FIXTURES / "membench"
QA_FIELDS = {"qid", "question", "answer", "target_step_id", "choices", "ground_truth", "time"}


def _trajectories(path):
    data = json.loads(path.read_text())
    layout = data if "MemData" not in str(path) else {path.stem: data}
    return [t for scenarios in layout.values() for trajs in scenarios.values() for t in trajs]


def test_fixture_files_carry_the_upstream_field_names_exactly():
    files = sorted(FIX.rglob("*.json"))
    assert len(files) == 7
    for path in files:
        for traj in _trajectories(path):
            assert set(traj) == {"tid", "message_list", "QA"}, path
            assert set(traj["QA"]) == QA_FIELDS and set(traj["QA"]["choices"]) == set("ABCD"), path


def test_observation_trajectories_become_dated_units_then_a_four_choice_question():
    ds = membench.load("third", "low", path=str(FIX))
    assert [e.id for e in ds.episodes] == [
        "membench-third-low-simple-roles-0",
        "membench-third-low-simple-roles-1",
        "membench-third-low-simple-events-0",
        "membench-third-low-knowledge_update-roles-0",
    ]
    ep = ds.episodes[0]
    assert ep.units[0].text == (
        "My cousin Mara Quill works as a glassblower. (place: Boston, MA; time: '2024-10-01 08:12' "
        "Tuesday)"
    )
    assert [u.timestamp for u in ep.units] == [
        "2024-10-01T08:12",
        "2024-10-01T19:40",
        "2024-10-02T09:05",
        "2024-10-02T18:31",
    ]
    (q,) = ep.questions
    assert q.position == 4 and q.asked_at == "2024-10-03T08:02"
    assert q.options == ("Carpenter", "Glassblower", "Librarian", "Pilot") and q.gold_option == 1
    assert q.answers == ()  # multiple choice: the reference is the gold option's text
    assert [(e.position, e.end) for e in q.evidence] == [(0, 1)]
    assert q.categories == {
        "membench_perspective": "third",
        "membench_level": "low",
        "membench_qa_type": "simple",
        "membench_scenario": "roles",
    }
    two = ds.episodes[1].questions[0]
    assert [e.position for e in two.evidence] == [0, 1]  # a comparison needs both messages
    # the knowledge update names step 2 of two messages: left out of the evidence and counted
    update = ds.episodes[3].questions[0]
    assert [e.position for e in update.evidence] == [1]
    assert ds.metadata["targets_out_of_range"] == 1
    assert ds.metadata["qa_types"] == ["knowledge_update", "simple"]


def test_sessions_flatten_in_order_and_pairs_name_the_flattened_index():
    (movie, food) = membench.load("third", "high", path=str(FIX)).episodes
    assert [e.position for e in movie.questions[0].evidence] == [0, 1, 2]
    assert [u.source_id for u in food.units] == ["session-0", "session-1", "session-1"]
    assert [e.position for e in food.questions[0].evidence] == [0, 2]  # [2, 1]: index 2
    first = membench.load("first", "low", path=str(FIX))
    by_id = {e.id: e for e in first.episodes}
    lena = by_id["membench-first-low-simple-roles-0"]
    assert lena.units[1].text == (
        "'user': Lena is 58 and teaches cello. (place: Boston, MA; time: '2024-10-01 08:21' "
        "Tuesday); 'agent': A cello teacher, lovely. (place: Boston, MA; time: '2024-10-01 08:21' "
        "Tuesday)"
    )
    assert [e.position for e in lena.questions[0].evidence] == [1]
    theo = by_id["membench-first-low-simple-roles-1"]  # the {user, assistant} spelling
    assert theo.units[0].text.startswith("'user': My manager is called Theo Lind. (place:")
    book = by_id["membench-first-low-knowledge_update-events-0"]
    assert [e.position for e in book.questions[0].evidence] == [1]
    assert membench.load("first", "high", path=str(FIX)).episodes[0].questions[0].text == (
        "How do I probably feel today?"
    )


def test_released_formatted_messages_keep_their_text_and_undated_noise_keeps_the_last_time():
    (ep,) = membench.load("third", "low", path=str(FIX / "released")).episodes
    assert ep.units[1].text == "The weather was grey and windy all afternoon."
    assert [u.timestamp for u in ep.units] == [
        "2024-10-01T08:00",
        "2024-10-01T08:00",
        "2024-10-02T17:45",
    ]
    file = FIX / "released" / "FirstAgentDataHighLevel_0.json"
    (turns,) = membench.load("first", "high", path=str(file)).episodes
    assert turns.units[1].text == "'user': Any news today?; 'agent': Nothing much."
    assert [e.position for e in turns.questions[0].evidence] == [0, 2]


def test_qa_types_select_and_an_unknown_one_is_refused():
    ds = membench.load("third", "low", qa_types=["knowledge_update"], path=str(FIX))
    assert [e.metadata["qa_type"] for e in ds.episodes] == ["knowledge_update"]
    with pytest.raises(
        DatasetError, match=r"\['ranking'\] not in .*there: simple, knowledge_update"
    ):
        membench.load("third", "low", qa_types=["ranking"], path=str(FIX))


@pytest.mark.parametrize(
    "text,iso",
    [
        ("'2024-10-01 08:00' Tuesday", "2024-10-01T08:00"),
        ("2024-10-01 8:05", "2024-10-01T08:05"),
        ("2024-10-01", "2024-10-01"),
    ],
)
def test_membench_times_read_as_iso(text, iso):
    assert membench.parse_time(text, "m") == iso


@pytest.mark.parametrize(
    "text", ["yesterday", "'2024-13-01 08:00' Tuesday", "2024-10-01 08:00 Blursday"]
)
def test_a_malformed_time_is_refused_naming_the_message(text, tmp_path):
    data = json.loads((FIX / "data" / "ThirdAgentDataLowLevel.json").read_text())
    data["simple"]["roles"][0]["message_list"][2]["time"] = text
    (tmp_path / "ThirdAgentDataLowLevel.json").write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"simple\.roles\[0\]\.message_list\[2\]\.time: time"):
        membench.load("third", "low", path=str(tmp_path))


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda qa: qa.update(target_steps=qa.pop("target_step_id")), "'target_step_id'"),
        (lambda qa: qa.update(ground_truth="E"), r"ground_truth: 'E' is not one of A, B, C, D"),
        (lambda qa: qa["choices"].pop("A"), r"expected the letters A..D, got \['B', 'C', 'D'\]"),
        (lambda qa: qa.update(choices={"1": "x", "2": "y"}), "expected the letters A..D"),
        (lambda qa: qa.update(target_step_id=["0"]), "a target step should be an index"),
    ],
)
def test_a_renamed_or_malformed_qa_field_is_refused(edit, message, tmp_path):
    data = json.loads((FIX / "data" / "ThirdAgentDataLowLevel.json").read_text())
    edit(data["simple"]["events"][0]["QA"])
    (tmp_path / "ThirdAgentDataLowLevel.json").write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=message):
        membench.load("third", "low", path=str(tmp_path))


def test_a_renamed_message_field_is_refused(tmp_path):
    shutil.copytree(FIX / "MemData", tmp_path / "MemData")
    file = tmp_path / "MemData" / "FirstAgent" / "simple.json"
    data = json.loads(file.read_text())
    turn = data["roles"][0]["message_list"][0][0]
    turn["utterance"] = turn.pop("user_message")
    file.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"no text field \(one of user_message, user\)"):
        membench.load("first", "low", path=str(tmp_path))


def test_without_a_copy_the_error_names_the_files_and_where_to_get_them(tmp_path):
    with pytest.raises(DatasetError) as err:
        membench.load("first", "high", data_dir=str(tmp_path))
    message = str(err.value)
    assert "FirstAgentDataHighLevel.json" in message and "MemData/FirstAgent/*.json" in message
    assert str(tmp_path / "membench") in message and membench.SOURCE in message
    assert "\n" not in message


def test_several_matching_files_are_refused_not_picked(tmp_path):
    src = FIX / "data" / "ThirdAgentDataLowLevel.json"
    for name in ("ThirdAgentDataLowLevel_0.json", "ThirdAgentDataLowLevel_100.json"):
        shutil.copy(src, tmp_path / name)
    with pytest.raises(DatasetError, match="several MemBench files match"):
        membench.load("third", "low", path=str(tmp_path))


def test_the_loaded_content_is_the_same_from_either_folder_form(tmp_path):
    shutil.copytree(FIX / "MemData" / "ThirdAgent", tmp_path / "ThirdAgent")
    a = membench.load("third", "high", path=str(FIX))
    b = membench.load("third", "high", path=str(tmp_path))
    assert a.checksum() == b.checksum()


def test_capacity_asks_after_every_message_from_the_last_target_with_the_tokens_seen():
    from memharness.memsys.services.tokens import get_tokenizer

    tok = get_tokenizer("cl100k_base")
    (ep, *_) = membench.load("third", "low", path=str(FIX), capacity_bucket=1).episodes
    # target [0] of four messages of 35, 37, 35 and 31 tokens: asked after messages 1, 2, 3 and 4
    assert [tok.count(u.text) for u in ep.units] == [35, 37, 35, 31]
    assert [q.position for q in ep.questions] == [1, 2, 3, 4]
    assert [q.categories["membench_tokens"] for q in ep.questions] == [
        "0000035-0000035",
        "0000072-0000072",
        "0000107-0000107",
        "0000138-0000138",
    ]
    assert ep.questions[-1].id == "membench-third-low-simple-roles-0-q0-after4"
    assert all(q.gold_option == 1 and len(q.evidence) == 1 for q in ep.questions)
    bucketed = membench.load("third", "low", path=str(FIX), capacity_bucket=100).episodes[0]
    assert [q.categories["membench_tokens"] for q in bucketed.questions] == [
        "0000000-0000099",
        "0000000-0000099",
        "0000100-0000199",
        "0000100-0000199",
    ]


def test_capacity_counts_a_turns_user_and_agent_strings_apart_as_upstream_does():
    from memharness.memsys.services.tokens import get_tokenizer

    tok = get_tokenizer("cl100k_base")
    ds = membench.load("first", "low", path=str(FIX), capacity_bucket=1)
    lena = next(e for e in ds.episodes if e.id == "membench-first-low-simple-roles-0")
    # target [1, 0]: asked after turns 2 and 3; the count is of the suffixed user and agent strings
    user, agent = lena.units[0].text[len("'user': ") :].split("; 'agent': ")
    first = tok.count(user) + tok.count(agent)
    assert first != tok.count(lena.units[0].text)  # not the stored unit's text
    seen = [int(q.categories["membench_tokens"].split("-")[0]) for q in lena.questions]
    assert [q.position for q in lena.questions] == [2, 3] and seen[0] > first
    assert seen[1] - seen[0] == sum(
        tok.count(s) for s in lena.units[2].text[len("'user': ") :].split("; 'agent': ")
    )


@pytest.mark.parametrize("bad", [0, -5, "many", True])
def test_a_capacity_bucket_that_is_not_a_positive_count_is_refused(bad):
    with pytest.raises(DatasetError, match="capacity_bucket"):
        membench.load("third", "low", path=str(FIX), capacity_bucket=bad)


def test_an_observation_without_its_place_and_time_is_refused_by_name(tmp_path):
    data = json.loads((FIX / "data" / "ThirdAgentDataLowLevel.json").read_text())
    message = data["simple"]["roles"][1]["message_list"][1]
    del message["place"], message["time"]
    (tmp_path / "ThirdAgentDataLowLevel.json").write_text(json.dumps(data))
    with pytest.raises(
        DatasetError, match=r"roles\[1\]\.message_list\[1\]: an observation .* 'time'"
    ):
        membench.load("third", "low", path=str(tmp_path))

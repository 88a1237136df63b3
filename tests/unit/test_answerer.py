"""The one way into the answer (advisor/answering/answerer.py) on the lab recording of the SSD
mirror (OpenZFS 2.3.2, ssd-mirror2x2, idle) with the shipped model: every caller that asks through
it gets the same answer for the same question, whichever way it came to ask."""
from __future__ import annotations

import asyncio

import pytest

from advisor.answering.answerer import Answerer, Query
from advisor.engine.loader import load_rulebook
from advisor.host.snapshot import collect_from_root
from advisor.model.regression_model import build_model
from advisor.page import gather
from advisor.recognise.auto_answer import recommend_auto
from advisor.recognise.classify import Recognition
from support import RECORDING

BOOK = load_rulebook()
WAL = Recognition("postgres", "wal", 0.9, None, reason="recognised from its I/O")


@pytest.fixture(scope="module")
def host():
    return asyncio.run(collect_from_root(str(RECORDING), 30.0)).host


@pytest.fixture(scope="module")
def answerer(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    return Answerer(BOOK, state, build_model(state, BOOK).fit())


def test_a_dataset_recognised_with_a_role_gets_the_answer_for_that_role(host, answerer):
    """The model's predictions are those of the role's own job, not of the workload's first role:
    with the data files' predictions this dataset at 128K was a change to 8K, expected +141 %;
    with the WAL's the model does not separate the values, and the answer says how to measure."""
    asked = answerer.answer(host, Query("postgres", {"role": "wal"}, dataset="tank/home"))
    auto = recommend_auto(answerer, host, {"tank/home": WAL}, Query("auto", dataset="tank/home"))
    assert auto.recommendations == asked.recommendations
    recordsize = next(r for r in auto.recommendations if r.parameter == "recordsize")
    assert recordsize.status == "undecided" and recordsize.recommended == "128K"


def test_the_page_shows_the_answer_the_api_gives(host, answerer, tmp_path):
    inputs = gather.Inputs(host=host, book=BOOK, workloads={}, state_dir=tmp_path, answerer=answerer,
                           recognised={"tank/home": WAL})
    [shown] = gather.dataset_answers(inputs)
    auto = recommend_auto(answerer, host, {"tank/home": WAL}, Query("auto", dataset="tank/home"))
    assert shown.answer.response is not None and shown.recognised == WAL
    assert shown.answer.response.recommendations == auto.recommendations


def test_an_answer_within_a_bound_goes_on_while_the_model_is_fitted(host, tmp_path):
    """A scrape cannot wait a fit out: past its bound the answer is the rules' and probes', and says
    the model is being fitted; the fit done, the same answerer reads it."""
    model = build_model(tmp_path, BOOK)
    model.begin()  # a fit under way, as the service starts one
    bounded = Answerer(BOOK, tmp_path, model).within(0)
    asked = Query("postgres", dataset="tank/home")
    during = bounded.answer(host, asked)
    assert during.model is not None and not during.model.available and "being fitted" in (during.model.reason or "")
    assert next(r for r in during.recommendations if r.parameter == "recordsize").source == "rule"
    model.fit()
    after = bounded.answer(host, asked)
    assert after.model is not None and after.model.available
    assert next(r for r in after.recommendations if r.parameter == "recordsize").source in ("model", "rule+model")

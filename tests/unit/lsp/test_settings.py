"""Editor settings over the environment, with invalid values falling back by name."""

from __future__ import annotations

import pytest

from reverie.lsp.settings import resolve, section_of


def test_section_shapes_are_all_accepted():
    inner = {"provider": "openai"}
    assert section_of(inner) == inner
    assert section_of({"reverie": inner}) == inner
    assert section_of({"settings": inner}) == inner
    assert section_of({"settings": {"reverie": inner}}) == inner
    assert section_of({"reverie.provider": "openai"}) == inner
    assert section_of(None) == {} and section_of([1]) == {}


def test_later_layers_win_and_none_means_unset(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REVERIE_DREAM_MIN_SESSIONS", "7")
    r = resolve({"dreamMinSessions": 3, "model": "a"}, {"model": "b", "dreamMinSessions": None})
    assert r.settings.dream_min_sessions == 3
    assert r.settings.model == "b"
    assert r.problems == [] and r.message() is None
    # the environment applies underneath when the editor says nothing
    assert resolve().settings.dream_min_sessions == 7


def test_an_empty_string_means_unset(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REVERIE_MODEL", "from-env")
    r = resolve({"model": "", "baseUrl": "", "memoryDir": ""})
    assert r.settings.model == "from-env"
    assert r.settings.base_url is None and r.settings.memory_dir is None
    assert r.problems == []


def test_unknown_keys_are_ignored():
    r = resolve({"noSuchSetting": 1, "watchDebounceMs": 10})
    assert r.settings.watch_debounce_ms == 10 and r.problems == []


def test_invalid_editor_value_falls_back_to_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REVERIE_SLEEP_TIME", "04:30")
    r = resolve({"sleepTime": "25:99", "dreamMinHours": 2})
    assert r.settings.sleep_time == "04:30"  # not the default: the layer below
    assert r.settings.dream_min_hours == 2  # valid neighbours are kept
    [problem] = r.problems
    assert problem.name == "reverie.sleepTime"
    message = r.message()
    assert message is not None
    assert message.startswith('Reverie: invalid setting reverie.sleepTime ("25:99")')
    assert "HH:MM" in message and 'using "04:30"' in message


def test_invalid_environment_value_uses_the_default(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REVERIE_MAX_RETRIES", "many")
    r = resolve({"showNotifications": "nope"})
    assert r.settings.max_retries == 4
    assert r.settings.show_notifications == "onError"
    names = sorted(p.name for p in r.problems)
    assert names == ["REVERIE_MAX_RETRIES", "reverie.showNotifications"]


def test_api_key_is_never_echoed():
    r = resolve({"apiKey": 12345})
    message = r.message()
    assert message is not None and "12345" not in message and "***" in message
    r = resolve({"apiKey": "sk-secret-value", "provider": "bogus"})
    assert "sk-secret-value" not in (r.message() or "")


def test_prices_accept_camel_case_and_keep_model_names():
    r = resolve({"prices": {"gpt-5.5": {"input": 1.25, "cacheRead": 0.125}}})
    price = r.settings.prices["gpt-5.5"]
    assert (price.input, price.cache_read) == (1.25, 0.125)

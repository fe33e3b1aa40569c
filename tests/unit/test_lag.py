"""Target lag parsing and resolution over the DAG (no JVM)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dtcli.errors import ConfigError, ValidationError
from dtcli.planning.lag import TargetLag, parse_target_lag, resolve_lags

# ---------------------------------------------------------------- parsing

@pytest.mark.parametrize("value, seconds, text", [
    ("90 seconds", 90, "90 seconds"),
    ("60 seconds", 60, "1 minute"),
    ("10 minutes", 600, "10 minutes"),
    ("1 minute", 60, "1 minute"),
    ("2 hours", 7200, "2 hours"),
    ("1 hour", 3600, "1 hour"),
    ("60 minutes", 3600, "1 hour"),
    ("1 day", 86400, "1 day"),
    ("3 days", 259200, "3 days"),
    ("90 sec", 90, "90 seconds"),
    ("90 secs", 90, "90 seconds"),
    ("120s", 120, "2 minutes"),
    ("5 min", 300, "5 minutes"),
    ("5 mins", 300, "5 minutes"),
    ("5m", 300, "5 minutes"),
    ("2 hr", 7200, "2 hours"),
    ("2 hrs", 7200, "2 hours"),
    ("2h", 7200, "2 hours"),
    ("1 d", 86400, "1 day"),
    ("10 MINUTES", 600, "10 minutes"),
    ("  10   Minutes \t", 600, "10 minutes"),
    ("90 minutes", 5400, "90 minutes"),
])
def test_parses_time_spans(value, seconds, text):
    lag = parse_target_lag(value)
    assert lag == TargetLag(seconds, text)
    assert not lag.is_downstream


@pytest.mark.parametrize("value", ["downstream", "DOWNSTREAM", " Downstream "])
def test_parses_downstream(value):
    lag = parse_target_lag(value)
    assert lag.is_downstream and lag.seconds is None and lag.text == "downstream"


@pytest.mark.parametrize("value", [
    "ten minutes", "5 fortnights", "", "   ", "10", 10, 600, "-5 minutes", "1.5 hours",
    "10 minutes ago", "minutes", None, True, "down stream",
])
def test_rejects_bad_values(value):
    with pytest.raises(ConfigError) as exc:
        parse_target_lag(value, file="models/orders.yml", line=7)
    err = exc.value
    assert repr(value) in err.message
    assert "10 minutes" in err.hint and "downstream" in err.hint
    assert (err.file, err.line) == ("models/orders.yml", 7)
    assert str(err).startswith("models/orders.yml:7: ")
    assert err.exit_code == 2


@pytest.mark.parametrize("value", ["59 seconds", "30s", "0 minutes", "1 sec"])
def test_rejects_lag_below_one_minute(value):
    with pytest.raises(ConfigError) as exc:
        parse_target_lag(value, file="dt.yml", line=3)
    assert "minimum of 1 minute" in exc.value.message
    assert (exc.value.file, exc.value.line) == ("dt.yml", 3)


@given(st.integers(min_value=60, max_value=10**7))
def test_display_text_round_trips(seconds):
    lag = parse_target_lag(f"{seconds} seconds")
    assert lag.seconds == seconds
    assert parse_target_lag(lag.text) == lag


# ---------------------------------------------------------------- resolution

M = 60
TEN_MIN = parse_target_lag("10 minutes")
FIVE_MIN = parse_target_lag("5 minutes")
DS = parse_target_lag("downstream")


def test_dt1_dt2_both_time_lags():
    # DT2 reads DT1; each keeps its own lag.
    res = resolve_lags({"dt1": FIVE_MIN, "dt2": TEN_MIN}, {"dt2": ["dt1"]})
    assert res.effective_seconds == {"dt1": 5 * M, "dt2": 10 * M}
    assert res.warnings == {}


def test_dt1_downstream_takes_consumer_lag():
    res = resolve_lags({"dt1": DS, "dt2": TEN_MIN}, {"dt2": ["dt1"]})
    assert res.effective_seconds == {"dt1": 10 * M, "dt2": 10 * M}
    assert res.warnings == {}


def test_dt2_downstream_without_consumer_is_never_scheduled():
    res = resolve_lags({"dt1": TEN_MIN, "dt2": DS}, {"dt2": ["dt1"]})
    assert res.effective_seconds == {"dt1": 10 * M, "dt2": None}
    assert list(res.warnings) == ["dt2"]
    (msg,) = res.warnings["dt2"]
    assert "never be refreshed by schedule" in msg
    assert "time target_lag" in msg and "consumer" in msg


def test_both_downstream_neither_scheduled_both_warned():
    res = resolve_lags({"dt1": DS, "dt2": DS}, {"dt2": ["dt1"]})
    assert res.effective_seconds == {"dt1": None, "dt2": None}
    assert set(res.warnings) == {"dt1", "dt2"}


def test_lag_shorter_than_upstream_is_rejected():
    lags = {"report": parse_target_lag("1 minute"), "orders": parse_target_lag("5 minutes"),
            "events": parse_target_lag("1 minute")}
    with pytest.raises(ValidationError) as exc:
        resolve_lags(lags, {"report": ["orders", "events"]}, files={"report": "models/report.sql"})
    err = exc.value
    assert "report" in err.message and "orders" in err.message and "events" not in err.message
    assert "1 minute" in err.message and "5 minutes" in err.message
    assert err.file == "models/report.sql"
    assert "raise" in err.hint and "downstream" in err.hint
    assert err.exit_code == 2


def test_lag_equal_to_or_longer_than_slowest_upstream_is_fine():
    # Snowflake's example: A reads B (5 min) and C (1 min); A must be at least 5 minutes.
    lags = {"a": FIVE_MIN, "b": FIVE_MIN, "c": parse_target_lag("1 minute")}
    res = resolve_lags(lags, {"a": ["b", "c"]})
    assert res.effective_seconds == {"a": 300, "b": 300, "c": 60}


def test_rejection_looks_through_downstream_upstreams():
    # t (1 min) reads d (downstream) which reads u (10 min): t cannot be fresher than u.
    lags = {"u": TEN_MIN, "d": DS, "t": parse_target_lag("1 minute")}
    with pytest.raises(ValidationError) as exc:
        resolve_lags(lags, {"d": ["u"], "t": ["d"]})
    assert exc.value.message.startswith("t has target_lag 1 minute")
    assert "10 minutes of u" in exc.value.message and "through d" in exc.value.message


def test_downstream_upstream_alone_cannot_violate():
    res = resolve_lags({"d": DS, "t": parse_target_lag("1 minute")}, {"t": ["d"]})
    assert res.effective_seconds == {"d": 60, "t": 60}


def test_downstream_chain_resolves_transitively():
    # c (2 h) reads b (downstream) reads a (downstream) reads src (a source, ignored).
    lags = {"a": DS, "b": DS, "c": parse_target_lag("2 hours")}
    res = resolve_lags(lags, {"a": ["src"], "b": ["a"], "c": ["b"]})
    assert res.effective_seconds == {"a": 7200, "b": 7200, "c": 7200}
    assert res.warnings == {}


def test_diamond_takes_shortest_consumer():
    # base (downstream) is read by fast (5 min) and slow (10 min); report (1 h) reads both.
    lags = {"base": DS, "fast": FIVE_MIN, "slow": TEN_MIN, "report": parse_target_lag("1 hour")}
    up = {"fast": ["base"], "slow": ["base"], "report": ["fast", "slow"]}
    res = resolve_lags(lags, up)
    assert res.effective_seconds["base"] == 5 * M


def test_diamond_of_downstream_dts_takes_shortest_through_each_path():
    lags = {"base": DS, "left": DS, "right": DS,
            "l_out": parse_target_lag("30 minutes"), "r_out": parse_target_lag("3 minutes")}
    up = {"left": ["base"], "right": ["base"], "l_out": ["left"], "r_out": ["right"]}
    res = resolve_lags(lags, up)
    assert res.effective_seconds == {"base": 180, "left": 1800, "right": 180,
                                     "l_out": 1800, "r_out": 180}


def test_unknown_upstream_names_are_ignored():
    res = resolve_lags({"a": TEN_MIN}, {"a": ["raw.orders"], "ghost": ["a"]})
    assert res.effective_seconds == {"a": 600}


def test_cycle_of_downstream_dts_terminates():
    # Cycles are the DAG check's to report; resolution must not loop on them.
    res = resolve_lags({"a": DS, "b": DS, "c": TEN_MIN}, {"a": ["b"], "b": ["a"], "c": ["a"]})
    assert res.effective_seconds == {"a": 600, "b": 600, "c": 600}


@st.composite
def dags(draw):
    n = draw(st.integers(min_value=1, max_value=8))
    names = [f"t{i}" for i in range(n)]
    # Edges only from lower to higher index keep it acyclic.
    upstream = {names[j]: [names[i] for i in range(j) if draw(st.booleans())] for j in range(n)}
    lags = {name: draw(st.sampled_from([DS, parse_target_lag("1 minute"), FIVE_MIN, TEN_MIN]))
            for name in names}
    return lags, upstream


@given(dags())
def test_resolution_properties(dag):
    lags, upstream = dag
    try:
        res = resolve_lags(lags, upstream)
    except ValidationError:
        return
    consumers = {n: [c for c, ups in upstream.items() if n in ups] for n in lags}
    for name, lag in lags.items():
        eff = res.effective_seconds[name]
        if not lag.is_downstream:
            assert eff == lag.seconds
            continue
        # A downstream DT refreshes at least as often as every scheduled consumer needs it...
        scheduled = [res.effective_seconds[c] for c in consumers[name]
                     if res.effective_seconds[c] is not None]
        assert eff == (min(scheduled) if scheduled else None)
        assert (name in res.warnings) == (eff is None)
    # ...and every upstream of a scheduled DT is scheduled at least as often.
    for name, ups in upstream.items():
        for u in ups:
            if res.effective_seconds[name] is not None:
                assert res.effective_seconds[u] is not None
                assert res.effective_seconds[u] <= res.effective_seconds[name]

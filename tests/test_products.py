"""Product offers: cleaning, unit normalisation, model words, the TV-format loader."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup import ConfigError, InputError
from neardup.products import (
    TITLE_MODEL_WORD,
    UnitMap,
    clean_text,
    load_tv_json,
    title_model_words,
    value_model_words,
)


@pytest.mark.parametrize("title, expected", [
    ('Samsung 46" Class (45.9" Diag.) LED 1080p 120Hz HDTV UN46ES6580',
     "samsung 46inch class 45.9inch diag. led 1080p 120hz hdtv un46es6580"),
    ("LG 32-Inch 720p 60 Hertz LCD TV 32LK330 - Newegg.com",
     "lg 32inch 720p 60hz lcd tv 32lk330 newegg.com"),
    ("Sharp [LC-60LE650U] 60 inches, 'Aquos'/LED", "sharp lc60le650u 60inch aquos led"),
    ("Panasonic   VIERA\tTC-P50X5", "panasonic viera tcp50x5"),
    ("A west-facing 32 window", "a westfacing 32 window"),  # 'w' only after a number, alone
])
def test_clean_text_hand_checked(title, expected):
    assert clean_text(title) == expected


def test_title_model_words_hand_checked():
    assert title_model_words('Samsung 46" Class (45.9" Diag.) LED 1080p 120Hz HDTV UN46ES6580') \
        == ["46inch", "45.9inch", "1080p", "120hz", "un46es6580"]
    # one product in two shops' wording: the same model words
    a = title_model_words("LG 32-Inch 720p 60 Hertz LCD TV 32LK330 - Newegg.com")
    b = title_model_words('LG 32" 720p 60Hz LCD HDTV (32LK330) - Best Buy')
    assert a == b == ["32inch", "720p", "60hz", "32lk330"]
    assert title_model_words("Plain words only") == []


@given(st.text(alphabet="ab12 ,-x.", max_size=30))
def test_title_model_words_mix_digits_and_other_characters(title):
    for w in title_model_words(title):
        assert TITLE_MODEL_WORD.fullmatch(w)
        assert re.search(r"\d", w) and re.search(r"[^0-9, ]", w)
        assert " " not in w and "," not in w


def test_value_model_words():
    assert value_model_words("46.0 in.") == ["46.0"]
    assert value_model_words("120Hz") == ["120"]
    assert value_model_words("1920 x 1080") == ["1920", "1080"]
    assert value_model_words("Yes") == []


def test_units_are_configuration():
    units = UnitMap({"liter": ("litres", "liters", "l")})
    assert clean_text("Kettle 1.7 Litres, 2200 W", units) == "kettle 1.7liter 2200 w"
    assert clean_text("Kettle 1.7 Litres") == "kettle 1.7 litres"  # not a default unit
    with pytest.raises(ConfigError, match="unit"):
        UnitMap({"bad unit": ("x",)})
    with pytest.raises(ConfigError, match="spellings"):
        UnitMap({"l": "litre"})


def _tv(tmp_path, data, name="tvs.json"):
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


OFFER = {"shop": "bestbuy.com", "url": "u", "modelID": "M1", "title": 'LG 32" TV 32LK330',
         "featuresMap": {"Brand": "LG", "Screen Size": "32 in."}}


def test_load_tv_json_keeps_truth_apart(tmp_path):
    data = {"M1": [OFFER, {**OFFER, "shop": "newegg.com", "title": "LG 32-Inch 32LK330"}],
            "M2": [{**OFFER, "modelID": "M2", "title": "Samsung UN46ES6580"}]}
    offers, labels = load_tv_json(_tv(tmp_path, data))
    assert offers.ids == ["0", "1", "2"] and labels == ["M1", "M1", "M2"]
    assert offers.shops == ["bestbuy.com", "newegg.com", "bestbuy.com"]
    assert offers.attributes[0] == {"Brand": "LG", "Screen Size": "32 in."}
    # the truth is in no column a matcher can read
    for col in (offers.ids, offers.shops, offers.titles, offers.attributes):
        assert "M1" not in json.dumps(col)
    assert offers.skipped.total == 0


@pytest.mark.parametrize("bad, reason, where", [
    ({**OFFER, "title": ""}, "bad_title", "field 'title': expected a non-empty string, got empty"),
    ({k: v for k, v in OFFER.items() if k != "title"}, "bad_title", "got missing"),
    ({**OFFER, "featuresMap": {"Size": ["32"]}}, "bad_attribute_value", "featuresMap.Size"),
    ({**OFFER, "featuresMap": "x"}, "bad_attributes", "field 'featuresMap'"),
    ({**OFFER, "shop": 3}, "bad_shop", "field 'shop'"),
    ("not an offer", "not_object", "expected an object"),
])
def test_load_tv_json_bad_offers_fail_or_are_counted(tmp_path, bad, reason, where):
    p = _tv(tmp_path, {"M1": [OFFER], "M2": [bad, OFFER]})
    with pytest.raises(InputError, match=re.escape(where)) as e:
        load_tv_json(p)
    assert e.value.reason == reason and "modelID 'M2', offer 0" in str(e.value)
    offers, labels = load_tv_json(p, on_error="skip")
    assert len(offers) == 2 and labels == ["M1", "M2"]
    assert offers.ids == ["0", "2"]  # positions in the file, the skipped one included
    assert offers.skipped.to_dict()["by_reason"] == {reason: 1}


def test_load_tv_json_file_errors(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        load_tv_json(tmp_path / "missing.json")
    p = tmp_path / "latin.json"
    p.write_bytes(json.dumps({"M": [{**OFFER, "title": "TV X"}]}).encode().replace(
        b"TV X", "Télé 32LK330".encode("latin-1")))
    with pytest.raises(InputError, match="latin-1") as e:
        load_tv_json(p)
    assert e.value.line == 1
    offers, _ = load_tv_json(p, encoding="latin-1")
    assert offers.titles == ["Télé 32LK330"]
    p.write_text("[1, 2]")
    with pytest.raises(InputError, match="modelID -> \\[offers\\]"):
        load_tv_json(p)
    p.write_text('{"M": [')
    with pytest.raises(InputError, match="malformed JSON"):
        load_tv_json(p)
    p.write_text('{"M": 3}')
    with pytest.raises(InputError, match="expected a list of offers"):
        load_tv_json(p)
    with pytest.raises(InputError, match="no usable offers"):
        load_tv_json(p, on_error="skip")
    with pytest.raises(ConfigError, match="on_error"):
        load_tv_json(p, on_error="ignore")

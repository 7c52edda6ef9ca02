"""Product offers: cleaning, unit normalisation, model words, the TV-format loader."""

from __future__ import annotations

import json
import re

import numpy as np
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


@pytest.mark.parametrize(
    "title, expected",
    [
        (
            'Samsung 46" Class (45.9" Diag.) LED 1080p 120Hz HDTV UN46ES6580',
            "samsung 46inch class 45.9inch diag. led 1080p 120hz hdtv un46es6580",
        ),
        (
            "LG 32-Inch 720p 60 Hertz LCD TV 32LK330 - Newegg.com",
            "lg 32inch 720p 60hz lcd tv 32lk330 newegg.com",
        ),
        ("Sharp [LC-60LE650U] 60 inches, 'Aquos'/LED", "sharp lc60le650u 60inch aquos led"),
        ("Panasonic   VIERA\tTC-P50X5", "panasonic viera tcp50x5"),
        ("A west-facing 32 window", "a westfacing 32 window"),  # 'w' only after a number, alone
        # a unit after the digits that end a model number stays a word: "D7000 w/" is no 7000 W
        ("Nikon D7000 w/ 18-105mm VR Lens, 16.2 MP", "nikon d7000 w 18105mm vr lens 16.2 mp"),
        ("Leica X2 mm-Kit 24 mm", "leica x2 mmkit 24mm"),
    ],
)
def test_clean_text_hand_checked(title, expected):
    assert clean_text(title) == expected


def test_title_model_words_hand_checked():
    assert title_model_words('Samsung 46" Class (45.9" Diag.) LED 1080p 120Hz HDTV UN46ES6580') == [
        "46inch",
        "45.9inch",
        "1080p",
        "120hz",
        "un46es6580",
    ]
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


def test_model_ids_are_model_numbers_not_measurements():
    from neardup.products.modelwords import model_ids

    words = title_model_words(
        'Samsung 46" Class (45.9" Diag.) LED 1080p 120Hz UN46ES6580 2012model'
    )
    assert model_ids(words) == {"un46es6580"}
    assert model_ids(["lc60le650u", "32lk330", "e320vl", "3d", "4k", "x1"]) == {
        "lc60le650u",
        "32lk330",
        "e320vl",
    }
    # dimensions (a resolution, a box) and a number with an undecoded quote sign are not
    assert model_ids(["1920x1080", "2560x1440", "60x40x12", "17\u00e2\u0080\u009d", "d7q14a4"]) == {
        "d7q14a4"
    }


def test_value_model_words():
    assert value_model_words("46.0 in.") == ["46"] == value_model_words("46 inches")
    assert value_model_words("46.50 x 30.25") == ["46.5", "30.25"]
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


OFFER = {
    "shop": "bestbuy.com",
    "url": "u",
    "modelID": "M1",
    "title": 'LG 32" TV 32LK330',
    "featuresMap": {"Brand": "LG", "Screen Size": "32 in."},
}


def test_load_tv_json_keeps_truth_apart(tmp_path):
    data = {
        "M1": [OFFER, {**OFFER, "shop": "newegg.com", "title": "LG 32-Inch 32LK330"}],
        "M2": [{**OFFER, "modelID": "M2", "title": "Samsung UN46ES6580"}],
    }
    offers, labels = load_tv_json(_tv(tmp_path, data))
    assert offers.ids == ["0", "1", "2"] and labels == ["M1", "M1", "M2"]
    assert offers.shops == ["bestbuy.com", "newegg.com", "bestbuy.com"]
    assert offers.attributes[0] == {"Brand": "LG", "Screen Size": "32 in."}
    # the truth is in no column a matcher can read
    for col in (offers.ids, offers.shops, offers.titles, offers.attributes):
        assert "M1" not in json.dumps(col)
    assert offers.skipped.total == 0


@pytest.mark.parametrize(
    "bad, reason, where",
    [
        (
            {**OFFER, "title": ""},
            "bad_title",
            "field 'title': expected a non-empty string, got empty",
        ),
        ({k: v for k, v in OFFER.items() if k != "title"}, "bad_title", "got missing"),
        ({**OFFER, "featuresMap": {"Size": ["32"]}}, "bad_attribute_value", "featuresMap.Size"),
        ({**OFFER, "featuresMap": "x"}, "bad_attributes", "field 'featuresMap'"),
        ({**OFFER, "shop": 3}, "bad_shop", "field 'shop'"),
        ("not an offer", "not_object", "expected an object"),
    ],
)
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
    p.write_bytes(
        json.dumps({"M": [{**OFFER, "title": "TV X"}]})
        .encode()
        .replace(b"TV X", "Télé 32LK330".encode("latin-1"))
    )
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


# ---- candidates --------------------------------------------------------------------------------


def _offers(titles, attrs=None):
    from neardup.products import Offers

    o = Offers()
    for i, t in enumerate(titles):
        o.ids.append(str(i))
        o.shops.append("s")
        o.titles.append(t)
        o.attributes.append((attrs or {}).get(i, {}))
        o.sources.append(f"test:{i}")
    return o


def test_true_pairs_and_candidate_quality_hand_checked():
    from neardup.products.candidates import candidate_quality, true_pairs

    labels = ["a", "b", "a", "a", "c"]  # true pairs: (0,2) (0,3) (2,3)
    left, right = true_pairs(labels)
    assert list(zip(left.tolist(), right.tolist())) == [(0, 2), (0, 3), (2, 3)]
    q = candidate_quality([0, 0, 1], [2, 4, 3], labels)  # one of three candidates is true
    assert (q["candidates"], q["true_found"], q["true_pairs"]) == (3, 1, 3)
    assert q["pc"] == pytest.approx(1 / 3) and q["pq"] == pytest.approx(1 / 3)
    assert q["f1_star"] == pytest.approx(1 / 3) and q["fraction"] == pytest.approx(3 / 10)
    assert candidate_quality([], [], labels)["f1_star"] == 0.0


def test_model_word_sets_and_lsh_candidates_against_brute_force():
    from neardup.products.candidates import lsh_candidates, model_word_sets

    titles = [
        'LG 32" 720p 32LK330',
        "LG 32-Inch 720p TV (32LK330)",
        "Samsung UN46ES6580 1080p",
        "Samsung 46in UN46ES6580 1080p",
        "A plain title",
        "Sony KDL40 40inch 240hz",
        "Another plain title",
    ]
    offers = _offers(titles, {2: {"Size": "46 in."}, 3: {"Size": "46.0"}})
    sets = model_word_sets(offers, attributes=True)
    s = [set(sets[i].tolist()) for i in range(len(titles))]
    assert s[0] == s[1] and len(s[0]) == 3  # 32inch, 720p, 32lk330
    assert s[4] == s[6] == set()
    assert len(s[2] & s[3]) == 3  # un46es6580, 1080p and the value word v:46 ("46 in." = "46.0")
    assert len(model_word_sets(offers)[2]) == 2
    # brands become one element each; words in more than max_df of the offers are left out
    branded = model_word_sets(
        offers, brands=["lg", "lg", "samsung", "samsung", "", "sony", ""], max_df=2 / 7
    )
    b = [set(branded[i].tolist()) for i in range(len(titles))]
    assert b[0] == b[1] and len(b[0]) == 4  # 32inch, 720p, 32lk330, b:lg
    assert len(b[2] & b[3]) == 3 and len(b[2]) == 3  # un46es6580, 1080p, b:samsung
    assert b[4] == set() and len(b[5]) == 4  # kdl40, 40inch, 240hz, b:sony
    rare = model_word_sets(
        offers, brands=["lg", "lg", "samsung", "samsung", "", "sony", ""], max_df=1 / 7
    )  # every word two offers share is now too common
    assert [len(rare[i]) for i in range(7)] == [1, 1, 1, 2, 0, 4, 0]  # 3 keeps "46in"
    left, right = lsh_candidates(sets, bands=64, rows=1)
    got = set(zip(left.tolist(), right.tolist()))
    assert (0, 1) in got  # identical sets are always candidates
    share = {(a, b) for a in range(7) for b in range(a + 1, 7) if s[a] & s[b]}
    assert got <= share  # never a pair without a shared model word
    assert not any(4 in p or 6 in p for p in got)  # no model words, never a candidate


def test_blocking_keys_hand_checked():
    from neardup.products.candidates import (
        blocking_candidates,
        learn_brands,
        main_unit,
        offer_brands,
    )

    titles = [
        'Samsung 55" LED UN55ES8000FXZA - Best Buy',  # 0
        "Samsung UN55ES8000 55-Inch 1080p 3D",  # 1: prefix of 0's model number
        'Sharp - AQUOS / 60" Class / LED / 1080p',  # 2: no model number
        'SHARP AQUOS 60" 1080p LC-60LE835U',  # 3: same brand and size as 2
        'TV Sharp 32" 720p LC-32LE700',  # 4: brand not first
        'Vizio 32" E320VL',  # 5
        "VIZIO E320VL 32-inch",  # 6: same model number as 5
        "Plain words",
    ]  # 7
    offers = _offers(
        titles, {0: {"Brand": "Samsung"}, 2: {"brand": "Sharp"}, 5: {"Manufacturer": "VIZIO Inc."}}
    )
    assert learn_brands(offers) == {"samsung", "sharp", "vizio"}
    assert offer_brands(offers, learn_brands(offers)) == [
        "samsung",
        "samsung",
        "sharp",
        "sharp",
        "sharp",
        "vizio",
        "vizio",
        "plain",
    ]
    assert main_unit(offers) == "inch"
    left, right, stats = blocking_candidates(offers, max_df=2, prefix_len=7)
    got = set(zip(left.tolist(), right.tolist()))
    assert (5, 6) in got  # rare shared model word e320vl
    assert (0, 1) in got  # prefix un55es8 of un55es8000fxza and un55es8000
    assert (2, 3) in got  # sharp + 60inch
    assert (2, 4) not in got and (3, 4) not in got  # sharp, but 32inch
    assert not any(7 in p for p in got)
    assert set(stats) == {"rare", "prefix", "brand_unit"}
    assert np.all(left < right) and len(got) == len(left)
    # a key shared by more offers than the cap pairs nobody; the unit key can be turned off
    l2, _, st2 = blocking_candidates(offers, max_df=2, group_cap=1)
    assert len(l2) == 0 and st2 == {"rare": 0, "prefix": 0, "brand_unit": 0}
    _, _, st3 = blocking_candidates(offers, key_unit=None)
    assert "brand_unit" not in st3

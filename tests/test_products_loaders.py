"""The generic offers loader (JSON, JSONL, CSV; one file per shop), and ground-truth files."""

from __future__ import annotations

import gzip
import json

import pytest

from neardup import ConfigError, InputError
from neardup.products.loaders import labels_from_pairs, load_offers, load_truth_pairs


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_jsonl_per_shop_files(tmp_path):
    a = _jsonl(
        tmp_path / "alpha.jsonl",
        [
            {
                "id": 1,
                "title": "Lumo 46in LM46",
                "attributes": {"Weight": "12.5 lbs", "Ports": 3},
                "description": "A television",
            },
            {"title": "Lumo 32in LM32", "attributes": {}},  # no id: file:line
        ],
    )
    b = _jsonl(
        tmp_path / "beta.jsonl",
        [
            {"id": "x", "title": "Lumo - 46in", "featuresMap": {"Brand": "Lumo"}, "shop": "Beta"},
        ],
    )
    offers, labels = load_offers([a, b])
    assert labels is None
    assert offers.ids == ["1", "alpha:2", "x"]
    assert offers.shops == ["alpha", "alpha", "Beta"]  # the file's name unless a shop field
    assert offers.attributes == [{"Weight": "12.5 lbs", "Ports": "3"}, {}, {"Brand": "Lumo"}]
    assert offers.descriptions == ["A television", "", ""]
    assert offers.sources[0] == f"{a}:1" and offers.skipped.total == 0


def test_csv_with_attribute_columns_and_truth_column(tmp_path):
    p = tmp_path / "shop.csv"
    p.write_text(
        "id,title,model,Weight,Colour\n"
        "a1,Lumo 46in LM46,LM46,12.5 lbs,\n"
        'a2,"Lumo, 32in LM32",LM32,9 lbs,black\n'
    )
    offers, labels = load_offers(p, truth_field="model")
    assert labels == ["LM46", "LM32"]
    assert offers.titles[1] == "Lumo, 32in LM32"
    # the truth column is never an attribute; empty cells are left out
    assert offers.attributes == [{"Weight": "12.5 lbs"}, {"Weight": "9 lbs", "Colour": "black"}]
    offers, _ = load_offers(p, attribute_columns=["Colour"])
    assert offers.attributes == [{}, {"Colour": "black"}]
    with pytest.raises(InputError, match="no column"):
        load_offers(p, attribute_columns=["Size"])


def test_json_list_and_gzip_and_tv_format(tmp_path):
    p = tmp_path / "offers.json.gz"
    p.write_bytes(
        gzip.compress(
            json.dumps([{"id": "a", "title": "T 1"}, {"id": "b", "title": "T 2"}]).encode()
        )
    )
    offers, _ = load_offers(p)
    assert offers.ids == ["a", "b"] and offers.sources[1].endswith(":record 1")
    tv = tmp_path / "tv.json"
    tv.write_text(
        json.dumps(
            {
                "M1": [
                    {"shop": "s1", "title": "TV M1", "featuresMap": {}},
                    {"shop": "s2", "title": "TV M1 b", "featuresMap": {}},
                ],
                "M2": [{"shop": "s1", "title": "TV M2", "featuresMap": {}}],
            }
        )
    )
    offers, labels = load_offers(tv)
    assert labels == ["M1", "M1", "M2"] and offers.shops == ["s1", "s2", "s1"]


def test_bad_records_name_file_line_and_field(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text(
        '{"id": 1, "title": "ok 1"}\n'
        '{"id": 2, "title": ""}\n'
        '{"id": 3, "title": "x", "attributes": {"Size": [46]}}\n'
        "not json\n"
        '{"id": 5, "title": "y", "attributes": "Size: 46"}\n'
    )
    with pytest.raises(InputError, match=r"bad.jsonl:2: field 'title': expected a non-empty"):
        load_offers(p)
    offers, _ = load_offers(p, on_error="skip")
    assert offers.ids == ["1"]
    assert offers.skipped.counts == {
        "bad_title": 1,
        "bad_attribute_value": 1,
        "malformed_json": 1,
        "bad_attributes": 1,
    }
    assert any("field 'attributes.Size'" in e for e in offers.skipped.examples)
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("id,title\n1,a\n2,b,extra\n")
    with pytest.raises(InputError, match=r"bad.csv:3: 3 fields where the header has 2"):
        load_offers(bad_csv)


def test_repeated_ids_across_files(tmp_path):
    a = _jsonl(tmp_path / "alpha.jsonl", [{"id": 1, "title": "A"}])
    b = _jsonl(tmp_path / "beta.jsonl", [{"id": 1, "title": "B"}])
    with pytest.raises(InputError, match=r"id '1' repeats .*alpha.jsonl:1.*qualify"):
        load_offers([a, b])
    offers, _ = load_offers([a, b], qualify_ids=True)
    assert offers.ids == ["alpha/1", "beta/1"]
    offers, _ = load_offers([a, b], on_error="skip")
    assert offers.ids == ["1"] and offers.skipped.counts == {"duplicate_id": 1}


def test_mixed_encodings_line_by_line(tmp_path):
    p = tmp_path / "mixed.jsonl"
    p.write_bytes('{"title": "Télé 46"}\n'.encode() + '{"title": "Télé 32"}\n'.encode("latin-1"))
    offers, _ = load_offers(p)
    assert offers.titles == ["Télé 46", "Télé 32"] and offers.decoded_latin1 == 1
    with pytest.raises(InputError, match=r"mixed.jsonl:2: undecodable bytes"):
        load_offers(p, encoding="utf-8")
    offers, _ = load_offers(p, encoding="latin-1")
    assert offers.titles[1] == "Télé 32"


def test_missing_truth_and_bad_parameters(tmp_path):
    p = _jsonl(tmp_path / "x.jsonl", [{"title": "A", "model": "m"}, {"title": "B"}])
    with pytest.raises(InputError, match=r"x.jsonl:2: field 'model': the truth is missing"):
        load_offers(p, truth_field="model")
    with pytest.raises(ConfigError, match="format"):
        load_offers(p, format="xml")
    with pytest.raises(InputError, match="cannot read"):
        load_offers(tmp_path / "missing.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match="no usable offers"):
        load_offers(empty)


def test_truth_pairs_and_labels(tmp_path):
    a = _jsonl(tmp_path / "a.jsonl", [{"id": i, "title": f"t{i}"} for i in range(5)])
    offers, _ = load_offers(a)
    pairs = tmp_path / "truth.csv"
    pairs.write_text("left,right\n0,1\n1,0\n2,2\n3,4\n")
    left, right, counts = load_truth_pairs(pairs, offers)
    assert list(zip(left.tolist(), right.tolist())) == [(0, 1), (3, 4)]
    assert counts == {"self_pairs": 1, "repeated": 1, "unknown_id": 0}
    headless = tmp_path / "h.csv"
    headless.write_text("0,1\n1,2\n")  # the first row names two known ids: not a header
    left, right, _ = load_truth_pairs(headless, offers)
    assert labels_from_pairs(5, left, right) == ["c0", "c0", "c0", "c3", "c4"]
    js = tmp_path / "t.jsonl"
    js.write_text('{"a": 0, "b": 4}\n[1, 9]\n')
    with pytest.raises(InputError, match=r"t.jsonl:2: unknown id '9'"):
        load_truth_pairs(js, offers)
    left, right, counts = load_truth_pairs(js, offers, on_error="skip")
    assert left.tolist() == [0] and right.tolist() == [4] and counts["unknown_id"] == 1


def test_any_separator_flat_records_and_a_stated_brand(tmp_path):
    """CSV with '|' or '#' (found from the header) and TSV; flat JSONL records whose other
    fields are attributes; a brand column is the offer's brand rather than a title guess."""
    from neardup.products.candidates import offer_brands

    rows = [
        ("id", "title", "brand", "price"),
        ("1", "Acme X100 camera", "Zeta", "99.5"),
        ("2", "Zeta X100 camera body", "Zeta", ""),
    ]
    for sep, name in (("|", "a.csv"), ("#", "b.csv"), ("\t", "c.tsv"), (";", "d.csv")):
        (tmp_path / name).write_text("\n".join(sep.join(r) for r in rows) + "\n")
        offers, _ = load_offers(tmp_path / name)
        assert offers.titles == ["Acme X100 camera", "Zeta X100 camera body"], name
        assert offers.attributes == [{"brand": "Zeta", "price": "99.5"}, {"brand": "Zeta"}]
        assert offer_brands(offers, frozenset()) == ["zeta", "zeta"]  # not "acme"
    bad = tmp_path / "e.csv"
    bad.write_text("id;title\n1;x\n")
    with pytest.raises(InputError, match="separator ','"):
        load_offers(bad, sep=",")
    with pytest.raises(ConfigError, match="sep="):
        load_offers(bad, sep='"')
    flat = tmp_path / "f.jsonl"
    flat.write_text(
        json.dumps(
            {
                "id": "a",
                "title": "T 1",
                "brand": "Zeta",
                "modelno": "X1",
                "price": 12.5,
                "tags": ["hd", "wifi"],
                "note": None,
                "nested": {"x": 1},
            }
        )
        + "\n"
        + json.dumps(
            {
                "id": "b",
                "title": "T 2",
                "attributes": {"k": "v"},
                "brand": "ignored: the nested map is the attributes",
            }
        )
        + "\n"
    )
    offers, _ = load_offers(flat)
    assert offers.attributes == [
        {"brand": "Zeta", "modelno": "X1", "price": "12.5", "tags": "hd, wifi"},
        {"k": "v"},
    ]
    assert offers.unused_fields == {"brand": 1}  # beside the nested map: reported, not read
    cols = tmp_path / "g.csv"
    cols.write_text("id,title,brand,colour,price\n1,T 1,Zeta,red,\n2,T 2,Acme,,5\n")
    offers, _ = load_offers(cols, attribute_columns=["brand"])
    assert offers.unused_fields == {"colour": 1, "price": 1}


def test_truth_pairs_any_separator_and_qualified_ids(tmp_path):
    (tmp_path / "shop-a.jsonl").write_text(json.dumps({"id": "650", "title": "T 1"}) + "\n")
    (tmp_path / "shop-b.jsonl").write_text(json.dumps({"id": "651", "title": "T 2"}) + "\n")
    offers, _ = load_offers(
        [tmp_path / "shop-a.jsonl", tmp_path / "shop-b.jsonl"], qualify_ids=True
    )
    good = tmp_path / "truth.csv"
    good.write_text("left#right\nshop-a/650#shop-b/651\n")
    left, right, _ = load_truth_pairs(good, offers)
    assert left.tolist() == [0] and right.tolist() == [1]
    bare = tmp_path / "bare.csv"
    bare.write_text("650,651\n650,651\n")
    with pytest.raises(InputError, match="write it as FILE/ID, such as 'shop-a/650'"):
        load_truth_pairs(bare, offers)


@pytest.mark.parametrize("packed", ["folder", "tar.gz"])
def test_pages_of_a_folder_or_an_archive(tmp_path, packed):
    """One JSON object per page, <source>/<n>.json: the folder is the shop, the id
    <source>//<n>, "<page title>" the title, the other keys attributes (lists joined)."""
    import tarfile

    pages = {
        "shop.one/0.json": {
            "<page title>": 'Acme X100 monitor 24"',
            "screen size": '24"',
            "ports": ["HDMI", "VGA"],
        },
        "shop.one/1.json": {"<page title>": "Zeta Q7 monitor", "shop": "Product Name» Show All"},
        "other.shop/12.json": {"<page title>": "ACME X100 24 inch", "brand": "Acme", "id": "7"},
        "other.shop/.hidden.json": {"<page title>": "not a page"},
    }
    root = tmp_path / "specs"
    for name, obj in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(obj))
    src = root
    if packed == "tar.gz":
        src = tmp_path / "specs.tar.gz"
        with tarfile.open(src, "w:gz") as tar:
            tar.add(root, arcname="2013_specs")
    offers, _ = load_offers(src)
    assert offers.formats == {"pages"}
    assert offers.ids == ["other.shop//12", "shop.one//0", "shop.one//1"]
    assert offers.shops == ["other.shop", "shop.one", "shop.one"]
    assert offers.titles[1] == 'Acme X100 monitor 24"'
    # a page's own "id" and "shop" keys are attributes: its place names it
    assert offers.attributes == [
        {"brand": "Acme", "page id": "7"},
        {"screen size": '24"', "ports": "HDMI, VGA"},
        {"page shop": "Product Name» Show All"},
    ]
    (root / "shop.one" / "2.json").write_text("{not json")
    if packed == "folder":
        with pytest.raises(InputError, match="shop.one/2.json: malformed JSON"):
            load_offers(root)
        offers, _ = load_offers(root, on_error="skip")
        assert len(offers) == 3 and offers.skipped.total == 1

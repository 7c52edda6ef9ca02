"""``neardup products dedup|eval``: duplicate product offers across web shops, and a bootstrap
study of the matcher against a ground truth."""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError
from .common import (
    EXIT_OK,
    ON_ERROR_HELP,
    Rows,
    add_output_args,
    add_running_args,
    print_summary,
    skipped_text,
)

#: The top-level commands of this module and their help.
COMMANDS = {"products": "duplicate product offers across web shops"}


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``products`` and its sub-commands to the CLI's sub-parsers."""
    pr = sub.add_parser(
        "products",
        help=COMMANDS["products"],
        description="Duplicate product offers across web shops.",
    )
    psub = pr.add_subparsers(
        dest="products_command",
        required=True,
        metavar="COMMAND",
        help="dedup to find duplicates, eval to measure the matcher",
    )
    pd = psub.add_parser(
        "dedup",
        help="find duplicate offers; write pairs with evidence and clusters",
        description="Find duplicate offers and write pairs.jsonl "
        "(with the evidence for each pair), clusters.csv and summary.json.",
    )
    _add_offer_input_args(pd)
    add_output_args(pd, help="output directory for pairs.jsonl, clusters.csv and summary.json")
    pd.add_argument(
        "--model",
        default=None,
        metavar="PATH",
        help="a matcher saved by "
        "`neardup products eval --save-model` (default: a training-free score, the "
        "larger of a rule score and the title cosine)",
    )
    pd.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="S",
        help="pair score from which two offers are duplicates, one for every "
        "pair (default: the model's tuned thresholds, one for pairs where only one "
        "offer names a model number and one for the others; 0.45 for the "
        "training-free score)",
    )
    _add_blocking_args(pd)
    pd.add_argument(
        "--one-to-one",
        action="store_true",
        help="each offer matches at most one offer of each other shop (clean "
        "catalogues without duplicates of their own), best scores first",
    )
    pd.add_argument(
        "--truth",
        default=None,
        metavar="FILE",
        help="a ground-truth file "
        "(matching id pairs, entity_id,id rows, or id,id,label rows; CSV or "
        "JSONL): the summary adds the pairs' precision, recall and F1 on the "
        "pairs whose truth is known, and the candidates' pair completeness",
    )
    _add_truth_file_args(pd)
    pd.set_defaults(func=cmd_products_dedup, linear_algebra=True)
    pe = psub.add_parser(
        "eval",
        help="bootstrap study against a ground truth: tables and plots",
        description="Run a bootstrap study: thresholds tuned "
        "on each training part, figures on the test parts; writes report.md, "
        "CSV and markdown tables and PNG plots.",
    )
    _add_offer_input_args(pe)
    add_output_args(
        pe,
        help="directory for report.md, the CSV and markdown tables and the PNG plots",
        metavar="REPORTDIR",
    )
    pe.add_argument(
        "--truth",
        dest="truth_file",
        default=None,
        metavar="FILE",
        help="a ground-truth file, as products dedup --truth takes it: matching id "
        "pairs (complete), entity_id,id rows or id,id,label rows (partial: only "
        "known pairs are trained on and scored); CSV or JSONL",
    )
    pe.add_argument(
        "--truth-field",
        default=None,
        metavar="COLUMN",
        help="or the truth as a "
        "label field or column of the offers (offers with equal labels are "
        "duplicates; the TV format's modelID is read by default); never used as a "
        "feature",
    )
    _add_truth_file_args(pe)
    pe.add_argument(
        "--bootstraps",
        type=int,
        default=5,
        metavar="N",
        help="bootstrap rounds, each with its own training and test part (default: 5)",
    )
    pe.add_argument(
        "--seed",
        type=int,
        default=0,
        help="random seed of the bootstrap samples and of the MinHash functions (default: 0)",
    )
    pe.add_argument(
        "--model-seed",
        type=int,
        default=0,
        metavar="N",
        help="random state of the matcher's random forest (default: 0); a mean "
        "F1 moves with it about as much as with --seed, so compare changes "
        "to the matcher over several",
    )
    _add_blocking_args(pe, study=True)
    pe.add_argument(
        "--save-model",
        default=None,
        metavar="PATH",
        help="also fit the matcher "
        "on all labelled candidate pairs of the default blocking and save it for "
        "`products dedup --model`",
    )
    pe.set_defaults(func=cmd_products_eval, linear_algebra=True)
    for p in (pd, pe):
        mode = p.add_mutually_exclusive_group()
        mode.add_argument(
            "--link",
            action="store_true",
            help="pairs only across shops (sources): two catalogues, or a new "
            "feed against a master catalogue; pairs within one shop are "
            "neither compared nor counted",
        )
        mode.add_argument(
            "--dedup",
            dest="link",
            action="store_false",
            help="pairs within and across shops (default)",
        )


def _add_blocking_args(p: argparse.ArgumentParser, study: bool = False) -> None:
    """``--blocking`` and ``--candidates-per-offer``; ``study``: as ``products eval`` sweeps
    them."""
    sweep = (
        "; the study sweeps budgets of 0.5 to 40 candidate pairs per offer (tokens) or "
        "every banding of --num-perm (lsh)"
        if study
        else ""
    )
    p.add_argument(
        "--blocking",
        choices=["tokens", "lsh"],
        default="tokens",
        help="how candidate pairs are found: tokens (default) keeps the pairs that "
        "share the rarest title words and model words, a budget per offer; "
        "lsh: MinHash LSH over title model words (--num-perm, --bands, "
        "--rows, --max-df)" + sweep,
    )
    p.add_argument(
        "--candidates-per-offer",
        type=float,
        default=10.0,
        metavar="C",
        help="with --blocking tokens: candidate pairs per offer on average, at "
        "most (default: 10)" + ("; the budget the summary reports" if study else ""),
    )


def _add_truth_file_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--truth-sep",
        default=None,
        metavar="CHAR",
        help="the truth file's CSV separator (default: found from its first line)",
    )
    p.add_argument(
        "--truth-format",
        default="auto",
        choices=["auto", "pairs", "entities", "labelled_pairs"],
        help="the truth file's shape (default: from its header, else from which "
        "columns hold known ids)",
    )


def _load_truth_from_args(a: argparse.Namespace, offers, path: str):
    from ..products.truth import load_truth

    return load_truth(path, offers, on_error=a.on_error, sep=a.truth_sep, format=a.truth_format)


def _add_offer_input_args(p: argparse.ArgumentParser) -> None:
    p.set_defaults(trailing="inputs")  # OFFERS after the options too (see cli.main)
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="OFFERS",
        help="offer files (JSON, JSONL, CSV or TSV, optionally .gz; one per shop is "
        "fine), the TV format (an object modelID -> [offers]), or folders or "
        ".tar.gz archives of one JSON object per page (<shop>/<n>.json)",
    )
    p.add_argument(
        "--format",
        dest="input_format",
        default="auto",
        choices=["auto", "json", "jsonl", "csv", "tv", "pages"],
        help="input format (default: from the file name and content; a folder or "
        ".tar/.tar.gz of <shop>/<n>.json pages: pages)",
    )
    p.add_argument(
        "--id-field",
        default="id",
        metavar="FIELD",
        help="id field or column (default: id; missing: file:line)",
    )
    p.add_argument(
        "--title-field",
        default="title",
        metavar="FIELD",
        help="title field or column (default: title)",
    )
    p.add_argument(
        "--description-field",
        default="description",
        metavar="FIELD",
        help="description field or column (default: description; missing: empty)",
    )
    p.add_argument(
        "--shop-field",
        default="shop",
        metavar="FIELD",
        help="shop field or column (default: shop; missing: the file's name)",
    )
    p.add_argument(
        "--attributes-field",
        default="attributes",
        metavar="FIELD",
        help="JSON and JSONL: the field holding the attribute map (default: "
        "attributes; featuresMap is also read)",
    )
    p.add_argument(
        "--attribute-columns",
        nargs="+",
        default=None,
        metavar="COLUMN",
        help="CSV: the attribute columns (default: every other column)",
    )
    p.add_argument(
        "--sep",
        default=None,
        metavar="CHAR",
        help="CSV separator (default: found from the header line: , ; | # or TAB; "
        "TAB for .tsv files); write a TAB as $'\\t'",
    )
    p.add_argument(
        "--encoding",
        default="auto",
        help="text encoding: auto (default: UTF-8, and latin-1 for lines that are "
        "not UTF-8) or a codec name such as cp1252, used strictly",
    )
    p.add_argument("--on-error", choices=["fail", "skip"], default="fail", help=ON_ERROR_HELP)
    p.add_argument(
        "--qualify-ids",
        action="store_true",
        help="prefix ids with the file name, "
        "for shops whose ids collide (a truth of bare id pairs for two files is "
        "then read as first file, second file)",
    )
    p.add_argument(
        "--num-perm",
        type=int,
        default=240,
        metavar="K",
        help="MinHash values per offer's model-word set, for LSH blocking (default: 240)",
    )
    p.add_argument(
        "--bands",
        type=int,
        default=60,
        metavar="B",
        help="LSH bands; offers that agree on a whole band become a candidate pair "
        "(default: 60; bands x rows <= --num-perm)",
    )
    p.add_argument(
        "--rows", type=int, default=4, metavar="R", help="MinHash values per LSH band (default: 4)"
    )
    p.add_argument(
        "--max-df",
        type=float,
        default=0.2,
        metavar="F",
        help="title model words carried by more than this fraction of the offers "
        "(e.g. 1080p) are left out of the LSH sets (default: 0.2)",
    )
    for role, what in (
        ("brand", "the offer's brand"),
        ("model", "its model number"),
        ("price", "its price"),
        ("category", "its category"),
    ):
        p.add_argument(
            f"--{role}-field",
            default=None,
            metavar="FIELD",
            help=f"the field or column that holds {what} (default: found among "
            "the attributes by name)"
            if role in ("brand", "model")
            else f"the field or column that holds {what}",
        )
    p.add_argument(
        "--columns",
        default=None,
        metavar="FILE",
        help='the roles of the fields in a JSON file, such as {"title": '
        '"name", "brand": "manufacturer", "model": "mpn"} '
        "(roles: id, title, description, shop, attributes, brand, model, "
        "price, category); options given on the command line win",
    )
    add_running_args(p, quiet_short=False)


#: ``--columns`` roles read by the loader's own options (each option's default is the role's
#: name: ``--title-field title``)
_FIELD_ROLES = {
    "id": "id_field",
    "title": "title_field",
    "description": "description_field",
    "shop": "shop_field",
    "attributes": "attributes_field",
}


def _roles_from_args(a: argparse.Namespace) -> dict[str, str]:
    """The field roles of ``--columns FILE`` and the ``--ROLE-field`` options (these win): the
    loader's options (id, title, ...) are set on ``a``; the rest are returned."""
    import json

    from ..products.loaders import ROLE_ATTRIBUTES

    given = {}
    if a.columns:
        try:
            with open(a.columns, encoding="utf-8") as f:
                given = json.load(f)
        except OSError as e:
            raise ConfigError(f"{a.columns}: cannot read it: {e.strerror or e}") from e
        except json.JSONDecodeError as e:
            raise ConfigError(f"{a.columns}: not JSON: {e}") from e
        if not isinstance(given, dict):
            raise ConfigError(f"{a.columns}: expected an object of role -> field name")
        for role, name in given.items():
            if role not in _FIELD_ROLES and role not in ROLE_ATTRIBUTES:
                raise ConfigError(
                    f"{a.columns}: unknown role {role!r} (roles: "
                    f"{', '.join([*_FIELD_ROLES, *ROLE_ATTRIBUTES])})"
                )
            if not isinstance(name, str) or not name:
                raise ConfigError(f"{a.columns}: the field of {role!r} must be a non-empty name")
    for role, attr in _FIELD_ROLES.items():
        if role in given and getattr(a, attr) == role:  # the option was left at its default
            setattr(a, attr, given[role])
    roles = {r: given[r] for r in ROLE_ATTRIBUTES if r in given}
    for role in ROLE_ATTRIBUTES:
        value = getattr(a, f"{role}_field", None)
        if value:
            roles[role] = value
    return roles


def _load_offers_from_args(a: argparse.Namespace, truth_field: str | None = None):
    from ..products.loaders import load_offers

    roles = _roles_from_args(a)
    return load_offers(
        a.inputs,
        format=a.input_format,
        id_field=a.id_field,
        title_field=a.title_field,
        description_field=a.description_field,
        shop_field=a.shop_field,
        attributes_field=a.attributes_field,
        attribute_columns=a.attribute_columns,
        truth_field=truth_field,
        encoding=a.encoding,
        on_error=a.on_error,
        qualify_ids=a.qualify_ids,
        sep=a.sep,
        roles=roles,
    )


def cmd_products_dedup(a: argparse.Namespace) -> int:
    from ..jobs.products import dedup_offers

    offers, _ = _load_offers_from_args(a)
    truth = _load_truth_from_args(a, offers, a.truth) if a.truth else None
    s = dedup_offers(
        offers,
        a.output,
        model=a.model,
        threshold=a.threshold,
        num_perm=a.num_perm,
        bands=a.bands,
        rows=a.rows,
        max_df=a.max_df,
        link=a.link,
        one_to_one=a.one_to_one,
        blocking=a.blocking,
        per_offer=a.candidates_per_offer,
        truth=truth,
    )
    print_summary(
        a,
        s,
        "neardup products dedup",
        lambda: [
            (
                "offers",
                f"{s['offers']:,}  " + ", ".join(f"{k} {v:,}" for k, v in s["shops"].items()),
            ),
            ("skipped", skipped_text(s["skipped"])),
            ("unused fields", _unused_text(s["unused_fields"])),
            ("mode", _mode_text(s)),
            (
                "candidates",
                f"{s['candidates']:,}  ({s['fraction_of_comparisons']:.4f} of all "
                f"pairs; {_blocking_text(s['blocking'])})",
            ),
            (
                "duplicates",
                f"{s['duplicate_pairs']:,} pairs in {s['clusters']:,} clusters "
                f"({s['offers_in_clusters']:,} offers, largest "
                f"{s['largest_cluster']})",
            ),
            ("matcher", f"{s['matcher']}, threshold {_threshold_text(s)}"),
            *(_quality_rows(s["quality"]) if "quality" in s else []),
            ("time", f"{s['seconds']:.2f} s"),
            ("outputs", str(a.output).rstrip("/") + "/  pairs.jsonl, clusters.csv, summary.json"),
        ],
    )
    return EXIT_OK


def cmd_products_eval(a: argparse.Namespace) -> int:
    from ..jobs.products import evaluate_offers
    from ..products.study import StudyConfig

    if a.truth_field and a.truth_file:
        raise ConfigError("give the truth as --truth FILE or --truth-field COLUMN, not both")
    # the TV format carries its truth (modelID) and returns it whatever --truth-field says
    offers, labels = _load_offers_from_args(a, truth_field=a.truth_field)
    if a.truth_file:
        labels = _load_truth_from_args(a, offers, a.truth_file)
    if labels is None:
        raise ConfigError(
            "no ground truth: give --truth FILE (matching id pairs, entity ids or "
            "labelled pairs) or --truth-field COLUMN (a label per offer, such as "
            "a model id)"
        )
    cfg = StudyConfig(
        bootstraps=a.bootstraps,
        seed=a.seed,
        model_seed=a.model_seed,
        num_perm=a.num_perm,
        bands=a.bands,
        rows=a.rows,
        max_df=a.max_df,
        link=a.link,
        blocking=a.blocking,
        per_offer=a.candidates_per_offer,
    )
    say = None if a.quiet or a.json else (lambda m: print(m, file=sys.stderr))
    s = evaluate_offers(
        offers,
        labels if a.truth_file else list(labels),
        a.output,
        cfg,
        save_model_to=a.save_model,
        progress=say,
    )
    print_summary(
        a,
        s,
        f"neardup products eval ({a.bootstraps} bootstraps, test sets)",
        lambda: _eval_rows(s),
        json_default=float,
    )
    return EXIT_OK


def _threshold_text(s: dict) -> str:
    text = f"{s['threshold']:.3f}"
    if "threshold_one_sided" in s:  # a trained model's own threshold for one-sided pairs
        one = s["threshold_one_sided"]
        text += (
            f" ({one:.3f} where only one offer names a model number)"
            if one is not None
            else " (none kept where only one offer names a model number)"
        )
    return text


def _mode_text(s: dict) -> str:
    if s["mode"] != "link":
        text = "dedup: pairs within and across shops"
    elif "candidates_within_one_source_left_out" in s:
        text = (
            f"link: pairs across shops only ({s['candidates_within_one_source_left_out']:,}"
            " candidates within one shop left out)"
        )
    else:
        text = "link: pairs across shops only"
    return text + ("; one-to-one" if s["one_to_one"] else "")


def _blocking_text(b: dict) -> str:
    if b["method"] == "lsh":
        return f"LSH over model words, {b['bands']} bands x {b['rows']} rows"
    text = (
        f"token blocking, {b['candidates_per_offer']:.1f} per offer, blocks of up to "
        f"{b['max_block']:,} offers"
    )
    helped = b.get("fallback_offers", 0)
    if helped:
        text += (
            f"; {helped:,} offers whose shared words are all too common compared with "
            "the offers of their rarest word"
        )
    alone = b.get("offers_without_candidates", 0)
    if alone:
        text += (
            f"; {alone:,} offers in no candidate pair (they share no word with an offer "
            "they may be paired with)"
        )
    return text


def _unused_text(unused: dict) -> str:
    """The fields left unread, most common first (with how many offers had each)."""
    if not unused:
        return "none"
    top = sorted(unused.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{k} ({v:,})" for k, v in top[:8])
    return text + (f", and {len(top) - 8} more" if len(top) > 8 else "")


def _num(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None or v != v else f"{v:.{digits}f}"


def _truth_text(t: dict) -> str:
    shape = {
        "pairs": "matching pairs",
        "entities": "entity ids",
        "labelled_pairs": "labelled pairs",
    }[t["shape"]]
    neg = "all other pairs of labelled offers" if t["negatives"] == "complete" else "listed"
    return (
        f"{shape}: {t['labelled_offers']:,} of {t['offers']:,} offers labelled, "
        f"{t['positive_pairs']:,} matching and {t['negative_pairs']:,} non-matching pairs "
        f"known (non-matches: {neg})" + _by_file_text(t.get("ids_by_file"))
    )


def _by_file_text(by_file: dict | None) -> str:
    if not by_file:
        return ""
    return "; ids read as " + ", ".join(f"{f}/ID in {c}" for c, f in by_file.items())


def _quality_rows(q: dict) -> Rows:
    """The dedup summary's rows of quality against a truth."""
    p, b = q["pairs"], q["blocking"]
    scope = " across shops" if q["scope"] == "pairs across shops" else ""
    return [
        ("truth", _truth_text(q["truth"])),
        (
            "quality",
            f"F1 {_num(p['f1'])}  (P {_num(p['precision'])}, R {_num(p['recall'])}; "
            f"tp {p['tp']:,}, fp {p['fp']:,}, fn {p['fn']:,} of {p['positives']:,} "
            f"known matching pairs{scope}); {p['unknown']:,} of "
            f"{p['predicted']:,} pairs unknown, not scored",
        ),
        (
            "blocking",
            f"PC {_num(b['pc'])}  ({b['positives_found']:,} of {b['positives']:,} "
            f"known matching pairs among the candidates; PQ {_num(b['pq'], 4)} of "
            f"{b['known_candidates']:,} known); candidate pairs per offer "
            f"{_num(b['per_offer'], 1)}, per labelled offer "
            f"{_num(b['per_labelled_offer'], 1)}",
        ),
        *_cluster_rows(q.get("clusters")),
    ]


def _cluster_rows(c: dict | None) -> Rows:
    if c is None:
        return []
    if "not_scored" in c:
        return [("clusters", f"not scored: {c['not_scored']}")]
    return [
        (
            "clusters",
            f"F1 {_num(c['f1'])}  (P {_num(c['precision'])}, R "
            f"{_num(c['recall'])} of the pairs the clusters imply, "
            f"{c['predicted']:,} pairs)",
        )
    ]


def _study_blocking_text(c: dict) -> str:
    if c["blocking"] == "lsh":
        return (
            f"LSH over model words, {c['num_perm']} permutations, default {c['bands']} "
            f"bands x {c['rows']} rows (sweep: every banding)"
        )
    from ..products.study import BUDGETS

    return (
        f"token blocking, default {c['per_offer']:g} candidate pairs per offer (sweep: "
        f"budgets of {min(BUDGETS):g} to {max(BUDGETS):g} per offer)"
    )


def _eval_rows(s: dict) -> Rows:
    known = (
        "known"
        if "truth" in s
        and (s["truth"]["negatives"] == "listed" or s["truth"]["labelled_offers"] < s["offers"])
        else "true"
    )
    rows = [
        ("offers", f"{s['offers']:,}, {s['true_pairs']:,} {known} duplicate pairs"),
        *([("truth", _truth_text(s["truth"]))] if "truth" in s else []),
        ("skipped", skipped_text(s["skipped"])),
        ("unused fields", _unused_text(s["unused_fields"])),
        ("blocking", _study_blocking_text(s["config"])),
    ]
    for r in s["summary"]:
        f1 = f"{r['f1']:.3f}" + (f" ± {r['f1_sd']:.3f}" if r.get("bootstraps", 1) > 1 else "")
        rows.append(
            (
                r["method"],
                f"F1 {f1}  (P "
                f"{r['precision']:.3f}, R {r['recall']:.3f}; PC {r['pc']:.3f} at "
                f"fraction {r['fraction']:.4f})",
            )
        )
    return rows + [("time", f"{s['seconds']:.1f} s"), ("report", s["outputs"]["report.md"])]

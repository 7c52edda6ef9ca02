"""The request and response models of the service's JSON API (pydantic), and the error
answers each endpoint documents in the OpenAPI schema."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ..config import PARAMS
from ..errors import SkipReason
from ..index.core import COMMON_TEXTS
from .ids import id_problem, normal_id
from .state import (
    CHECK_CANDIDATES,
    CHECK_DETAILS,
    CHECK_SECONDS,
    CHECK_TEXT_BYTES,
    MAX_MATCHES,
    PAIR_SECONDS,
    QUERY_SECONDS,
)


def _valid_unicode(s: str) -> str:
    # JSON can carry lone surrogates ("\ud800"), which are not text and cannot be stored as UTF-8.
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(
                f"contains a lone surrogate (U+{ord(s[e.start]):04X}) at "
                f"character {e.start}; send valid Unicode text"
            ) from None
    return s


def _valid_id(s: str) -> str:
    problem = id_problem(s)
    if problem is not None:
        raise ValueError(problem)
    return normal_id(s)


#: Why an empty text is refused, the same words on every path.
EMPTY_TEXT = "is empty or only white space; a document needs at least one word"


def _not_empty(s: str) -> str:
    if not s.strip():
        raise ValueError(EMPTY_TEXT)
    return s


Text = Annotated[str, AfterValidator(_valid_unicode)]
#: A text to add to the index: not empty (as the upload path, which skips such records).
DocText = Annotated[str, AfterValidator(_valid_unicode), AfterValidator(_not_empty)]
DocId = Annotated[
    str,
    Field(min_length=1, max_length=1024),
    AfterValidator(_valid_unicode),
    AfterValidator(_valid_id),
]


def param_bounds(name: str) -> tuple[float | None, float | None, float | None, float | None]:
    """The bounds of the number parameter ``name`` of :data:`neardup.config.PARAMETERS` as the
    ``gt``, ``ge``, ``lt`` and ``le`` of a pydantic field (``None``: no such bound)."""
    p = PARAMS[name]

    def plain(x: float | None) -> float | None:  # 0, not 0.0, in the schema and the messages
        return int(x) if x is not None and float(x).is_integer() else x

    lo, hi = plain(p.lo), plain(p.hi)
    return (
        lo if p.lo_open else None,
        None if p.lo_open else lo,
        hi if p.hi_open else None,
        None if p.hi_open else hi,
    )


THRESHOLD_GT, THRESHOLD_GE, THRESHOLD_LT, THRESHOLD_LE = param_bounds("threshold")
#: The default threshold of an uploaded collection's deduplication (that of ``neardup.dedup``).
THRESHOLD_DEFAULT: float = PARAMS["threshold"].default
#: How an uploaded collection is clustered: the choices of ``cluster`` in
#: :data:`neardup.config.PARAMETERS` (a test checks that they are the same).
ClusterMethod = Literal["components", "strict"]
CLUSTER_DEFAULT: ClusterMethod = PARAMS["cluster"].default

ThresholdParam = Annotated[
    float | None,
    Field(
        default=None,
        gt=THRESHOLD_GT,
        ge=THRESHOLD_GE,
        lt=THRESHOLD_LT,
        le=THRESHOLD_LE,
        description="Minimum Jaccard similarity of the word-shingle sets, in (0, 1], at least the "
        "index's own threshold (below it the index cannot find every near-duplicate, "
        "so a lower one is refused with 422); default: the index's threshold.",
    ),
]


class _Strict(BaseModel):
    # strict: "yes" is not true, true is not 1, "5" is not 5 (JSON numbers are still floats)
    model_config = ConfigDict(extra="forbid", strict=True)


class DocumentIn(_Strict):
    id: DocId = Field(
        description="Your id of the document: a non-empty string of characters "
        "that print (no control, zero-width or other format "
        "characters, no bidirectional marks), kept in Unicode NFC "
        "form."
    )
    text: DocText = Field(description="The document's text (not empty or only white space).")


class DocumentOut(BaseModel):
    id: str = Field(description="The document's id.")
    text: str | None = Field(description="Its stored text (null if the index keeps no texts).")


class IdPage(BaseModel):
    ids: list[str] = Field(description="Ids in code-point order, all after `after`.")
    next: str | None = Field(description="Pass as `after` for the next page; null on the last.")


class Created(BaseModel):
    id: str = Field(description="The id of the document added.")


class BatchIn(_Strict):
    documents: list[DocumentIn] = Field(
        description="Documents to add, all or none: if any id is already in the index, "
        "nothing is added."
    )


class BatchOut(BaseModel):
    added: int = Field(description="Number of documents added.")


class QueryIn(_Strict):
    text: Text = Field(description="The text to look up.")
    threshold: ThresholdParam
    top_k: int | None = Field(
        default=None,
        ge=1,
        le=MAX_MATCHES,
        description=(f"Return at most this many matches (best first; at most {MAX_MATCHES})."),
    )


class MatchOut(BaseModel):
    id: str = Field(description="Id of an indexed near-duplicate.")
    similarity: float = Field(
        description="Verified Jaccard similarity of the shingle sets, 0 to 1."
    )


class QueryOut(BaseModel):
    matches: list[MatchOut] = Field(description="Near-duplicates, highest similarity first.")
    unique: bool = Field(description="True if nothing in the index reaches the threshold.")
    threshold: float = Field(description="The threshold used.")
    common: list[CommonOut] = Field(
        default_factory=list,
        description=(
            f"Passages of the checked text that {COMMON_TEXTS} indexed texts or more hold "
            "(template sentences, widely quoted text), each once: the texts that share nothing "
            "else with it are counted here, not listed in `reused`."
        ),
    )
    matches_capped: bool = Field(
        default=False,
        description=(
            f"True if more than {MAX_MATCHES} documents reach the threshold: the answer holds the "
            "best ones."
        ),
    )
    incomplete: bool = Field(
        default=False,
        description=(
            f"True if not every candidate was verified within {QUERY_SECONDS:g} s: the answer may "
            "miss near-duplicates, and `unique` is false."
        ),
    )


class Passage(BaseModel):
    a: tuple[int, int] = Field(
        description="[start, end) character offsets in the first text "
        "(the checked text, or document a)."
    )
    b: tuple[int, int] = Field(
        description="[start, end) character offsets in the second text (the match, or document b)."
    )
    words: int = Field(description="Number of words in the passage.")


class CheckIn(_Strict):
    text: Text = Field(description="The new text to check against the index.")
    id: DocId | None = Field(
        default=None,
        description=("Its id: left out of the matches if already indexed; required with add=true."),
    )
    threshold: ThresholdParam
    add: bool = Field(
        default=False,
        description=(
            "Add the text under `id` if it is unique (atomically: two near-duplicates checked at "
            "once cannot both be added)."
        ),
    )


class CheckMatch(MatchOut):
    text: str | None = Field(
        default=None,
        description=(
            f"The match's stored text (for the {CHECK_DETAILS} best matches only, while the "
            "answer's texts stay within its byte budget: see `texts_capped`)."
        ),
    )
    passages: list[Passage] = Field(
        default_factory=list,
        description=(
            "Passages the checked text shares with the match (offsets into the checked text, "
            "`a`, and into the match's text, `b`); for the matches that come with their text, "
            "as far as the time budget allows (see `passages_incomplete`)."
        ),
    )


class ReusedOut(BaseModel):
    id: str = Field(description="Id of an indexed text that shares passages with the checked one.")
    share: float = Field(description="Share of the checked text's words in those passages, 0 to 1.")
    share_source: float = Field(description="Share of the indexed text's words in them.")
    text: str | None = Field(
        default=None, description=(f"The indexed text (for the {CHECK_DETAILS} most reused only).")
    )
    passages: list[Passage] = Field(
        description=(
            "The passages: offsets into the checked text, `a`, and into the indexed text, `b`."
        )
    )


class CommonOut(BaseModel):
    a: tuple[int, int] = Field(description="[start, end) character offsets in the checked text.")
    words: int = Field(description="Number of words in the passage.")
    texts: int = Field(
        description=(
            "About how many indexed texts hold it: at most this many (the fewest texts that hold "
            "one of its fingerprints, counted up to the index's bucket cap)."
        )
    )
    example: str = Field(description="Id of an indexed text that holds it.")
    b: tuple[int, int] = Field(description="[start, end) character offsets in that text.")


class CheckOut(BaseModel):
    unique: bool = Field(
        description="True if nothing in the index reaches the threshold, "
        "no indexed text shares a passage with the text (reused "
        "or common), and every candidate was compared."
    )
    threshold: float = Field(description="The threshold used.")
    matches: list[CheckMatch] = Field(description="Near-duplicates, highest similarity first.")
    added: bool = Field(description="True if the text was added to the index.")
    reused: list[ReusedOut] = Field(
        default_factory=list,
        description=(
            "Indexed texts the checked text shares passages with (copied text inside otherwise "
            "different texts), most reused first; empty where the index does not find passages "
            "(see `passages_indexed`)."
        ),
    )
    common: list[CommonOut] = Field(
        default_factory=list,
        description=(
            f"Passages of the checked text that {COMMON_TEXTS} indexed texts or more hold "
            "(template sentences, widely quoted text), each once: the texts that share nothing "
            "else with it are counted here, not listed in `reused`."
        ),
    )
    matches_capped: bool = Field(
        default=False,
        description=(
            f"True if more than {MAX_MATCHES} documents reach the threshold: the answer holds the "
            "best ones."
        ),
    )
    reused_capped: bool = Field(
        default=False, description=("True if more passages were found than the response carries.")
    )
    passages_incomplete: bool = Field(
        default=False,
        description=(
            f"True if the passages of some of the best matches were not found within the "
            f"{CHECK_SECONDS:g} s the check may take: those matches come with their text and "
            "without passages (or with the passages found so far)."
        ),
    )
    texts_capped: bool = Field(
        default=False,
        description=(
            f"True if some of the best matches or reused texts come with `text` null because the "
            f"answer carries at most {CHECK_TEXT_BYTES:,} bytes of matched texts (UTF-8) in all; "
            "fetch them with GET /documents/{id}."
        ),
    )
    reuse_incomplete: bool = Field(
        default=False,
        description=(
            f"True if not every indexed text that may share a passage was compared (more than "
            f"{CHECK_CANDIDATES}, or {CHECK_SECONDS:g} s spent): the answer may miss some, and "
            "`unique` is false."
        ),
    )
    passages_indexed: bool = Field(
        default=False,
        description=(
            "Whether this index finds reused passages (an index built without them finds "
            "whole-text near-duplicates only)."
        ),
    )
    min_passage_words: int | None = Field(
        default=None, description=("The shortest passage the index reports, in words.")
    )


class HealthOut(BaseModel):
    status: Literal["ok"] = Field(description="Always 'ok' when the service answers.")
    documents: int | None = Field(
        description="Documents in the index (null for a client "
        "without a key, where the service needs one)."
    )


class ErrorOut(BaseModel):
    detail: str = Field(description="What was wrong with the request.")


class Member(BaseModel):
    id: str = Field(description="Document id (the id field, or the line number of the record).")
    similarity_to_representative: float = Field(
        description="Jaccard similarity to the cluster's representative (1 for itself)."
    )
    title: str | None = Field(
        default=None,
        description=("The first line of its text (at most 80 characters), to recognise it by."),
    )


class ClusterOut(BaseModel):
    cluster: int = Field(description="Cluster number.")
    size: int = Field(description="Number of documents in the cluster.")
    representative: str = Field(description="Id of the document kept from the cluster.")
    members: list[Member] = Field(description="Every document of the cluster.")


#: The reasons a record of an upload is left out for (a whole file is a 415 or a 422).
_RECORD_REASONS = (
    SkipReason.MALFORMED_JSON,
    SkipReason.NOT_OBJECT,
    SkipReason.UNDECODABLE,
    SkipReason.BAD_ROW,
    SkipReason.MISSING_FIELD,
    SkipReason.NON_STRING_FIELD,
    SkipReason.BAD_ID,
    SkipReason.DUPLICATE_ID,
    SkipReason.EMPTY_TEXT,
    SkipReason.TEXT_TOO_LARGE,
)


class SkipExample(BaseModel):
    line: int = Field(description="Line of the file where the record starts.")
    reason: str = Field(
        description=(
            "Why it was skipped, a reason of `skipped`: "
            + "; ".join(f"`{r}`: {r.description}" for r in _RECORD_REASONS)
            + "."
        )
    )
    message: str = Field(description="What was wrong, in words.")


class CollectionOut(BaseModel):
    collection_id: str = Field(description="Use it with GET /collections/{collection_id}.")
    filename: str | None = Field(description="Name of the uploaded file, as sent.")
    format: Literal["csv", "jsonl", "parquet"] = Field(description="How the file was read.")
    id_field: str | None = Field(
        description="Field of the ids (given, or the field id found in "
        "every record); null: ids are line numbers."
    )
    documents: int = Field(description="Records deduplicated.")
    skipped: dict[str, int] = Field(description="Records left out, counted by reason.")
    skipped_examples: list[SkipExample] = Field(description="The first few records left out.")
    threshold: float = Field(description="Jaccard threshold used.")
    cluster_method: str = Field(description="'components' or 'strict'.")
    clusters: list[ClusterOut] = Field(
        description="Clusters of two or more near-duplicates, largest first."
    )
    pairs: int = Field(
        description=(
            "Pairs of documents known to be near-duplicates: the verified pairs of distinct texts "
            "and those their exact copies imply (every two copies of a text, and every copy of "
            "one text with every copy of a near-duplicate of it), counted, not listed."
        )
    )
    duplicates: int = Field(description="Documents that repeat a representative.")


class PairOut(BaseModel):
    collection_id: str
    a: DocumentOut = Field(description="The first document.")
    b: DocumentOut = Field(description="The second document.")
    similarity: float | None = Field(
        description=(
            "Their Jaccard similarity where the run knows it exactly: 1 for two copies of one "
            "text (after normalisation), the verified similarity of their texts where the run "
            "compared them (a pair, or a member and its representative); null otherwise."
        )
    )
    same_cluster: bool = Field(description="Whether they are in the same cluster.")
    passages: list[Passage] = Field(description="Passages the two texts share.")
    incomplete: bool = Field(
        default=False,
        description=(
            f"True if not every shared passage was found within {PAIR_SECONDS:g} s: `passages` "
            "holds those found."
        ),
    )


#: What each error status means for a client (every error body is an :class:`ErrorOut`).
_STATUS_MEANING = {
    400: "A malformed request: a bad header, an unknown Host name, invalid UTF-8, more than "
    "one API key.",
    401: "No API key, or one the service does not know (see `WWW-Authenticate`).",
    403: "The key's role may not do this, or a web page of another origin sent it.",
    404: "No such document, collection or endpoint.",
    408: "The request's headers or body did not arrive in time; send it again at once.",
    409: "The id is already in the index (nothing was added).",
    413: "The body, a text or a batch is over the service's limit.",
    415: "The wrong content type (JSON bodies, multipart uploads).",
    422: "Invalid fields: `detail` names each one.",
    500: "An error of the service: nothing is shown of it; the service's log has it under "
    "the request's id.",
    503: "The service or its index cannot answer right now (busy, too many requests, the "
    "backend unreachable or changed): try again after `Retry-After` seconds where it is "
    "given.",
    507: "No room: the index holds the most documents the service keeps, or its disk is full.",
}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "schema": {"type": "integer"},
    }
}


def _error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {
        c: {
            "model": ErrorOut,
            "description": _STATUS_MEANING[c],
            **({"headers": _RETRY_AFTER} if c == 503 else {}),
        }
        for c in codes
    }


#: The errors every endpoint of the API may answer, and those of the endpoints that add
_ERRORS = _error_responses(400, 401, 403, 404, 408, 409, 413, 415, 422, 500, 503)
_WRITE_ERRORS = _error_responses(400, 401, 403, 404, 408, 409, 413, 415, 422, 500, 503, 507)

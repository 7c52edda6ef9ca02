"""What a document id of the service is: one rule for JSON bodies, URLs and uploads.

An id names a document in URLs, answers, logs and the web page, so two ids that print the same
must be one id, or one of them refused:

- an id is taken in Unicode NFC form: ``"café"`` with a precomposed ``é`` and with ``e``
  followed by a combining accent (NFD, as some file systems write names) are the same id;
- characters that do not print are refused: C0 and C1 controls (NUL, tabs, line breaks), DEL,
  the line and paragraph separators, and the format characters (Unicode category Cf): zero-width
  spaces and joiners, the word joiner, the byte-order mark, soft hyphens, the bidirectional marks
  and the embeddings, overrides and isolates that make one id print as another ("Trojan
  source").
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["id_problem", "normal_id"]

#: ASCII characters an id may not hold (the rest of the rule needs non-ASCII text)
_BAD_ASCII = re.compile("[\x00-\x1f\x7f]")
#: Unicode categories an id may not hold: controls, format characters, line and paragraph
#: separators
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})

#: What an id may not hold, in words (the end of every refusal).
RULE = (
    "an id may not hold characters that do not print: control characters, line "
    "separators, zero-width and other format characters, bidirectional marks, overrides "
    "and isolates"
)


def normal_id(doc_id: str) -> str:
    """``doc_id`` in the form the service keeps it: Unicode NFC."""
    return doc_id if doc_id.isascii() else unicodedata.normalize("NFC", doc_id)


def id_problem(doc_id: str) -> str | None:
    """What is wrong with ``doc_id`` as an id, or None."""
    if doc_id.isascii():
        m = _BAD_ASCII.search(doc_id)
        at = None if m is None else m.start()
    else:
        at = next(
            (i for i, c in enumerate(doc_id) if unicodedata.category(c) in _BAD_CATEGORIES), None
        )
    if at is None:
        return None
    c = doc_id[at]
    name = unicodedata.name(c, "")
    return f"contains U+{ord(c):04X}{f' ({name})' if name else ''} at character {at}; {RULE}"

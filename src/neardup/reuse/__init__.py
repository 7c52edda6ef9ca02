"""Reused passages: the runs of words that one text copies from another, inside texts that are
otherwise different (a copied paragraph in new writing), where the whole-text similarity is low.

**Fingerprints.** Each text's words (:mod:`neardup.text.words`: NFKC, case folded) are hashed
as overlapping word ``k``-grams, and *winnowing* keeps, of every window of ``window``
consecutive k-gram hashes, the smallest (the rightmost of equal ones), with its position.

**The guarantee.** Two texts that share a run of at least ``window + k - 1`` words (that is,
``window`` consecutive shared k-grams) hold an identical window of k-gram hashes, from which
both keep the same hash at the same offset: that pair of positions is a *seed*. So every shared
run of at least ``guaranteed_words = window + k - 1`` words is found, whatever else the texts
hold. ``min_words`` (the shortest passage reported) must be at least that.

**Passages.** Words are compared by 64-bit hashes of their keys. From each seed (one whose k
words differ, a collision of k-gram hashes, is dropped), the exact run is extended in both
directions while the words agree. Runs
that follow one another in both texts with at most ``max_gap`` words between them in each (a
changed, inserted or dropped word; a short re-ordering) are merged into one passage, and a
passage's ends are extended across such gaps wherever at least ``min_match`` words agree again
(so that a passage with a changed word every 20 words is found whole from one seed). Passages
of at least ``min_words`` words (counted in the first text) are reported, in reading order of
the first text, with character ranges in both original texts.

**Bounds.** A k-gram hash kept more than ``max_occurrences`` times in one text (boilerplate
repeated within it) seeds from its first occurrences only; the other repeats are still found
when a run reaches them by extension. Work per pair is O(words + seeds x passage length).

**Where it runs.** Splitting, keying and hashing the words of ASCII texts, and the comparison
of a pair of texts, are compiled (:mod:`neardup._kernels.passages`, whose plain-Python oracle
is in the tests); a corpus is compared on several threads.

**Modules.** :mod:`.words` (the words of texts), :mod:`.winnowing` (k-gram hashes and their
fingerprints), :mod:`.passages` (:class:`PassageConfig`; the passages of two texts, or of one
text with many), :mod:`.passage_index` (:class:`PassageIndex`), :mod:`.batch`
(:func:`find_reuse` over a corpus, :class:`ReuseResult`) and :mod:`.keys` (passage
fingerprints as an index stores and checks them) and :mod:`.shared`
(:func:`shared_passages`: every shared run of word k-grams, for showing two texts side by
side); every public name is importable from ``neardup.reuse``.
"""

from __future__ import annotations

# combine_kgrams, fingerprints_many_flat, order_by_text_then_hash and word_hashes are public
# but outside __all__, as they were before the module became a package
from .batch import ReuseResult, find_reuse
from .keys import (
    checked_fingerprints,
    passage_keys,
    passage_keys_many,
    salt_fingerprints,
    unique_by_text,
)
from .passage_index import PassageIndex, ReuseMatch
from .passages import (
    Passage,
    PassageConfig,
    passages_with,
    reuse_share,
    reused_passages,
)
from .shared import shared_passages
from .winnowing import (
    combine_kgrams,  # noqa: F401
    fingerprints,
    fingerprints_many,
    fingerprints_many_flat,  # noqa: F401
    order_by_text_then_hash,  # noqa: F401
    winnow_many,
)
from .words import TextWords, blank_tags, text_words, word_hashes, words_many  # noqa: F401

__all__ = [
    "PassageConfig",
    "Passage",
    "PassageIndex",
    "ReuseMatch",
    "ReuseResult",
    "TextWords",
    "text_words",
    "words_many",
    "fingerprints",
    "fingerprints_many",
    "winnow_many",
    "reused_passages",
    "passages_with",
    "reuse_share",
    "find_reuse",
    "blank_tags",
    "shared_passages",
    "salt_fingerprints",
    "unique_by_text",
    "passage_keys",
    "passage_keys_many",
    "checked_fingerprints",
]

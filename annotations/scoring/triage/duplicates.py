"""Duplicates: near-identical images (perceptual hashes) and near-identical questions.

Scale matters (100k items): images are compared by multi-index hashing, not all pairs. A 64-bit
hash split into t+1 chunks puts two hashes within Hamming distance t in the same bucket for at
least one chunk (pigeonhole), so only bucket-mates are compared. Questions are blocked the same
way: identical token sets are grouped directly, and fuzzy candidates must share one of their two
rarest tokens (prefix filtering) before rapidfuzz scores them.
"""

from __future__ import annotations

import io
import re
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from PIL import Image
from rapidfuzz import fuzz

from annotations.scoring.triage.broken import comparable_text, normalise_text
from annotations.scoring.triage.types import (
    DUPLICATE_IMAGE,
    DUPLICATE_QUESTION,
    SPLIT_LEAKAGE,
    ItemFacts,
    Key,
    Reason,
)

WEIGHTS = {SPLIT_LEAKAGE: 0.8, DUPLICATE_QUESTION: 0.6, DUPLICATE_IMAGE: 0.35}
TEMPLATE_QUESTION_WEIGHT = 0.1  # same question and options on different images: maybe a template
ImageKey = Hashable


# --- image hashes ---------------------------------------------------------------------------


def image_hashes(data: bytes) -> tuple[int, int] | None:
    """(phash, dhash) of an encoded image as 64-bit integers; None if it cannot be decoded."""
    import imagehash  # it loads scipy: only the triage worker pays for it, not every page

    try:
        with Image.open(io.BytesIO(data)) as image:
            # JPEG draft mode decodes at 1/8 scale: hashes look at 32×32 pixels anyway.
            image.draft("L", (64, 64))
            grey = image.convert("L")
            return int(str(imagehash.phash(grey)), 16), int(str(imagehash.dhash(grey)), 16)
    except Exception:  # a broken file is the import's business; triage just skips it
        return None


_FLAT = (0, (1 << 64) - 1)


def _popcount(values: np.ndarray) -> np.ndarray:
    return np.bitwise_count(values)


def _chunks(max_distance: int) -> list[tuple[int, int]]:
    """(shift, bits) of max_distance+1 disjoint chunks covering 64 bits."""
    count = max_distance + 1
    sizes = [64 // count + (1 if i < 64 % count else 0) for i in range(count)]
    spans, shift = [], 0
    for size in sizes:
        spans.append((shift, size))
        shift += size
    return spans


def near_image_pairs(
    phashes: Mapping[ImageKey, int],
    *,
    dhashes: Mapping[ImageKey, int] | None = None,
    max_distance: int = 6,
    max_dhash_distance: int = 12,
    bucket_limit: int = 4000,
    group_limit: int = 50,
) -> list[tuple[ImageKey, ImageKey, int]]:
    """Pairs of distinct images whose phash differs in at most `max_distance` bits (and, when
    dhashes are given, whose dhash agrees too), with the phash distance.

    A hash shared by more than `group_limit` images is degenerate (blank or flat frames all
    hash alike) and is left out rather than reported as thousands of pairs.
    """
    by_hash: dict[int, list[ImageKey]] = defaultdict(list)
    for key, value in phashes.items():
        if dhashes is not None and dhashes.get(key) in _FLAT:
            continue  # a flat frame has no structure: every flat frame would match every other
        by_hash[value].append(key)
    by_hash = {value: keys for value, keys in by_hash.items() if len(keys) <= group_limit}
    unique = np.fromiter(by_hash, dtype=np.uint64, count=len(by_hash))
    found: dict[tuple[int, int], int] = {}
    for shift, bits in _chunks(max_distance):
        keys = (unique >> np.uint64(shift)) & np.uint64((1 << bits) - 1)
        order = np.argsort(keys, kind="stable")
        bounds = np.flatnonzero(np.diff(keys[order])) + 1
        for bucket in np.split(order, bounds):
            if len(bucket) < 2 or len(bucket) > bucket_limit:
                continue
            values = unique[bucket]
            distances = _popcount(values[:, None] ^ values[None, :])
            rows, cols = np.nonzero(np.triu(distances <= max_distance, k=1))
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
                a, b = sorted((int(bucket[r]), int(bucket[c])))
                found[(a, b)] = int(distances[r, c])
    pairs: list[tuple[ImageKey, ImageKey, int]] = []
    for group in by_hash.values():  # identical hashes: re-encodes of one picture, distance 0
        pairs.extend((a, b, 0) for a, b in combinations(group, 2))
    hashes = unique.tolist()
    for (a, b), distance in found.items():
        pairs.extend((x, y, distance) for x in by_hash[hashes[a]] for y in by_hash[hashes[b]])
    if dhashes is not None:
        pairs = [
            p
            for p in pairs
            if p[0] in dhashes
            and p[1] in dhashes
            and (dhashes[p[0]] ^ dhashes[p[1]]).bit_count() <= max_dhash_distance
        ]
    return pairs


# --- questions ------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def question_tokens(text: str) -> list[str]:
    """The words of a question, case-folded and NFKC-normalised, punctuation dropped."""
    return _WORD.findall(normalise_text(text))


def near_question_pairs(
    questions: Mapping[Key, str],
    *,
    threshold: float = 95.0,
    template_limit: int = 20,
    block_limit: int = 200,
) -> list[tuple[Key, Key, float]]:
    """Pairs of near-identical questions: token_set_ratio ≥ `threshold` (and a plain ratio
    close enough that a short question inside a long one is not taken for a copy), with the
    same numbers in the same order: a number is never a typo.

    A wording shared by more than `template_limit` items is a template, not a duplicate.
    """
    exact: dict[str, list[Key]] = defaultdict(list)
    for key, text in questions.items():
        tokens = question_tokens(text)
        if tokens:
            exact[" ".join(sorted(set(tokens)))].append(key)
    pairs: list[tuple[Key, Key, float]] = []
    for members in exact.values():
        if 1 < len(members) <= template_limit:
            pairs.extend((a, b, 100.0) for a, b in combinations(members, 2))
    texts = [text for text, members in exact.items() if len(members) <= template_limit]
    frequency: dict[str, int] = defaultdict(int)
    for text in texts:
        for token in text.split():
            frequency[token] += 1
    blocks: dict[str, list[int]] = defaultdict(list)
    for position, text in enumerate(texts):
        for token in sorted(text.split(), key=lambda t: (frequency[t], t))[:2]:
            blocks[token].append(position)
    seen: set[tuple[int, int]] = set()
    for block in blocks.values():
        if len(block) > block_limit:
            continue
        for a, b in combinations(block, 2):
            if (a, b) in seen:
                continue
            seen.add((a, b))
            if _numbers(texts[a]) != _numbers(texts[b]):
                continue  # "3 polyps" and "2 polyps", "case 117" and "case 281" differ
            score = fuzz.token_set_ratio(texts[a], texts[b], score_cutoff=threshold)
            if score and fuzz.ratio(texts[a], texts[b]) >= 85:
                pairs.extend((x, y, score) for x in exact[texts[a]] for y in exact[texts[b]])
    return pairs


def _numbers(text: str) -> list[str]:
    return [token for token in text.split() if any(ch.isdigit() for ch in token)]


# --- item-level reasons ---------------------------------------------------------------------


@dataclass
class _Link:
    other: Key
    code: str
    weight: float
    evidence: dict


def _option_set(item: ItemFacts) -> frozenset[str]:
    return frozenset(comparable_text(text) for text in item.options if text)


def _cross_split(a: ItemFacts, b: ItemFacts) -> bool:
    return bool(a.split and b.split and a.split != b.split)


def duplicate_reasons(
    items: Sequence[ItemFacts],
    image_pairs: Iterable[tuple[ImageKey, ImageKey, int]],
    question_pairs: Iterable[tuple[Key, Key, float]],
    *,
    evidence_limit: int = 5,
    fanout_limit: int = 50,
) -> dict[Key, list[Reason]]:
    """One reason per code per item, listing the items it duplicates (a few, with the count).

    - split leakage: the same or a near-identical image in two splits (dev and test);
    - duplicate image: a near-identical but separately stored image (a re-encoded frame);
    - duplicate question: the same question and options, on the same-looking image or not.
    Items sharing one stored image within a split are normal (several questions per frame).
    """
    facts = {item.key: item for item in items}
    by_image: dict[ImageKey, list[Key]] = defaultdict(list)
    for item in items:
        for image in item.images:
            by_image[image].append(item.key)
    near: dict[frozenset, int] = {}
    for a, b, distance in image_pairs:
        near[frozenset((a, b))] = distance
    links: dict[Key, list[_Link]] = defaultdict(list)

    def link(i: Key, j: Key, code: str, weight: float, evidence: dict) -> None:
        links[i].append(_Link(j, code, weight, {"item": j, **evidence}))
        links[j].append(_Link(i, code, weight, {"item": i, **evidence}))

    for image, keys in by_image.items():  # one stored image used in two splits
        for i, j in combinations(keys[:fanout_limit], 2):
            if _cross_split(facts[i], facts[j]) and facts[i].group != facts[j].group:
                link(
                    i,
                    j,
                    SPLIT_LEAKAGE,
                    WEIGHTS[SPLIT_LEAKAGE],
                    _image_ev(0, image, image, i, j, facts),
                )
    for pair, distance in near.items():
        a, b = tuple(pair)
        for i in by_image.get(a, [])[:fanout_limit]:
            for j in by_image.get(b, [])[:fanout_limit]:
                if i == j or facts[i].group is not None and facts[i].group == facts[j].group:
                    continue
                code = SPLIT_LEAKAGE if _cross_split(facts[i], facts[j]) else DUPLICATE_IMAGE
                link(i, j, code, WEIGHTS[code], _image_ev(distance, a, b, i, j, facts))
    for i, j, score in question_pairs:
        first, second = facts.get(i), facts.get(j)
        if (
            first is None
            or second is None
            or (first.group is not None and first.group == second.group)
        ):
            continue
        if _option_set(first) != _option_set(second):
            continue
        same_look = _images_alike(first, second, near)
        weight = WEIGHTS[DUPLICATE_QUESTION] if same_look else TEMPLATE_QUESTION_WEIGHT
        link(
            i,
            j,
            DUPLICATE_QUESTION,
            weight,
            {"score": round(score, 1), "same_image": same_look, "split": second.split},
        )
    return {key: _reasons(key, found, facts, evidence_limit) for key, found in links.items()}


def _image_ev(distance: int, a: ImageKey, b: ImageKey, i: Key, j: Key, facts: dict) -> dict:
    return {"distance": distance, "images": [a, b], "splits": [facts[i].split, facts[j].split]}


def _images_alike(a: ItemFacts, b: ItemFacts, near: Mapping[frozenset, int]) -> bool:
    if set(a.images) & set(b.images):
        return True
    return any(frozenset((x, y)) in near for x in a.images for y in b.images)


_SENTENCES = {
    SPLIT_LEAKAGE: "LEAKAGE: the same image is used in another split ({others}).",
    DUPLICATE_IMAGE: "A near-identical image is stored again for {others}.",
    DUPLICATE_QUESTION: "The same question with the same options appears in {others}.",
}


def _reasons(key: Key, found: list[_Link], facts: dict, limit: int) -> list[Reason]:
    by_code: dict[str, list[_Link]] = defaultdict(list)
    for entry in found:
        if all(other.other != entry.other for other in by_code[entry.code]):
            by_code[entry.code].append(entry)
    reasons = []
    for code, entries in by_code.items():
        entries.sort(key=lambda e: -e.weight)
        shown = entries[:limit]
        others = ", ".join(f"item {e.other}" for e in shown)
        reasons.append(
            Reason(
                code,
                entries[0].weight,
                _SENTENCES[code].format(others=others),
                {"count": len(entries), "others": [e.evidence for e in shown]},
            )
        )
    return reasons

"""Generate the bundled example corpus ``examples/news.jsonl`` and its ground truth.

Short local-news items composed from hand-written sentence templates, with planted
near-duplicates of the kinds that syndicated copies carry: exact reposts, re-typed copies
(case and spacing), light rewrites (a few words changed), a paragraph dropped, and a wire-service
header and footer added. Deterministic: ``python examples/generate.py`` rewrites the same files.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TOWNS = [
    "Millbrook",
    "Harwick",
    "Eastfield",
    "Port Selby",
    "Oakridge",
    "Linden Falls",
    "Bramford",
    "Kestrel Bay",
    "Norwood",
    "Ashcombe",
    "Greyhaven",
    "Wexley",
]
BODIES = [
    "the town council",
    "the school board",
    "the harbour authority",
    "the library trust",
    "the chamber of commerce",
    "the water utility",
    "the county planning office",
    "the football club",
    "the hospital trust",
    "the farmers' cooperative",
]
TOPICS = [
    "a new cycle path",
    "the renovation of the old market hall",
    "a four-day school week",
    "higher parking fees",
    "a community solar farm",
    "the closure of the night bus",
    "a festival of local food",
    "repairs to the flood wall",
    "a youth orchestra",
    "free swimming lessons",
    "a plan to plant two thousand trees",
    "a new ferry timetable",
    "the sale of the railway yard",
    "a weekly farmers' market",
    "late opening hours",
]
PEOPLE = [
    "Mayor Ellen Ward",
    "councillor Raj Patel",
    "head teacher Maria Lopez",
    "spokesperson Tom Becker",
    "chair Anna Kowalski",
    "director Samuel Okafor",
    "treasurer Linda Chen",
    "resident Peter Novak",
    "engineer Fatima Haddad",
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

OPENERS = [
    "{body} of {town} voted on {day} {month} to approve {topic}, ending months of debate.",
    "After a long public meeting, {body} in {town} decided to back {topic}.",
    "Residents of {town} will see {topic} next year, {body} announced on {day} {month}.",
    "{body} of {town} has postponed its decision on {topic} until the spring.",
    "A survey published by {body} shows that most people in {town} support {topic}.",
]
MIDDLES = [
    "{person} said the cost would be about {money} thousand pounds over {years} years.",
    "According to {person}, the project has been discussed since {year}.",
    "{person} told reporters that {count} people had written to the council about it.",
    "Opponents argue that the money would be better spent on roads and street lighting.",
    "Supporters collected {count} signatures in less than three weeks.",
    "The plan still needs approval from the regional government before work can begin.",
    "Local businesses expect more visitors once the work is finished.",
    "{person} promised that a second consultation would be held in {month}.",
    "The first phase is expected to take {years} months and to employ {count} workers.",
    "Several residents raised concerns about noise and traffic during construction.",
    "A similar scheme in {town2} was completed last year and cut costs by a fifth.",
    "The budget for the scheme will be reviewed again at the end of {month}.",
]
CLOSERS = [
    "The next public meeting will take place at the town hall on {day} {month}.",
    "Details are available from the council offices and on the town's notice boards.",
    "{person} thanked volunteers for their work over the past {years} years.",
    "A final vote is expected before the end of the year.",
    "Questions can be sent to {body} in writing until {day} {month}.",
]


def _fill(tpl: str, rng: random.Random, town: str) -> str:
    s = tpl.format(
        town=town,
        town2=rng.choice([t for t in TOWNS if t != town]),
        body=rng.choice(BODIES),
        topic=rng.choice(TOPICS),
        person=rng.choice(PEOPLE),
        month=rng.choice(MONTHS),
        day=rng.randint(1, 28),
        money=rng.randint(20, 900),
        years=rng.randint(2, 12),
        year=rng.randint(1998, 2023),
        count=rng.randint(40, 4000),
    )
    return s[0].upper() + s[1:]


def make_article(rng: random.Random) -> str:
    town = rng.choice(TOWNS)
    paras = [_fill(rng.choice(OPENERS), rng, town)]
    for _ in range(rng.randint(2, 3)):
        paras.append(" ".join(_fill(t, rng, town) for t in rng.sample(MIDDLES, rng.randint(2, 3))))
    paras.append(_fill(rng.choice(CLOSERS), rng, town))
    return "\n\n".join(paras)


REPLACEMENTS = {
    "said": "stated",
    "people": "residents",
    "council": "authority",
    "expected": "likely",
    "about": "around",
    "approve": "accept",
    "plan": "proposal",
    "meeting": "session",
    "work": "works",
    "year": "season",
}


def rewrite(text: str, rng: random.Random, rate: float) -> str:
    words = text.split(" ")
    for i, w in enumerate(words):
        if w in REPLACEMENTS and rng.random() < rate:
            words[i] = REPLACEMENTS[w]
    return " ".join(words)


def variant(text: str, kind: str, rng: random.Random) -> str:
    if kind == "repost":
        return text
    if kind == "retyped":
        return text.replace(". ", ".  ").upper() if rng.random() < 0.3 else "  " + text + "\n"
    if kind == "rewrite":
        return rewrite(text, rng, 0.3)
    if kind == "shortened":
        paras = text.split("\n\n")
        del paras[rng.randrange(1, len(paras))]
        return "\n\n".join(paras)
    if kind == "syndicated":
        agency = rng.choice(["Coastal Wire", "Regional Press Service", "Valley News Agency"])
        return (
            f"{agency} -- {rng.choice(MONTHS)} {rng.randint(1, 28)}\n\n{text}\n\n"
            f"Copyright {agency}. All rights reserved."
        )
    raise ValueError(kind)


def main() -> None:
    rng = random.Random(20261121)
    docs, truth = [], []
    kinds = ["repost", "retyped", "rewrite", "shortened", "syndicated"]
    originals = []
    for i in range(240):
        doc_id = f"news-{i + 1:04d}"
        text = make_article(rng)
        docs.append(
            {"id": doc_id, "source": rng.choice(["herald", "gazette", "courier"]), "text": text}
        )
        originals.append((doc_id, text))
    for j in range(90):
        src_id, src_text = rng.choice(originals)
        kind = kinds[j % len(kinds)]
        doc_id = f"copy-{j + 1:04d}"
        docs.append(
            {
                "id": doc_id,
                "source": rng.choice(["herald", "gazette", "courier"]),
                "text": variant(src_text, kind, rng),
            }
        )
        truth.append({"id": doc_id, "source_id": src_id, "kind": kind})
    rng.shuffle(docs)
    here = Path(__file__).parent
    with open(here / "news.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(here / "news.truth.jsonl", "w", encoding="utf-8") as f:
        for t in truth:
            f.write(json.dumps(t) + "\n")
    print(f"wrote {len(docs)} documents, {len(truth)} planted variants")


if __name__ == "__main__":
    main()

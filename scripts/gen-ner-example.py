#!/usr/bin/env python3
"""Writes recipes/data/ner_example.jsonl: 400 synthetic tagged sentences (people, places and
organisations in ten sentence shapes, IOB2 tags), the data of recipes/ner-bert.yaml. Deterministic:
running it again writes the same file.

    python3 scripts/gen-ner-example.py
"""
import os
import json, random
rng = random.Random(7)
first = ["Anna", "Ben", "Clara", "David", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kemal", "Lena",
         "Marco", "Nadia", "Oscar", "Priya", "Quentin", "Rosa", "Samir", "Tessa"]
last = ["Berg", "Costa", "Dubois", "Evans", "Fischer", "Garcia", "Hansen", "Ito", "Jensen", "Kowalski", "Lopez",
        "Moreau", "Nguyen", "Olsen", "Petrov", "Rossi", "Schmidt", "Tanaka", "Weber", "Zhang"]
places = [["Paris"], ["Berlin"], ["Madrid"], ["Oslo"], ["Lisbon"], ["Vienna"], ["New", "York"], ["Buenos", "Aires"],
          ["Cape", "Town"], ["Tokyo"], ["Cairo"], ["Lima"], ["Hong", "Kong"], ["Rome"], ["Dublin"]]
orgs = [["Acme"], ["Globex"], ["Initech"], ["Umbrella", "Corp"], ["Stark", "Industries"], ["Wayne", "Enterprises"],
        ["Northwind"], ["Contoso"], ["Blue", "Sky", "Labs"], ["Red", "Cross"]]
shapes = [
    "{PER} flew to {LOC} on Monday .",
    "{PER} works for {ORG} in {LOC} .",
    "The office of {ORG} opened in {LOC} last year .",
    "{PER} met {PER} at the {ORG} headquarters .",
    "Reports from {LOC} say {ORG} will hire {PER} .",
    "Yesterday {PER} left {ORG} after ten years .",
    "We visited {LOC} and then {LOC} by train .",
    "{ORG} and {ORG} signed a deal in {LOC} .",
    "According to {PER} , the weather in {LOC} was fine .",
    "Nobody from {ORG} answered the call .",
]
def person():
    return [rng.choice(first)] + ([rng.choice(last)] if rng.random() < 0.7 else [])
out = []
for _ in range(400):
    words, tags = [], []
    for part in rng.choice(shapes).split():
        if part in ("{PER}", "{LOC}", "{ORG}"):
            kind = part[1:4]
            name = person() if kind == "PER" else rng.choice(places if kind == "LOC" else orgs)
            words += name
            tags += ["B-" + kind] + ["I-" + kind] * (len(name) - 1)
        else:
            words.append(part)
            tags.append("O")
    out.append({"tokens": words, "ner_tags": tags})
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "recipes/data/ner_example.jsonl"), "w") as f:
    for r in out:
        f.write(json.dumps(r) + "\n")
print(f"{len(out)} sentences")

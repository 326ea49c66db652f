"""The invented world of Fictopedia: towns, inventors, rivers and ships, and their documents.

Everything is drawn from one seeded :class:`random.Random`, so the same seed always gives the
same world. Names are made of invented syllables and are unique across the whole world, so a
name never appears inside another and a fact cannot be known without reading its document.
Each document states the facts questions ask about in its first sentences (within the
snippet the search tool returns).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

SEED = "fictopedia-v1"
COUNTS = {"town": 60, "inventor": 50, "river": 40, "ship": 50}
FOUNDING_INVENTORS = 40  # inventors who founded a town; guilds founded the other towns

# fmt: off
_ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "qu", "r",
           "s", "st", "t", "th", "v", "w", "z"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ou", "ei"]
_CODAS = ["", "", "l", "n", "r", "s", "th", "m", "nd", "rk"]
_TOWN_ENDS = ["holm", "wick", "by", "ford", "mere", "stead", "gate", "haven"]
_FIRST_NAMES = ["Ada", "Bram", "Cyra", "Dorin", "Elsa", "Fenn", "Greta", "Hale", "Ines", "Joro",
                "Kasia", "Lev", "Mira", "Nils", "Oona", "Piet", "Rhea", "Sten", "Tova", "Ulric"]
_ADJECTIVES = ["brass", "tidal", "folding", "singing", "clockwork", "lantern", "salt", "copper",
               "weather", "glass", "wind", "paper", "iron", "amber", "hollow"]
_DEVICES = ["loom", "compass", "lute", "orrery", "press", "kiln", "barometer", "lock", "pump",
            "telescope", "bellows", "sextant", "mill", "clock", "crane"]
_SHIP_WORDS = ["Heron", "Quill", "Lantern", "Thistle", "Marten", "Anchor", "Comet", "Willow",
               "Falcon", "Ember", "Otter", "Harrier", "Juniper", "Pennant", "Wren"]
_SHIP_ADJ = ["Swift", "Grey", "Silent", "Golden", "Crimson", "Patient", "Northern", "Bright",
             "Wandering", "Steadfast", "Restless", "Hidden", "Merry", "Pale", "Bold"]
# fmt: on
_SEAS = ["Verdal Sea", "Orrin Gulf", "Sable Sound", "Kestmere Bight"]
_TRADES = ["wool", "salt", "timber", "glass", "cheese", "rope", "pottery", "copper"]


@dataclass
class Entity:
    """One encyclopedia entry: its kind, name, document id and facts."""

    kind: str
    name: str
    doc_id: str = ""
    facts: dict[str, int | str] = field(default_factory=dict)


@dataclass
class World:
    towns: list[Entity]
    inventors: list[Entity]
    rivers: list[Entity]
    ships: list[Entity]

    def entities(self) -> list[Entity]:
        """All entities, in document id order."""
        every = [*self.towns, *self.inventors, *self.rivers, *self.ships]
        return sorted(every, key=lambda e: e.doc_id)


class _Names:
    """Unique invented words: none equals or contains another, case-insensitively."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: list[str] = []

    def word(self, syllables: int, end: str = "") -> str:
        while True:
            parts = [self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(syllables)]
            word = ("".join(parts) + self.rng.choice(_CODAS) + end).capitalize()
            low = word.lower()
            if all(low not in u and u not in low for u in self.used):
                self.used.append(low)
                return word


def build_world(seed: str = SEED) -> World:
    """The whole world, deterministic in ``seed``."""
    rng = random.Random(seed)
    names = _Names(rng)
    rivers = [
        Entity(
            "river",
            names.word(2),
            facts={
                "length_km": rng.randint(40, 1900),
                "mouth": rng.choice(_SEAS),
            },
        )
        for _ in range(COUNTS["river"])
    ]
    towns = [
        Entity(
            "town",
            names.word(rng.randint(1, 2), rng.choice(_TOWN_ENDS)),
            facts={
                "founded": rng.randint(1100, 1700),
                "river": rivers[i % len(rivers)].name
                if i < len(rivers)
                else rng.choice(rivers).name,
                "population": rng.randint(8, 400) * 100,
                "trade": rng.choice(_TRADES),
            },
        )
        for i in range(COUNTS["town"])
    ]
    inventions = [f"{a} {d}" for a in _ADJECTIVES for d in _DEVICES]
    rng.shuffle(inventions)
    inventors = [
        Entity(
            "inventor",
            f"{rng.choice(_FIRST_NAMES)} {names.word(2)}",
            facts={
                "born": rng.randint(1720, 1860),
                "invention": inventions[i],
            },
        )
        for i in range(COUNTS["inventor"])
    ]
    # Guild towns are older than any inventor; each founding inventor founded one town.
    guilds = COUNTS["town"] - FOUNDING_INVENTORS
    for town in towns[:guilds]:
        town.facts["founder"] = f"the {town.facts['trade']} guild"
    for town, inventor in zip(towns[guilds:], inventors[:FOUNDING_INVENTORS], strict=True):
        town.facts["founded"] = int(inventor.facts["born"]) + rng.randint(25, 55)
        town.facts["founder"] = inventor.name
    for inventor in inventors:
        born = int(inventor.facts["born"])
        inventor.facts["birthplace"] = rng.choice(
            [t for t in towns if int(t.facts["founded"]) < born]
        ).name
    ship_names = [f"{a} {w}" for a in _SHIP_ADJ for w in _SHIP_WORDS]
    rng.shuffle(ship_names)
    ships = [
        Entity(
            "ship",
            ship_names[i],
            facts={
                "launched": rng.randint(1780, 1910),
                "builder": rng.choice(inventors).name,
                "home_port": rng.choice(towns).name,
                "tonnage": rng.randint(40, 900),
            },
        )
        for i in range(COUNTS["ship"])
    ]
    every = [*towns, *inventors, *rivers, *ships]
    order = list(range(1, len(every) + 1))
    rng.shuffle(order)
    for entity, number in zip(every, order, strict=True):
        entity.doc_id = f"fx-{number:03d}"
    return World(towns, inventors, rivers, ships)


def title(entity: Entity) -> str:
    """The document title: the name, with the kind for rivers and ships."""
    if entity.kind == "river":
        return f"{entity.name} River"
    if entity.kind == "ship":
        return f"{entity.name} (ship)"
    return entity.name


def document_text(entity: Entity) -> str:
    """The encyclopedia entry for ``entity``; the facts asked about come first."""
    f = entity.facts
    if entity.kind == "town":
        return (
            f"{entity.name} is a town on the {f['river']} River. It was founded in "
            f"{f['founded']} by {f['founder']}. About {f['population']} people live there, "
            f"and its market is known for {f['trade']}."
        )
    if entity.kind == "inventor":
        return (
            f"{entity.name} was an inventor, born in {f['born']} in {f['birthplace']}. "
            f"{entity.name} is best known for inventing the {f['invention']}, which was "
            "copied by workshops across the region."
        )
    if entity.kind == "river":
        return (
            f"The {entity.name} River is {f['length_km']} kilometres long and flows into "
            f"the {f['mouth']}. Barges on the {entity.name} carried goods between its towns."
        )
    return (
        f"The {entity.name} is a ship built by {f['builder']} and launched in {f['launched']}. "
        f"Her home port is {f['home_port']}, and she carried {f['tonnage']} tons of cargo."
    )

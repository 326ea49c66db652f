"""Fictopedia questions: one per entity, plus two-hop questions that chain two documents.

Each question knows its answers and its support documents, in the order they must be read.
A two-hop question is kept only when its answer is not in the first document and its key
phrase is not in the second, so that answering it really needs both.
"""

from __future__ import annotations

from dataclasses import dataclass

from rl_verifier_search_env.world import Entity, World, document_text


@dataclass(frozen=True)
class Question:
    kind: str
    text: str
    answers: tuple[str, ...]
    support: tuple[Entity, ...]
    key: str  # the phrase of the question that names the first document's subject

    @property
    def hops(self) -> int:
        return len(self.support)


def single_hop(entity: Entity) -> Question:
    """The direct question about one entity."""
    f, name = entity.facts, entity.name
    if entity.kind == "town":
        answers: tuple[str, ...] = (str(f["founded"]),)
        return Question(
            "town_founded", f"In what year was {name} founded?", answers, (entity,), name
        )
    if entity.kind == "inventor":
        answers = (str(f["invention"]), f"the {f['invention']}")
        return Question("invention", f"What did {name} invent?", answers, (entity,), name)
    if entity.kind == "river":
        km = f["length_km"]
        answers = (str(km), f"{km} km", f"{km} kilometres")
        return Question(
            "river_length",
            f"How long is the {name} River, in kilometres?",
            answers,
            (entity,),
            name,
        )
    return Question(
        "ship_builder", f"Who built the ship {name}?", (str(f["builder"]),), (entity,), name
    )


def two_hop(world: World) -> list[Question]:
    """Questions that need a bridge entity found in a first document."""
    towns = {t.name: t for t in world.towns}
    inventors = {i.name: i for i in world.inventors}
    rivers = {r.name: r for r in world.rivers}
    questions: list[Question] = []
    for town in world.towns:
        founder = inventors.get(str(town.facts["founder"]))
        if founder is not None:
            invention = str(founder.facts["invention"])
            questions.append(
                Question(
                    "founded_by_inventor_of",
                    "In what year was the town founded by the inventor of the "
                    f"{invention} founded?",
                    (str(town.facts["founded"]),),
                    (founder, town),
                    invention,
                )
            )
    for ship in world.ships:
        port = towns[str(ship.facts["home_port"])]
        river = rivers[str(port.facts["river"])].name
        questions.append(
            Question(
                "home_port_river",
                f"On which river does the home port of the ship {ship.name} lie?",
                (river, f"{river} River"),
                (ship, port),
                ship.name,
            )
        )
        builder = inventors[str(ship.facts["builder"])]
        questions.append(
            Question(
                "builder_born",
                f"In what year was the builder of the ship {ship.name} born?",
                (str(builder.facts["born"]),),
                (ship, builder),
                ship.name,
            )
        )
    return [q for q in questions if needs_both(q)]


def needs_both(question: Question) -> bool:
    """The answer is only in the last document and the key phrase only in the first."""
    first, last = (document_text(e).lower() for e in (question.support[0], question.support[-1]))
    answer = question.answers[0].lower()
    return answer in last and answer not in first and question.key.lower() not in last


def all_questions(world: World) -> list[Question]:
    """Single-hop questions in document order, then the two-hop ones."""
    return [single_hop(e) for e in world.entities()] + two_hop(world)

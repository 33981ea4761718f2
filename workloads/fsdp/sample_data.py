"""A generated text-to-SQL set shaped like gretel's synthetic_text_to_sql (the seed's dataset).

Same columns the trainer reads (``sql_prompt``, ``sql_context``, ``sql``), the same style of
context (CREATE TABLE plus INSERT rows) and a similar spread of lengths, so packing and padding
are measured on a realistic distribution without touching the hub.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

DOMAINS = {
    "forestry": ("timber_sales", ["volume REAL", "species TEXT", "sale_date DATE", "price DECIMAL(10,2)"]),
    "healthcare": ("patients", ["age INT", "gender TEXT", "diagnosis TEXT", "admission_date DATE"]),
    "energy": ("power_plants", ["capacity_mw REAL", "fuel_type TEXT", "country TEXT", "commissioned INT"]),
    "retail": ("orders", ["amount DECIMAL(10,2)", "customer_region TEXT", "order_date DATE", "channel TEXT"]),
    "education": ("students", ["grade INT", "school TEXT", "score REAL", "enrolled DATE"]),
    "aerospace": ("satellites", ["launch_year INT", "operator TEXT", "orbit TEXT", "mass_kg REAL"]),
    "agriculture": ("harvests", ["yield_tons REAL", "crop TEXT", "farm_region TEXT", "harvest_date DATE"]),
    "finance": ("transactions", ["value DECIMAL(12,2)", "currency TEXT", "branch TEXT", "txn_date DATE"]),
}
WORDS = ["North", "South", "East", "West", "Central", "Pine", "Oak", "Solar", "Wind", "Coal", "Online", "Store",
         "Alpha", "Beta", "LEO", "GEO", "Wheat", "Corn", "USD", "EUR", "Female", "Male", "Flu", "Asthma"]
NAMES = ["John Doe", "Jane Smith", "Ali Khan", "Mei Chen", "Olga Ivanova", "Carlos Ruiz", "Amara Obi"]


@dataclass(frozen=True)
class Column:
    name: str
    sql_type: str

    @property
    def is_numeric(self) -> bool:
        return self.sql_type.split("(")[0] in {"INT", "REAL", "DECIMAL"}


def _columns(spec: list[str]) -> list[Column]:
    return [Column(*item.split(" ", 1)) for item in spec]


def _literal(column: Column, rng: random.Random) -> str:
    if column.sql_type == "DATE":
        return f"'20{rng.randint(15, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}'"
    if column.sql_type == "INT":
        return str(rng.randint(1, 2024))
    if column.is_numeric:
        return f"{rng.uniform(1, 9999):.2f}"
    return f"'{rng.choice(WORDS)}'"


def _insert(table: str, columns: list[Column], rows: int, rng: random.Random) -> str:
    names = ", ".join(column.name for column in columns)
    values = ", ".join(
        "(" + ", ".join([str(row_id)] + [_literal(c, rng) for c in columns[1:]]) + ")" for row_id in range(1, rows + 1))
    return f"INSERT INTO {table} ({names}) VALUES {values};"


def _create(table: str, columns: list[Column]) -> str:
    return f"CREATE TABLE {table} ({', '.join(f'{c.name} {c.sql_type}' for c in columns)});"


def _question_and_query(table: str, owner: str, columns: list[Column], joined: bool,
                        rng: random.Random) -> tuple[str, str]:
    numeric = rng.choice([c for c in columns if c.is_numeric and not c.name.endswith("_id")])
    label = rng.choice([c for c in columns if not c.is_numeric and c.sql_type != "DATE"])
    function, word = rng.choice([("SUM", "total"), ("AVG", "average"), ("MAX", "maximum"), ("COUNT", "number of")])
    if joined:
        question = f"What is the {word} {numeric.name.replace('_', ' ')} for each {owner} name, by {label.name}?"
        query = (f"SELECT o.name, t.{label.name}, {function}(t.{numeric.name}) AS {word.split()[0]}_value "
                 f"FROM {table} t JOIN {owner} o ON t.{owner}_id = o.{owner}_id "
                 f"GROUP BY o.name, t.{label.name} ORDER BY {word.split()[0]}_value DESC;")
    else:
        threshold = _literal(numeric, rng)
        question = (f"Find the {word} {numeric.name.replace('_', ' ')} per {label.name.replace('_', ' ')} "
                    f"where it exceeds {threshold}.")
        query = (f"SELECT {label.name}, {function}({numeric.name}) FROM {table} WHERE {numeric.name} > {threshold} "
                 f"GROUP BY {label.name};")
    return question, query


def generate_sample(rng: random.Random) -> dict[str, str]:
    domain = rng.choice(sorted(DOMAINS))
    table, spec = DOMAINS[domain]
    owner = rng.choice(["salesperson", "manager", "supplier", "agency"])
    joined = rng.random() < 0.45
    columns = [Column(f"{table[:-1]}_id", "INT")] + ([Column(f"{owner}_id", "INT")] if joined else [])
    columns += rng.sample(_columns(spec), k=rng.randint(2, len(spec)))
    if not any(c.is_numeric and not c.name.endswith("_id") for c in columns):
        columns.append(_columns(spec)[0])
    if not any(not c.is_numeric and c.sql_type != "DATE" for c in columns):
        columns.append(Column("category", "TEXT"))
    context = [_create(table, columns), _insert(table, columns, rng.randint(1, 8), rng)]
    if joined:
        owners = [Column(f"{owner}_id", "INT"), Column("name", "TEXT")]
        names = ", ".join(f"({i}, '{rng.choice(NAMES)}')" for i in range(1, rng.randint(2, 4)))
        context += [_create(owner, owners), f"INSERT INTO {owner} ({owner}_id, name) VALUES {names};"]
    question, query = _question_and_query(table, owner, columns, joined, rng)
    return {"domain": domain, "sql_prompt": question, "sql_context": " ".join(context), "sql": query}


def generate_samples(count: int, seed: int = 0) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [{"id": index, **generate_sample(rng)} for index in range(count)]


def write_jsonl_dataset(directory: str | Path, count: int, seed: int = 0) -> Path:
    """Write ``train.jsonl`` into ``directory`` so ``datasets.load_dataset(directory)`` reads it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "train.jsonl"
    with path.open("w") as handle:
        for sample in generate_samples(count, seed):
            handle.write(json.dumps(sample) + "\n")
    return path

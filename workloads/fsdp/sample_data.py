"""A generated text-to-SQL set shaped like gretel's synthetic_text_to_sql (the seed's dataset).

Same columns the trainer reads (``sql_prompt``, ``sql_context``, ``sql``), the same style of context
(CREATE TABLE plus a few INSERT rows, a second table for joins) and gretel's mix of basic, aggregation and
single-join queries. Lengths are calibrated to the dataset card's own count, ~12M SQL tokens (context plus
query) over 105,851 records, about 113 per record, measured with Llama 3's tokenizer (a test holds this),
so packing and padding are compared on a realistic distribution without touching the hub.
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
WORDS = [
    "North",
    "South",
    "East",
    "West",
    "Central",
    "Pine",
    "Oak",
    "Solar",
    "Wind",
    "Coal",
    "Online",
    "Store",
    "Alpha",
    "Beta",
    "LEO",
    "GEO",
    "Wheat",
    "Corn",
    "USD",
    "EUR",
    "Female",
    "Male",
    "Flu",
    "Asthma",
]
# Gretel's contexts range from a bare CREATE TABLE to several rows of data; the spread matters to packing.
INSERT_ROWS = [0, 0, 0, 1, 2, 2, 3, 3, 3, 4, 4, 5, 6, 8, 10]
# From the dataset card: "105,851 records", "~23M total tokens, including ~12M SQL tokens".
CARD_RECORDS = 105_851
CARD_SQL_TOKENS = 12_000_000
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
        return f"'20{rng.randint(18, 23)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}'"
    if column.sql_type == "INT":
        return str(rng.randint(1, 500))
    if column.sql_type == "REAL":
        return f"{rng.uniform(1, 999):.1f}"
    if column.is_numeric:
        return f"{rng.uniform(1, 999):.2f}"
    return f"'{rng.choice(WORDS)}'"


def _insert(table: str, columns: list[Column], rows: int, rng: random.Random) -> str:
    names = ", ".join(column.name for column in columns)
    values = ", ".join(
        "(" + ", ".join([str(row_id)] + [_literal(c, rng) for c in columns[1:]]) + ")" for row_id in range(1, rows + 1)
    )
    return f"INSERT INTO {table} ({names}) VALUES {values};"


def _create(table: str, columns: list[Column]) -> str:
    return f"CREATE TABLE {table} ({', '.join(f'{c.name} {c.sql_type}' for c in columns)});"


def _words(name: str) -> str:
    return name.replace("_", " ")


def _basic(table: str, numeric: Column, label: Column, rng: random.Random) -> tuple[str, str]:
    value, threshold = _literal(label, rng), _literal(numeric, rng)
    if rng.random() < 0.5:
        question = (
            f"How many records in the {_words(table)} table have a {_words(label.name)} of {value} "
            f"and a {_words(numeric.name)} above {threshold}?"
        )
        return question, f"SELECT COUNT(*) FROM {table} WHERE {label.name} = {value} AND {numeric.name} > {threshold};"
    question = (
        f"List the {_words(numeric.name)} and {_words(label.name)} of all {_words(table)} whose "
        f"{_words(numeric.name)} is greater than {threshold}, highest first."
    )
    query = (
        f"SELECT {label.name}, {numeric.name} FROM {table} WHERE {numeric.name} > {threshold} "
        f"ORDER BY {numeric.name} DESC;"
    )
    return question, query


def _aggregation(table: str, numeric: Column, label: Column, rng: random.Random) -> tuple[str, str]:
    function, word = rng.choice([("SUM", "total"), ("AVG", "average"), ("MAX", "maximum"), ("MIN", "minimum")])
    alias = f"{word}_{numeric.name}"
    question = (
        f"What is the {word} {_words(numeric.name)} for each {_words(label.name)} in the {_words(table)} "
        f"table, sorted from highest to lowest?"
    )
    query = (
        f"SELECT {label.name}, {function}({numeric.name}) AS {alias} FROM {table} GROUP BY {label.name} "
        f"ORDER BY {alias} DESC;"
    )
    return question, query


def _single_join(table: str, owner: str, numeric: Column, rng: random.Random) -> tuple[str, str]:
    function, word = rng.choice([("SUM", "total"), ("AVG", "average"), ("COUNT", "number of")])
    alias = f"{word.split()[0]}_{numeric.name}"
    question = (
        f"What is the {word} {_words(numeric.name)} of {_words(table)} handled by each {owner}, "
        f"shown with the {owner}'s name?"
    )
    query = (
        f"SELECT o.name, {function}(t.{numeric.name}) AS {alias} FROM {table} t JOIN {owner} o "
        f"ON t.{owner}_id = o.{owner}_id GROUP BY o.name ORDER BY {alias} DESC;"
    )
    return question, query


def _manipulation(table: str, numeric: Column, label: Column, rng: random.Random) -> tuple[str, str]:
    value = _literal(label, rng)
    if rng.random() < 0.5:
        return (
            f"Delete {_words(table)} with {_words(label.name)} {value}.",
            f"DELETE FROM {table} WHERE {label.name} = {value};",
        )
    return (
        f"Set the {_words(numeric.name)} to {_literal(numeric, rng)} for {_words(table)} with id 3.",
        f"UPDATE {table} SET {numeric.name} = {_literal(numeric, rng)} WHERE id = 3;",
    )


SINGLE_TABLE_QUERIES = {"basic SQL": _basic, "aggregation": _aggregation, "data manipulation": _manipulation}


def generate_sample(rng: random.Random) -> dict[str, str]:
    domain = rng.choice(sorted(DOMAINS))
    table, spec = DOMAINS[domain]
    owner = rng.choice(["salesperson", "manager", "supplier", "agency"])
    complexity = rng.choices(
        ["basic SQL", "aggregation", "data manipulation", "single join"], weights=[40, 25, 15, 20]
    )[0]
    joined = complexity == "single join"
    columns = [Column("id", "INT")] + ([Column(f"{owner}_id", "INT")] if joined else [])
    columns += rng.sample(_columns(spec), k=rng.randint(1, len(spec)))
    if not any(c.is_numeric and c.name != "id" and not c.name.endswith("_id") for c in columns):
        columns.append(_columns(spec)[0])
    if not any(not c.is_numeric and c.sql_type != "DATE" for c in columns):
        columns.append(Column("category", "TEXT"))
    numeric = rng.choice([c for c in columns if c.is_numeric and c.name != "id" and not c.name.endswith("_id")])
    label = rng.choice([c for c in columns if not c.is_numeric and c.sql_type != "DATE"])
    context = [_create(table, columns)]
    rows = rng.choice(INSERT_ROWS) if complexity != "data manipulation" else rng.choice([0, 0, 1, 2])
    if rows:
        context.append(_insert(table, columns, rows, rng))
    if complexity in SINGLE_TABLE_QUERIES:
        question, query = SINGLE_TABLE_QUERIES[complexity](table, numeric, label, rng)
    else:
        names = ", ".join(f"({i}, '{rng.choice(NAMES)}')" for i in range(1, rng.randint(2, 3) + 1))
        context += [
            _create(owner, [Column(f"{owner}_id", "INT"), Column("name", "TEXT")]),
            f"INSERT INTO {owner} ({owner}_id, name) VALUES {names};",
        ]
        question, query = _single_join(table, owner, numeric, rng)
    return {
        "domain": domain,
        "sql_complexity": complexity,
        "sql_prompt": question,
        "sql_context": " ".join(context),
        "sql": query,
    }


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

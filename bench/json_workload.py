"""json_workload.py — the Python workload of `make bench`.

Builds nested documents (dicts, lists, strings, numbers), serializes them
with json.dumps, parses them back with json.loads and checks the round trip,
keeping a small cache of recent documents alive. Run it with
PYTHONMALLOC=malloc so every object allocation reaches malloc and the
profiler sees CPython's real allocation pattern.

usage: python3 json_workload.py [ROUNDS [SEED]]   (defaults 120, 1)
"""
import json
import random
import sys

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu "
         "nu xi omicron pi rho sigma tau upsilon phi chi psi omega").split()


def make_leaf(rng):
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randrange(-10**6, 10**6)
    if kind == 1:
        return rng.random() * 1000.0
    if kind == 2:
        return rng.choice((True, False, None))
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 12)))


def make_list(rng, depth):
    return [make_value(rng, depth - 1) for _ in range(rng.randrange(2, 7))]


def make_dict(rng, depth):
    return {"%s_%d" % (rng.choice(WORDS), i): make_value(rng, depth - 1)
            for i in range(rng.randrange(2, 7))}


def make_value(rng, depth):
    if depth <= 0 or rng.random() < 0.25:
        return make_leaf(rng)
    return make_dict(rng, depth) if rng.random() < 0.6 else make_list(rng, depth)


def make_document(rng, serial):
    return {
        "id": serial,
        "user": {"name": rng.choice(WORDS).title(), "tags": rng.sample(WORDS, 4)},
        "items": [make_value(rng, 4) for _ in range(rng.randrange(8, 24))],
        "meta": make_dict(rng, 3),
    }


def count_nodes(value):
    if isinstance(value, dict):
        return 1 + sum(count_nodes(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(count_nodes(v) for v in value)
    return 1


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    cache = []
    nodes = text_bytes = 0
    for serial in range(rounds):
        doc = make_document(rng, serial)
        compact = json.dumps(doc, separators=(",", ":"))
        pretty = json.dumps(doc, indent=2, sort_keys=True)
        back = json.loads(compact)
        if back != json.loads(pretty):
            sys.exit("json_workload: round trip mismatch at document %d" % serial)
        nodes += count_nodes(back)
        text_bytes += len(compact) + len(pretty)
        cache.append(back)
        if len(cache) > 64:
            cache.pop(rng.randrange(len(cache)))
    print("json_workload: rounds=%d nodes=%d text_bytes=%d cached=%d"
          % (rounds, nodes, text_bytes, len(cache)))


if __name__ == "__main__":
    main()

"""Checks embedded metric format lines (one JSON document a line).

Usage: emf_check.py SCHEMA LINES. Each line is validated against the
specification's JSON schema and the rules the schema leaves out (a directive's
references are root members: metrics numbers or arrays of at most 100
numbers, dimensions strings; at most 100 metrics a directive). Prints each
line's metric names, comma-separated, one line each; exits 1 naming the first
line that fails.
"""

import json
import numbers
import sys

import jsonschema


def refs_hold(doc):
    for directive in doc["_aws"]["CloudWatchMetrics"]:
        if len(directive["Metrics"]) > 100:
            return "more than 100 metrics in a directive"
        for dimension_set in directive["Dimensions"]:
            for name in dimension_set:
                if not isinstance(doc.get(name), str):
                    return f"dimension {name!r} is not a string member of the root"
        for metric in directive["Metrics"]:
            target = doc.get(metric["Name"])
            values = target if isinstance(target, list) else [target]
            if not values or len(values) > 100:
                return f"metric {metric['Name']!r} has {len(values)} values"
            for v in values:
                if isinstance(v, bool) or not isinstance(v, numbers.Number):
                    return f"metric {metric['Name']!r} is not numeric: {target!r}"
    return None


def main():
    schema = json.load(open(sys.argv[1]))
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    for number, line in enumerate(open(sys.argv[2]), 1):
        line = line.strip()
        if not line:
            continue
        try:
            doc = json.loads(line)
        except ValueError as e:
            sys.exit(f"line {number} is not JSON ({e}): {line}")
        if not isinstance(doc, dict):
            sys.exit(f"line {number} is not an object: {line}")
        errors = sorted(validator.iter_errors(doc), key=str)
        if errors:
            sys.exit(f"line {number}: {errors[0].message}: {line}")
        problem = refs_hold(doc)
        if problem:
            sys.exit(f"line {number}: {problem}: {line}")
        names = sorted({m["Name"] for d in doc["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]})
        print(",".join(names))


if __name__ == "__main__":
    main()

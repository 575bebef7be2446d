"""Child-process entry point: ``_worker.py CASE SIDE PARAMS_JSON`` runs one measurement.

It imports nothing beyond ``sys`` before the case's own ``measure()`` runs, so a cold-import
measurement sees a fresh interpreter. The result is printed as one JSON line.
"""

import sys


def main() -> None:
    case, side, raw = sys.argv[1], sys.argv[2], sys.argv[3]
    module = __import__(f"case_{case}")
    # json is imported by measure() only after its timed section, or here afterwards.
    params = _parse(raw)
    result = module.measure(side, params)
    import json

    sys.stdout.flush()
    print(json.dumps(result))


def _parse(raw: str) -> dict:
    # Parameters are flat JSON objects of numbers, strings, booleans and lists of those; parsing
    # them with ast keeps the json module (which SGLang's environ imports) out of the timed import.
    import ast

    text = raw.replace("true", "True").replace("false", "False").replace("null", "None")
    return ast.literal_eval(text)


if __name__ == "__main__":
    main()

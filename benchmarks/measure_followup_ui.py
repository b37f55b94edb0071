"""First visible follow-up through the UI on a running `interviewer serve` (the embedded model by default).

Start the app first (`interviewer serve --port 7999`), then:

    .venv/bin/python benchmarks/measure_followup_ui.py --url http://127.0.0.1:7999/ --think 40

It answers one inference-deep-dive question, waiting ``--think`` seconds before each answer as a candidate
would (the engine uses that time to send the next follow-up's prompt ahead), and prints the time from Send to
the first visible follow-up text and to the finished reply.
"""

from __future__ import annotations

import argparse
import time

from gradio_client import Client

ANSWERS = [
    "We quantize weights per channel symmetrically and activations per tensor asymmetrically, calibrating the "
    "range on a few hundred representative batches.",
    "I assume the calibration batches look like production traffic, so the chosen range covers real activations "
    "without clipping much.",
    "If traffic drifts, outliers get clipped or resolution is wasted, and accuracy drops on exactly the inputs "
    "we did not calibrate on.",
]


def _text(message: dict) -> str:
    content = message["content"]
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:7860/")
    parser.add_argument("--think", type=float, default=40.0, help="seconds before each answer")
    parser.add_argument("--round", default="inference-deep-dive")
    args = parser.parse_args()
    client = Client(args.url, verbose=False)
    chat, owner, *_ = client.predict(args.round, 1, False, None, api_name="/start")
    print(f"question: {_text(chat[-1])[:120]}")
    print("| answer | first visible follow-up s | whole reply s | follow-up |")
    print("| --- | --- | --- | --- |")
    for n, answer in enumerate(ANSWERS, 1):
        time.sleep(args.think)
        t0 = time.perf_counter()
        first = None
        job = client.submit(answer, owner, api_name="/send")
        for update in job:
            history = update[0]
            if (
                first is None
                and len(history) >= 2
                and _text(history[-2]).startswith(answer[:15])
                and _text(history[-1])
            ):
                first = time.perf_counter() - t0
        result = job.result()
        total = time.perf_counter() - t0
        shown = f"{first:.2f}" if first is not None else "n/a"
        print(f"| {n} | {shown} | {total:.2f} | {_text(result[0][-1])[:90]} |")


if __name__ == "__main__":
    main()

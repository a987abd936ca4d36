"""Shrink a diverging program by editing its recorded choice sequence.

Replaying a shorter or smaller choice sequence regenerates a program (missing choices read
as the lowest option, which is always the simplest one). A candidate is kept when it still
diverges with the same signature and is smaller in shortlex order.
"""
import ast
import re
import time

from . import grammar, runner


def signature(outcome):
    """A coarse class of a divergence, so shrinking does not wander to another bug."""
    d = outcome.detail
    m = re.search(r"compiled raised.*?\n.*?(\w+Error|\w+Exception)", d, re.S)
    if "compiled raised" in d:
        names = re.findall(r"^([\w.]+(?:Error|Exception|Warning))\b", d, re.M)
        return "compiled raised " + (names[-1] if names else "?")
    for tag in ("hang", "eager raised", "shares memory", "printed output", "argument", "escaped",
                "structure", "length", "keys", "dtype", "shape", "value"):
        if tag in d:
            return tag
    return m.group(1) if m else d.splitlines()[0][:40]


def _try(record, flags, sig):
    choices = grammar.RandomChoices(replay=record)
    try:
        program = grammar.generate(choices, flags)
    except Exception:  # noqa: BLE001 - a replay the generator cannot follow
        return None, None
    outcome = runner.run_program(program)
    if outcome.status == "diverged" and signature(outcome) == sig:
        return choices.record, outcome
    return None, None


def shrink(record, outcome, flags, seconds=60.0):
    sig = signature(outcome)
    best, best_out = list(record), outcome
    deadline = time.time() + seconds

    def better(cand):
        return (len(cand), cand) < (len(best), best)

    improved = True
    while improved and time.time() < deadline:
        improved = False
        candidates = []
        n = len(best)
        # cut the tail, then delete chunks, then zero and halve single choices
        for k in (n // 2, 3 * n // 4, n - 8):
            if 0 < k < n:
                candidates.append(best[:k])
        for size in (16, 8, 4, 2, 1):
            for i in range(0, n - size + 1, max(1, size // 2) if size > 1 else 1):
                candidates.append(best[:i] + best[i + size:])
        for i in range(n):
            if best[i]:
                candidates.append(best[:i] + [0] + best[i + 1:])
                if best[i] > 1:
                    candidates.append(best[:i] + [best[i] // 2] + best[i + 1:])
        for cand in candidates:
            if time.time() > deadline:
                break
            if not better(cand):
                continue
            rec, out = _try(cand, flags, sig)
            if rec is not None and better(rec):
                best, best_out = rec, out
                improved = True
                break
    return best_out


def _blocks(lines):
    """(start, end) of each statement with its indented body, innermost-last order reversed."""
    out = []
    for i, line in enumerate(lines):
        text = line.strip()
        if not text or text.startswith(("import ", "#", "def f(")) or re.match(r"w\d+ \+= 1$", text):
            continue  # (a while loop's counter step keeps the loop bounded)
        indent = len(line) - len(line.lstrip())
        j = i + 1
        while j < len(lines) and (not lines[j].strip()
                                  or len(lines[j]) - len(lines[j].lstrip()) > indent):
            j += 1
        out.append((i, j, indent))
    return out[::-1]


def shrink_source(outcome, seconds=30.0):
    """Delete statements (with their bodies) from the reproducer while it still diverges
    the same way; a deleted block whose parent would be empty becomes `pass`."""
    sig = signature(outcome)
    best = outcome
    deadline = time.time() + seconds
    improved = True
    while improved and time.time() < deadline:
        improved = False
        lines = best.program.source.splitlines()
        for start, end, indent in _blocks(lines):
            if time.time() > deadline:
                break
            for repl in ([], [" " * indent + "pass"]):
                if repl and lines[start].strip() == "pass":
                    continue
                cand_src = "\n".join(lines[:start] + repl + lines[end:]) + "\n"
                try:
                    ast.parse(cand_src)
                except SyntaxError:
                    continue
                p = best.program
                program = grammar.Program(cand_src, p.dtypes, p.flags, p.inexact, p.inputs)
                out = runner.run_program(program)
                if out.status == "diverged" and signature(out) == sig:
                    best = out
                    improved = True
                    break
            if improved:
                break
    return best

"""Differential program fuzzer: random small programs, compiled (`ag.function`) vs eager.

- grammar.py: the program generator (constructs listed in grammar.ALL_FLAGS plus the
  always-on core: if/while/for over tensors and Python values, break/continue/return,
  and/or/not/ternaries, augmented assignment, lists, dicts, print, closures, lambdas).
  grammar.KNOWN_DIVERGENT: constructs that still diverge on main; off in the CI slice.
- runner.py: runs a program eagerly and compiled on 4 argument sets, twice (past the
  native tier-up), and compares results, dtypes, structure, stdout, argument effects,
  output aliasing and exceptions.
- shrink.py: shrinks a divergence (choice sequence, then whole statements).
- test_fuzz.py: the fixed-seed CI slice (Hypothesis-driven and seeded).
- Long run, from the repository root:
      python -m tests.fuzz --programs 20000 --seed 1 --flags ci --jobs 2
  (`--flags all` adds the known-divergent constructs; `--help` for the rest).
"""

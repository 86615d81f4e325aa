"""Failures linked to fixes: resolved only by a pass of the same or a broader check, the fix is
the change before the first passing run, and the agent's own slips are never project errors."""

from __future__ import annotations

from .conftest import ClaudeLog

FAILING_TEST = "FAILED tests/test_cart.py::test_total - AssertionError: assert 1099 == 1100"


def test_narrow_failure_resolved_by_the_full_suite(log: ClaudeLog) -> None:
    (log.user("fix the rounding bug in the cart total")
     .bash("pytest tests/test_cart.py -k total", FAILING_TEST, fail=True)
     .read("shop/cart.py")
     .edit("shop/cart.py", "return round(total)", "return round(total, 2)")
     .bash("pytest", "120 passed in 3.1s")
     .reply("Fixed."))
    analysis = log.analyse()
    [error] = analysis.errors
    assert error.check == "pytest tests/test_cart.py -k total"
    assert error.status == "fixed"
    assert "AssertionError: assert 1099 == 1100" in error.error
    assert error.fix is not None and error.fix.path == "shop/cart.py"
    assert error.fix.essence == "`return round(total)` → `return round(total, 2)`"
    assert error.proved_by == "pytest"
    assert analysis.still_failing == []


def test_push_failure_resolved_by_push_with_upstream(log: ClaudeLog) -> None:
    (log.user("push the branch")
     .bash("git push", "fatal: The current branch feat has no upstream branch.", fail=True)
     .bash("git push --set-upstream origin feat", "branch 'feat' set up to track")
     .reply("Pushed."))
    [error] = log.analyse().errors
    assert error.status == "passed"  # no edit in between: nothing to credit
    assert error.fix is None
    assert error.proved_by == "git push --set-upstream origin feat"


def test_a_narrower_or_different_pass_does_not_resolve(log: ClaudeLog) -> None:
    (log.user("make the suite green")
     .bash("pytest tests/", "FAILED tests/test_a.py::test_x - KeyError: 'id'", fail=True)
     .edit("shop/a.py", "x = row['id']", "x = row.get('id')")
     .bash("pytest tests/test_b.py", "3 passed")       # narrower: does not cover tests/
     .bash("pytest tests/test_a.py -k other", "1 passed")  # different selection
     .reply("Still looking."))
    analysis = log.analyse()
    [error] = analysis.errors
    assert error.status == "still_failing"
    assert error.check == "pytest tests/"
    assert "KeyError" in error.error


def test_fix_is_the_change_before_the_first_pass(log: ClaudeLog) -> None:
    (log.user("fix the importer")
     .bash("npm test", "FAIL src/importer.test.ts\n  ● parses dates\n    TypeError: x is undefined",
           fail=True)
     .edit("src/util.ts", "const a = 1", "const a = 2")            # a try that did not help
     .bash("npm test", "TypeError: x is undefined", fail=True)
     .edit("README.md", "old words", "new words")                    # unrelated
     .edit("src/importer.ts", "function parse(x) {", "function parse(x = {}) {")
     .bash("npm test", "Tests: 42 passed")
     .edit("src/late.ts", "a", "b")                                  # after the pass
     .bash("npm test", "Tests: 42 passed")
     .reply("Done."))
    [error] = log.analyse().errors
    assert error.status == "fixed"
    assert error.failures == 2
    assert error.fix is not None and error.fix.path == "src/importer.ts"
    # only the changes after the error's last occurrence can have fixed it (issue 26): the
    # util.ts try came before the second failure, README.md after it
    assert error.other_changes == 1
    assert error.proved_by == "npm test"


def test_edited_symbol_is_the_essence(log: ClaudeLog) -> None:
    (log.user("fix the parser")
     .bash("pytest tests/test_parse.py", "E   ValueError: bad token", fail=True)
     .edit("shop/parse.py", "def parse_line(s):\n    return s.split()",
           "def parse_line(s):\n    return s.strip().split()")
     .bash("pytest tests/test_parse.py", "4 passed"))
    [error] = log.analyse().errors
    assert error.fix is not None and error.fix.essence == "changes `parse_line`"


def test_tool_slips_are_never_project_errors(log: ClaudeLog) -> None:
    (log.user("update the docs")
     .edit("README.md", "a", "b", error="File has not been read yet. Read it first before "
                                        "writing to it.")
     .edit("README.md", "zzz", "b", error="String to replace not found in file.")
     .result(log.call("Task", {"description": "x"}),
             "<tool_use_error>InputValidationError: Task failed due to the following issue:\n"
             "The required parameter `prompt` is missing</tool_use_error>", True)
     .read("README.md")
     .edit("README.md", "a", "b")
     .reply("Updated."))
    analysis = log.analyse()
    assert analysis.errors == []
    assert analysis.counts.slips == 3


def test_failed_exploration_and_empty_searches_are_not_errors(log: ClaudeLog) -> None:
    (log.user("look around")
     .bash("ls -la /home/dev/shop/missing", "ls: cannot access: No such file or directory",
           fail=True)
     .bash("tail -5 /tmp/claude/tasks/b1.output", "No such file", fail=True)
     .bash("grep -rn TODO src", "", fail=True)
     .bash("cat package.json", "{}")
     .reply("Nothing there."))
    analysis = log.analyse()
    assert analysis.errors == []
    assert analysis.commands == []
    assert analysis.counts.exploration_commands == 4
    assert analysis.counts.exploration_failures == 3


def test_rejected_calls_are_counted_not_errors(log: ClaudeLog) -> None:
    call = log.call("Bash", {"command": "npm publish"})
    log.result(call, "The user doesn't want to proceed with this tool use. The tool use was "
                     "rejected.", True)
    analysis = log.analyse()
    assert analysis.errors == []
    assert analysis.counts.rejected == 1


def test_repeated_failure_is_one_error_with_a_count(log: ClaudeLog) -> None:
    log.user("run the linter")
    for _ in range(5):
        log.bash("ruff check .", "src/a.py:1:1: F401 `os` imported but unused", fail=True)
    [error] = log.analyse().errors
    assert error.failures == 5
    assert error.status == "still_failing"


def test_a_passing_chain_resolves_each_check_in_it(log: ClaudeLog) -> None:
    (log.user("make mypy happy")
     .bash("mypy billing", "billing/tax.py:9: error: Incompatible types (float)", fail=True)
     .edit("billing/tax.py", "rate: float = 0.2", "rate: Decimal = Decimal('0.2')")
     .bash("ruff check . && mypy billing", "All checks passed!\nSuccess: no issues found"))
    [error] = log.analyse().errors
    assert error.status == "fixed" and error.check == "mypy billing"
    assert error.proved_by == "ruff check . && mypy billing"


def test_a_package_script_covers_the_runner_it_wraps(log: ClaudeLog) -> None:
    (log.user("fix the discount rounding")
     .bash('pnpm vitest run src/cart/discount.test.ts -t "rounds to cents"',
           "AssertionError: expected 999.5 to be 1000", fail=True)
     .edit("src/cart/discount.ts", "return price * rate", "return Math.round(price * rate)")
     .bash("pnpm test", "Tests  48 passed (48)"))
    [error] = log.analyse().errors
    assert error.status == "fixed" and error.proved_by == "pnpm test"


def test_fix_is_the_code_change_not_the_changelog(log: ClaudeLog) -> None:
    (log.user("prorating is off in leap years, please fix")
     .bash("python -m pytest tests/test_proration.py -k leap_year -q",
           "=================================== FAILURES ===================================\n"
           "____ test_prorate_leap_year ____\n>       assert prorate(36600) == 100\n"
           "E       assert 99 == 100\n\nbilling/proration.py:12: AssertionError", fail=True)
     .edit("billing/proration.py", "days = 365", "days = days_in_year(start.year)")
     .edit("CHANGELOG.md", "## Unreleased", "## Unreleased\n- Proration uses 366 days")
     .bash("python -m pytest -q", "64 passed"))
    [error] = log.analyse().errors
    assert error.error == "E assert 99 == 100"
    assert error.fix is not None and error.fix.path == "billing/proration.py"
    assert error.other_changes == 1


def test_the_specific_exception_line_is_the_error() -> None:
    from reverie.analysis.outcomes import error_summary

    output = ("ImportError while loading conftest '/repo/tests/conftest.py'.\n"
              "tests/conftest.py:3: in <module>\n    import psycopg\n"
              "E   ModuleNotFoundError: No module named 'psycopg'\n")
    assert error_summary(output) == "E ModuleNotFoundError: No module named 'psycopg'"


def test_the_projects_own_test_entry_point_covers_a_narrow_run(log: ClaudeLog) -> None:
    (log.user("add a /healthz endpoint")
     .bash("go test ./internal/api -run TestHealthz",
           "Chunk ID: 9b0f36\nWall time: 0.4 seconds\nProcess exited with code 1\n"
           "Output:\n--- FAIL: TestHealthz (0.00s)\n    health_test.go:18: status = 404, want 200"
           "\nFAIL", fail=True)
     .edit("internal/api/router.go", 'r.Get("/users/{id}", s.getUser)',
           'r.Get("/users/{id}", s.getUser)\nr.Get("/healthz", s.healthz)')
     .bash("make test", "ok  \trelay/internal/api\t0.398s"))
    [error] = log.analyse().errors
    assert error.status == "fixed" and error.proved_by == "make test"
    assert error.error == "--- FAIL: TestHealthz (0.00s)"  # not the agent's "Chunk ID" header


GO_BUILD_FAILED = (
    "go test ./...\n# shop/internal/api\n"
    "internal/api/users.go:41:19: q.GetUserByEmail undefined (type *db.Queries has no field or "
    "method GetUserByEmail)\nFAIL\tshop/internal/api [build failed]\n"
    "ok  \tshop/internal/db\t0.01s\nFAIL"
)


def test_a_code_generator_run_is_the_fix(log: ClaudeLog) -> None:
    """Stale generated code: no edit made the tests pass, ``sqlc generate`` did (and the error
    is the compiler's line, not Go's ``[build failed]`` summary)."""
    (log.user("go test is red on main")
     .bash("make test", GO_BUILD_FAILED, fail=True)
     .read("queries/users.sql")
     .bash("sqlc generate", "")
     .bash("make test", "ok  \tshop/internal/api\t0.02s")
     .reply("Regenerated; green."))
    analysis = log.analyse()
    [error] = analysis.errors
    assert error.status == "fixed"
    assert error.error.startswith("internal/api/users.go:41:19: q.GetUserByEmail undefined")
    assert error.fix is not None and error.fix.command == "sqlc generate"
    assert error.fix.path == ""
    assert error.proved_by == "make test"
    assert [(c.category.value, c.working) for c in analysis.commands
            if c.category.value == "generate"] == [("generate", "sqlc generate")]


def test_an_edit_after_the_generator_is_credited_over_it(log: ClaudeLog) -> None:
    (log.user("fix the build")
     .bash("go build ./...", "internal/api/users.go:41:19: undefined: db.User", fail=True)
     .bash("go generate ./...", "")
     .edit("internal/api/users.go", "db.User", "db.Account")
     .bash("go build ./...", ""))
    [error] = log.analyse().errors
    assert error.fix is not None and error.fix.path == "internal/api/users.go"
    assert error.fix.command is None
    assert error.other_changes == 1


def test_an_added_dependency_is_the_fix(log: ClaudeLog) -> None:
    (log.user("the tests don't even start")
     .bash("uv run pytest -q", "E   ModuleNotFoundError: No module named 'psycopg'", fail=True)
     .bash("uv add 'psycopg[binary]'", "Resolved 24 packages in 0.4s")
     .bash("uv run pytest -q", "52 passed in 2.1s"))
    [error] = log.analyse().errors
    assert error.status == "fixed"
    assert error.fix is not None and error.fix.command == "uv add 'psycopg[binary]'"
    assert "ModuleNotFoundError" in error.error

"""The labelled set for memory staleness (issue 28): workspace changes over the evaluation
projects, and which facts of each project's gold memory each change makes stale.

Each project gets a working tree consistent with its gold memory (``fixtures/eval/<p>/gold``),
built as a real git repository with dulwich in a temp dir and committed. A case applies one
change a developer makes — a rename, a deletion, a script removal, a dependency swap, a symbol
rename, a config change, or an unrelated edit that must leave every fact alone — commits it (or
leaves it uncommitted), and names the facts it makes stale by a unique piece of their text.
Every fact not named must not be reported stale.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dulwich import porcelain

EVAL = Path(__file__).resolve().parents[1] / "fixtures" / "eval"
AUTHOR = b"Maya <maya@example.com>"


class GitWorkspace:
    """A real git repository in a temp dir, changed file by file and committed with dulwich."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.repo = porcelain.init(str(root))
        self._pending: set[str] = set()
        self.commits = 0

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self._pending.add(rel)

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8")

    def edit(self, rel: str, old: str, new: str) -> None:
        text = self.read(rel)
        assert old in text, f"{old!r} not in {rel}"
        self.write(rel, text.replace(old, new))

    def edit_json(self, rel: str, change: Callable[[dict], None]) -> None:
        data = json.loads(self.read(rel))
        change(data)
        self.write(rel, json.dumps(data, indent=2) + "\n")

    def delete(self, rel: str) -> None:
        path = self.root / rel
        if path.is_dir():
            files = [p for p in path.rglob("*") if p.is_file()]
            porcelain.remove(self.repo, paths=[str(p) for p in files])
            shutil.rmtree(path, ignore_errors=True)
        else:
            porcelain.remove(self.repo, paths=[str(path)])
        self._pending.discard(rel)

    def move(self, old: str, new: str) -> None:
        """``git mv`` a file or a folder (file by file: dulwich moves tracked files)."""
        source = self.root / old
        pairs = [(p, self.root / new / p.relative_to(source)) for p in sorted(source.rglob("*"))
                 if p.is_file()] if source.is_dir() else [(source, self.root / new)]
        for src, dst in pairs:
            dst.parent.mkdir(parents=True, exist_ok=True)
            porcelain.mv(self.repo, str(src), str(dst))
        if source.is_dir():
            shutil.rmtree(source, ignore_errors=True)

    def commit(self, message: str = "change") -> None:
        if self._pending:
            porcelain.add(self.repo, paths=[str(self.root / p) for p in sorted(self._pending)
                                            if (self.root / p).exists()])
            self._pending.clear()
        porcelain.commit(self.repo, message=message.encode(), author=AUTHOR, committer=AUTHOR)
        self.commits += 1

    def stage(self) -> None:
        """``git add`` what was written, without committing."""
        if self._pending:
            porcelain.add(self.repo, paths=[str(self.root / p) for p in sorted(self._pending)])
            self._pending.clear()


def _pkg(**extra: object) -> str:
    data: dict[str, object] = {
        "name": "acme-web", "private": True, "type": "module",
        "scripts": {"build": "tsc -b && vite build", "test": "vitest run",
                    "lint": "eslint . && prettier --check .", "dev": "vite"},
        "dependencies": {"react": "^18.3.1", "react-dom": "^18.3.1",
                         "@tanstack/react-query": "^5.51.0", "zustand": "^4.5.0"},
        "devDependencies": {"vite": "^5.3.0", "vitest": "^2.0.0", "typescript": "^5.5.0",
                            "eslint": "^9.7.0", "prettier": "^3.3.0"},
    }
    data.update(extra)
    return json.dumps(data, indent=2) + "\n"


TREES: dict[str, dict[str, str]] = {
    "acme-web": {
        "package.json": _pkg(),
        "pnpm-lock.yaml": "lockfileVersion: '9.0'\nimporters: {}\n",
        ".gitignore": "node_modules\ndist\n.env.local\n",
        "README.md": "# acme-web\n\nThe shop front.\n",
        "tsconfig.json": json.dumps({"compilerOptions": {
            "strict": True, "jsx": "react-jsx", "baseUrl": ".",
            "paths": {"@/*": ["src/*"]}}}, indent=2) + "\n",
        "vite.config.ts": (
            "import { defineConfig } from 'vite'\nimport react from '@vitejs/plugin-react'\n"
            "import path from 'node:path'\n\nexport default defineConfig({\n"
            "  plugins: [react()],\n"
            "  resolve: { alias: { '@': path.resolve(__dirname, 'src') } },\n"
            "  server: { port: 5173, strictPort: true },\n})\n"),
        "src/main.tsx": (
            "import React from 'react'\nimport ReactDOM from 'react-dom/client'\n"
            "import { QueryClient, QueryClientProvider } from '@tanstack/react-query'\n"
            "import { App } from './App'\n\nconst client = new QueryClient()\n"
            "ReactDOM.createRoot(document.getElementById('root')!).render(\n"
            "  <QueryClientProvider client={client}><App /></QueryClientProvider>)\n"),
        "src/App.tsx": (
            "import { useBasket } from '@/store/basket'\n"
            "import { applyDiscount } from '@/lib/discount'\n\nexport function App() {\n"
            "  const basket = useBasket()\n  return <p>{applyDiscount(basket.total, 10)}</p>\n}\n"),
        "src/store/basket.ts": (
            "import { create } from 'zustand'\n\nexport const useBasket = create(() => "
            "({ total: 0, items: [] as string[] }))\n"),
        "src/lib/discount.ts": (
            "/** Percentage discount on an amount in cents, rounded to whole cents. */\n"
            "export function applyDiscount(cents: number, percent: number): number {\n"
            "  return Math.round(cents * (100 - percent) / 100)\n}\n"),
        "src/api/client.ts": "export const api = (path: string) => fetch(`/api${path}`)\n",
    },
    "billing-rules": {
        "pyproject.toml": (
            '[project]\nname = "billing-rules"\nversion = "0.3.0"\nrequires-python = ">=3.11"\n'
            'dependencies = []\n\n[project.optional-dependencies]\n'
            'test = ["pytest>=8"]\ndev = ["ruff>=0.6", "mypy>=1.10"]\n'),
        "README.md": "# billing-rules\n\nInvoice maths.\n",
        "billing/__init__.py": "",
        "billing/tax.py": (
            "from decimal import Decimal\nimport tomllib\nfrom pathlib import Path\n\n"
            "RATES = tomllib.loads((Path(__file__).parent / 'rates.toml').read_text())\n\n\n"
            "def vat(cents: int, country: str) -> int:\n"
            "    rate = Decimal(str(RATES[country]))\n"
            "    return int((Decimal(cents) * rate).quantize(Decimal('1')))\n"),
        "billing/rates.toml": "DE = 0.19\nFR = 0.20\nCH = 0.081\n",
        "billing/invoice.py": (
            "from decimal import ROUND_HALF_UP, Decimal\n\n\n"
            "def total(lines: list[int]) -> int:\n"
            "    return int(Decimal(sum(lines)).quantize(Decimal('1'), rounding=ROUND_HALF_UP))\n"),
        "billing/proration.py": (
            "import calendar\n\n\ndef days_in_year(year: int) -> int:\n"
            "    return 366 if calendar.isleap(year) else 365\n\n\n"
            "def prorate(cents: int, days: int, year: int) -> int:\n"
            "    return cents * days // days_in_year(year)\n"),
        "tests/test_tax.py": "from billing.tax import vat\n\n\ndef test_de():\n"
                             "    assert vat(100, 'DE') == 19\n",
    },
    "ledger-api": {
        "pyproject.toml": (
            '[project]\nname = "ledger"\nversion = "0.1.0"\nrequires-python = ">=3.12"\n'
            'dependencies = [\n  "fastapi>=0.111",\n  "sqlalchemy>=2.0",\n  "alembic>=1.13",\n'
            '  "celery>=5.4",\n  "redis>=5.0",\n  "structlog>=24.1",\n'
            '  "psycopg[binary]>=3.1",\n]\n\n[dependency-groups]\n'
            'dev = ["pytest>=8", "ruff>=0.5"]\n'),
        "uv.lock": "version = 1\nrequires-python = \">=3.12\"\n",
        "compose.yaml": ("services:\n  db:\n    image: postgres:16\n    ports: ['5432:5432']\n"
                         "  redis:\n    image: redis:7\n"),
        "alembic.ini": "[alembic]\nscript_location = migrations\n",
        "src/ledger/__init__.py": "",
        "src/ledger/tasks.py": (
            "from celery import Celery\n\napp = Celery('ledger', broker='redis://localhost:6379/0')"
            "\n\n\n@app.task\ndef send_invoice_email(invoice_id: int) -> None:\n    ...\n"),
        "src/ledger/invoices.py": (
            "import structlog\n\nlog = structlog.get_logger()\n\n\n"
            "def compute_invoice_total(lines: list[int]) -> int:\n"
            "    log.info('total', lines=len(lines))\n    return sum(lines)\n"),
        "migrations/versions/0004_currency.py": (
            "def upgrade():\n    op.add_column('invoices', sa.Column('currency', sa.String(3), "
            "nullable=False, server_default='EUR'))\n"),
        "tests/test_invoices.py": "from ledger.invoices import compute_invoice_total\n",
    },
    "relay": {
        "go.mod": ("module github.com/maya/relay\n\ngo 1.22\n\nrequire (\n"
                   "\tgithub.com/jackc/pgx/v5 v5.6.0\n)\n"),
        "Makefile": (".PHONY: test lint generate\n\ntest:\n\tgo test ./...\n\n"
                     "lint:\n\tgolangci-lint run\n\ngenerate:\n\tsqlc generate\n"),
        "sqlc.yaml": ("version: '2'\nsql:\n  - queries: queries\n    schema: schema.sql\n"
                      "    gen: {go: {package: db, out: internal/repo/db}}\n"),
        "queries/users.sql": ("-- name: GetUserByEmail :one\n"
                              "SELECT * FROM users WHERE email = $1;\n"),
        "schema.sql": "CREATE TABLE users (id bigserial primary key, email text not null);\n",
        "internal/repo/db/users.sql.go": "package db\n\nfunc (q *Queries) GetUserByEmail() {}\n",
        "internal/repo/repo.go": ("package repo\n\n"
                                  "import \"github.com/maya/relay/internal/repo/db\"\n"
                                  "\nvar _ = db.New\n"),
        "internal/http/respond.go": (
            "package http\n\nimport (\n\t\"encoding/json\"\n\tnethttp \"net/http\"\n)\n\n"
            "func writeJSON(w nethttp.ResponseWriter, v any) error {\n"
            "\treturn json.NewEncoder(w).Encode(v)\n}\n"),
        "cmd/relay/main.go": ("package main\n\nimport \"log/slog\"\n\n"
                              "func main() { slog.Info(\"up\") }\n"),
    },
    "handbook": {
        "requirements.txt": "mkdocs>=1.6\nmkdocs-material>=9.5\n",
        "mkdocs.yml": ("site_name: Handbook\nnav:\n  - Home: index.md\n  - Install: install.md\n"
                       "  - How-to:\n      - Setup: how-to/setup.md\n"),
        "netlify.toml": ('[build]\ncommand = "mkdocs build --strict"\npublish = "site"\n\n'
                         '[build.environment]\nPYTHON_VERSION = "3.12"\n'),
        ".gitignore": "site/\n",
        "docs/index.md": "# Handbook\n",
        "docs/install.md": "# Install\n",
        "docs/how-to/setup.md": "# Setup\n\nSee [install](../install.md).\n",
        "docs/assets/img/editor.png": "PNG placeholder\n",
    },
}


@dataclass
class Case:
    """One workspace change and the facts (pieces of their text) it makes stale."""

    id: str
    project: str
    kind: str
    change: Callable[[GitWorkspace], None]
    stale: tuple[str, ...] = ()
    commit: bool = True
    notes: str = ""
    expected: set[str] = field(default_factory=set)


def _del_script(name: str) -> Callable[[GitWorkspace], None]:
    return lambda ws: ws.edit_json("package.json", lambda d: d["scripts"].pop(name))


def _swap_npm(ws: GitWorkspace) -> None:
    ws.delete("pnpm-lock.yaml")
    ws.write("package-lock.json", '{"lockfileVersion": 3}\n')


def _swap_vitest(ws: GitWorkspace) -> None:
    def change(data: dict) -> None:
        data["devDependencies"].pop("vitest")
        data["devDependencies"]["jest"] = "^29.7.0"
        data["scripts"]["test"] = "jest"
    ws.edit_json("package.json", change)


def _rename_dev(ws: GitWorkspace) -> None:
    def change(data: dict) -> None:
        data["scripts"]["start"] = data["scripts"].pop("dev")
    ws.edit_json("package.json", change)


def _swap_swr(ws: GitWorkspace) -> None:
    def change(data: dict) -> None:
        data["dependencies"].pop("@tanstack/react-query")
        data["dependencies"]["swr"] = "^2.2.5"
    ws.edit_json("package.json", change)
    ws.write("src/main.tsx", "import React from 'react'\nimport ReactDOM from 'react-dom/client'\n"
                             "import { SWRConfig } from 'swr'\nimport { App } from './App'\n\n"
                             "ReactDOM.createRoot(document.getElementById('root')!).render(\n"
                             "  <SWRConfig><App /></SWRConfig>)\n")


def _rename_symbol(rel: str, old: str, new: str, *others: str) -> Callable[[GitWorkspace], None]:
    def change(ws: GitWorkspace) -> None:
        for path in (rel, *others):
            ws.write(path, ws.read(path).replace(old, new))
    return change


def _pyproject_swap(old: str, new: str) -> Callable[[GitWorkspace], None]:
    return lambda ws: ws.edit("pyproject.toml", old, new)


def _swap_uv(ws: GitWorkspace) -> None:
    ws.delete("uv.lock")
    ws.write("poetry.lock", "# poetry lock\n")


def _swap_celery(ws: GitWorkspace) -> None:
    ws.edit("pyproject.toml", '"celery>=5.4"', '"dramatiq[redis]>=1.17"')
    ws.write("src/ledger/tasks.py", "import dramatiq\n\n\n@dramatiq.actor\n"
                                    "def send_invoice_email(invoice_id: int) -> None:\n    ...\n")


def _swap_structlog(ws: GitWorkspace) -> None:
    ws.edit("pyproject.toml", '"structlog>=24.1"', '"loguru>=0.7"')
    ws.write("src/ledger/invoices.py", "from loguru import logger as log\n\n\n"
                                       "def compute_invoice_total(lines: list[int]) -> int:\n"
                                       "    log.info('total')\n    return sum(lines)\n")


def _swap_sphinx(ws: GitWorkspace) -> None:
    ws.write("requirements.txt", "sphinx>=7.3\nfuro>=2024.5\n")
    ws.write("netlify.toml", ws.read("netlify.toml").replace("mkdocs build --strict",
                                                              "sphinx-build docs site"))


def _orphan_branch_without_discount(ws: GitWorkspace) -> None:
    """``git checkout --orphan other`` and a first commit there without the discount helper:
    a branch that never had it (nothing established: not stale)."""
    ws.delete("src/lib/discount.ts")
    ws.write("src/App.tsx", "export function App() {\n  return null\n}\n")
    ws.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/other")  # the next commit is a root


def _shallow_after_deleting(ws: GitWorkspace) -> None:
    """The commit that deleted ``billing/tax.py`` is cut off by a shallow clone."""
    ws.delete("billing/tax.py")
    ws.commit("delete tax")
    ws.write("README.md", "# billing-rules\n\nInvoice maths, v2.\n")
    ws.commit("later")
    (ws.root / ".git" / "shallow").write_text(ws.repo.head().decode() + "\n")


def _unrelated_acme(ws: GitWorkspace) -> None:
    ws.write("src/components/Header.tsx", "export const Header = () => <h1>Acme</h1>\n")
    ws.edit("README.md", "The shop front.", "The shop front, built with Vite.")
    ws.edit_json("package.json", lambda d: d["scripts"].update({"format": "prettier -w ."}))


A, B, L, R, H = "acme-web", "billing-rules", "ledger-api", "relay", "handbook"
PNPM_FACTS = ("Use pnpm, never npm", "`pnpm build`", "`pnpm test`", "**Lint:** `pnpm lint`",
              "`pnpm dev`", "Run `pnpm lint` before")
UV_FACTS = ("Use uv for everything", "`uv run pytest -q`", "`uv run ruff check .`",
            "`uv run alembic revision", "`uv run celery", "`uv add 'psycopg[binary]'`")

CASES: list[Case] = [
    # --- acme-web --------------------------------------------------------------------------
    Case("acme-npm-swap", A, "dependency swap", _swap_npm, PNPM_FACTS),
    Case("acme-build-script-removed", A, "script removal", _del_script("build"), ("`pnpm build`",)),
    Case("acme-vitest-to-jest", A, "dependency swap", _swap_vitest, ("`pnpm test`",)),
    Case("acme-lint-script-removed", A, "script removal", _del_script("lint"),
         ("**Lint:** `pnpm lint`", "Run `pnpm lint` before")),
    Case("acme-dev-renamed-start", A, "script removal", _rename_dev, ("`pnpm dev`",)),
    Case("acme-alias-removed", A, "config change",
         lambda ws: ws.edit("vite.config.ts",
                            "  resolve: { alias: { '@': path.resolve(__dirname, 'src') } },\n", ""),
         ("TS2307",)),
    Case("acme-port-changed", A, "config change",
         lambda ws: ws.edit("vite.config.ts", "port: 5173", "port: 3000"), ("port 5173",)),
    Case("acme-tanstack-to-swr", A, "dependency swap", _swap_swr,
         ("with a QueryClientProvider", "Data fetching uses TanStack Query. (formerly"),
         notes="the team note names no package (\"TanStack Query\"): not checkable"),
    Case("acme-basket-file-renamed", A, "rename",
         lambda ws: (ws.move("src/store/basket.ts", "src/store/cart.ts"),
                     ws.edit("src/App.tsx", "@/store/basket", "@/store/cart")),
         ("renamed to `useBasket`",)),
    Case("acme-basket-file-renamed-uncommitted", A, "rename",
         lambda ws: ws.move("src/store/basket.ts", "src/store/cart.ts"),
         ("renamed to `useBasket`",), commit=False),
    Case("acme-useBasket-renamed", A, "symbol rename",
         _rename_symbol("src/store/basket.ts", "useBasket", "useCart", "src/App.tsx"),
         ("renamed to `useBasket`",)),
    Case("acme-applyDiscount-renamed", A, "symbol rename",
         _rename_symbol("src/lib/discount.ts", "applyDiscount", "applyCoupon", "src/App.tsx"),
         ("applyDiscount rounds",)),
    Case("acme-discount-file-moved", A, "rename (symbol kept)",
         lambda ws: (ws.move("src/lib/discount.ts", "src/pricing/discount.ts"),
                     ws.edit("src/App.tsx", "@/lib/discount", "@/pricing/discount"))),
    Case("acme-unrelated", A, "unrelated", _unrelated_acme),
    Case("acme-orphan-branch", A, "branch switch", _orphan_branch_without_discount,
         notes="a branch that never had discount.ts: unverifiable, never stale"),
    Case("acme-tsconfig-paths-removed", A, "config change",
         lambda ws: ws.edit("tsconfig.json", '"paths"', '"typeRoots"'), ("TS2307",)),
    # --- billing-rules ----------------------------------------------------------------------
    Case("billing-pytest-dropped", B, "dependency swap",
         _pyproject_swap('test = ["pytest>=8"]', 'test = ["ward>=0.68"]'),
         ("`python -m pytest -q`",)),
    Case("billing-package-renamed", B, "rename",
         lambda ws: ws.move("billing", "billing_core"),
         ("mypy billing", "billing/tax.py", "billing/rates.toml")),
    Case("billing-tax-deleted", B, "deletion", lambda ws: ws.delete("billing/tax.py"),
         ("billing/tax.py", "billing/rates.toml")),
    Case("billing-tax-deleted-uncommitted", B, "deletion", lambda ws: ws.delete("billing/tax.py"),
         ("billing/tax.py", "billing/rates.toml"), commit=False),
    Case("billing-half-even", B, "symbol rename",
         _rename_symbol("billing/invoice.py", "ROUND_HALF_UP", "ROUND_HALF_EVEN"),
         ("ROUND_HALF_UP",)),
    Case("billing-rates-moved", B, "rename",
         lambda ws: ws.move("billing/rates.toml", "billing/data/rates.toml"),
         ("billing/rates.toml",)),
    Case("billing-days-in-year-renamed", B, "symbol rename",
         _rename_symbol("billing/proration.py", "days_in_year", "year_length"),
         ("`days_in_year`",)),
    Case("billing-deps-reordered", B, "unrelated",
         _pyproject_swap('dev = ["ruff>=0.6", "mypy>=1.10"]', 'dev = ["mypy>=1.11", "ruff>=0.7"]')),
    Case("billing-test-added", B, "unrelated",
         lambda ws: ws.write("tests/test_proration.py", "def test_leap():\n    assert True\n")),
    Case("billing-shallow-clone", B, "shallow clone", _shallow_after_deleting, commit=False,
         notes="the deleting commit is past the shallow cut: unverifiable, never stale"),
    Case("billing-ruff-dropped", B, "dependency swap",
         _pyproject_swap('"ruff>=0.6", ', '"flake8>=7", '), ("mypy billing",)),
    # --- ledger-api -------------------------------------------------------------------------
    Case("ledger-structlog-to-loguru", L, "dependency swap", _swap_structlog,
         ("structlog logger",)),
    Case("ledger-total-renamed", L, "symbol rename",
         _rename_symbol("src/ledger/invoices.py", "compute_invoice_total", "invoice_grand_total",
                        "tests/test_invoices.py"),
         ("`compute_invoice_total()`",)),
    Case("ledger-celery-to-dramatiq", L, "dependency swap", _swap_celery,
         ("run on Celery", "`uv run celery")),
    Case("ledger-uv-to-poetry", L, "dependency swap", _swap_uv, UV_FACTS),
    Case("ledger-db-service-renamed", L, "script removal",
         lambda ws: ws.edit("compose.yaml", "  db:\n", "  postgres:\n"), ("`uv run pytest -q`",)),
    Case("ledger-ruff-to-flake8", L, "dependency swap",
         _pyproject_swap('"ruff>=0.5"', '"flake8>=7.0"'), ("`uv run ruff check .`",)),
    Case("ledger-psycopg-to-asyncpg", L, "dependency swap",
         _pyproject_swap('"psycopg[binary]>=3.1"', '"asyncpg>=0.29"'), ("No module named",)),
    Case("ledger-tasks-moved", L, "rename",
         lambda ws: ws.move("src/ledger/tasks.py", "src/ledger/jobs.py"), ("`uv run celery",)),
    Case("ledger-migration-added", L, "unrelated",
         lambda ws: ws.write("migrations/versions/0005_due_date.py", "def upgrade():\n    ...\n")),
    Case("ledger-alembic-dropped", L, "dependency swap",
         _pyproject_swap('  "alembic>=1.13",\n', ""), ("`uv run alembic revision",)),
    # --- relay ------------------------------------------------------------------------------
    Case("relay-test-target-renamed", R, "script removal",
         lambda ws: ws.edit("Makefile", "\ntest:\n", "\ncheck:\n"),
         ("**Test:** `make test`", "GetUserByEmail")),
    Case("relay-lint-target-removed", R, "script removal",
         lambda ws: ws.edit("Makefile", "lint:\n\tgolangci-lint run\n\n", ""),
         ("`make lint`",)),
    Case("relay-queries-moved", R, "rename",
         lambda ws: ws.move("queries", "sql/queries"), ("generated from queries",)),
    Case("relay-writeJSON-renamed", R, "symbol rename",
         _rename_symbol("internal/http/respond.go", "writeJSON", "respondJSON"), ("writeJSON",)),
    Case("relay-repo-renamed", R, "rename",
         lambda ws: ws.move("internal/repo", "internal/storage"),
         ("internal/store was renamed", "generated from queries")),
    Case("relay-handler-added", R, "unrelated",
         lambda ws: ws.write("internal/http/health.go", "package http\n\nfunc health() {}\n")),
    # --- handbook ---------------------------------------------------------------------------
    Case("handbook-to-sphinx", H, "dependency swap", _swap_sphinx,
         ("**Build:** `mkdocs build --strict`", "Netlify builds")),
    Case("handbook-install-renamed", H, "rename",
         lambda ws: ws.move("docs/install.md", "docs/installation.md"), ("broken link",)),
    Case("handbook-netlify-removed", H, "deletion", lambda ws: ws.delete("netlify.toml"),
         ("Netlify builds",)),
    Case("handbook-how-to-renamed", H, "rename",
         lambda ws: ws.move("docs/how-to", "docs/guides"), ("renamed to How-to",)),
    Case("handbook-mkdocs-yml-renamed", H, "rename",
         lambda ws: ws.move("mkdocs.yml", "mkdocs.yaml"), ("nav in mkdocs.yml",)),
    Case("handbook-img-moved", H, "rename",
         lambda ws: ws.move("docs/assets/img", "docs/images"), ("docs/assets/img",)),
    Case("handbook-page-added", H, "unrelated",
         lambda ws: ws.write("docs/how-to/deploy.md", "# Deploy\n")),
    Case("handbook-python-version-bumped", H, "config change",
         lambda ws: ws.edit("netlify.toml", '"3.12"', '"3.13"'), ("Netlify builds",)),
]


def build_project(project: str, root: Path) -> tuple[GitWorkspace, Path]:
    """The project's working tree (committed) and a copy of its gold memory."""
    ws = GitWorkspace(root / "repo")
    for rel, text in TREES[project].items():
        ws.write(rel, text)
    ws.commit("initial")
    memory = root / "memory"
    shutil.copytree(EVAL / project / "gold", memory)
    return ws, memory


PROJECTS = (A, B, L, R, H)


@dataclass
class CaseResult:
    case: Case
    expected: set[str]  # fact keys labelled stale
    reported: set[str]  # fact keys reported stale
    texts: dict[str, str]
    reasons: dict[str, str]
    base_stale: set[str]

    @property
    def missed(self) -> set[str]:
        return self.expected - self.reported

    @property
    def false_stale(self) -> set[str]:
        return (self.reported - self.expected) | self.base_stale


def run_case(case: Case, root: Path, mode: str = "recorded") -> CaseResult:
    """Build the project, record anchors as a dream would (``recorded``) or not (``fresh``:
    extracted at check time, as for a hand-written memory), apply the change, check.
    ``cached``: as ``recorded``, every check through one check cache (``anchors.cache``), so
    the check after the change starts from what the checks before it cached."""
    from datetime import date

    from reverie.anchors.memory import check_memory
    from reverie.anchors.retire import maintain_memory

    ws, memory = build_project(case.project, root)
    cache = root / "data" / "check-cache.json" if mode == "cached" else None
    today = date(2026, 12, 1)
    before = check_memory(memory, ws.root, today, cache=cache)
    base_stale = {f.fact.key for f in before.facts if f.status == "stale"}
    if mode in ("recorded", "cached"):
        maintain_memory(memory, ws.root, today, cache=cache)
    case.change(ws)
    if case.commit:
        ws.commit(case.id)
    else:
        ws.stage()
    after = check_memory(memory, ws.root, today, cache=cache)
    texts = {f.fact.key: "\n".join(f.fact.lines) for f in after.facts}
    expected: set[str] = set()
    for piece in case.stale:
        keys = [k for k, text in texts.items() if piece in text]
        assert len(keys) == 1, f"{case.id}: label {piece!r} matches {len(keys)} facts"
        expected.add(keys[0])
    reported = {f.fact.key for f in after.facts if f.status == "stale"}
    reasons = {f.fact.key: f.reason for f in after.facts}
    return CaseResult(case, expected, reported, texts, reasons, base_stale)


def score(results: list[CaseResult]) -> dict[str, float]:
    expected = sum(len(r.expected) for r in results)
    found = sum(len(r.expected & r.reported) for r in results)
    return {"cases": len(results), "labelled_stale": expected, "found": found,
            "recall": found / expected if expected else 1.0,
            "false_stale": sum(len(r.false_stale) for r in results)}

"""Prompt-time recall carries only facts that are valid or unverifiable (issue 28, delivery):
``reverie hook user-prompt-submit`` in a fresh process, against a real index, before and after
the code moves on (no dream in between: the memory still states the old fact)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.config import ProjectPaths, Settings
from reverie.search.update import refresh

PROV = "_(session 0a1b2c3d, 2026-11-02)_"
TOPIC = (
    "---\nname: Pricing\ndescription: where the money code lives\ntype: project\n---\n\n"
    "# Pricing\n\n"
    f"- Discount maths: `applyDiscount` in `src/lib/money.ts` rounds to whole cents. {PROV}\n"
    "- Coupon codes: `validateCoupon` in `src/lib/coupons.ts` rejects expired coupon codes. "
    f"{PROV}\n"
    f"- Discount banners use sentence case. {PROV}\n")
INDEX = ("# Memory\n\n- [Pricing](pricing.md) - discount maths: `applyDiscount` in "
         "`src/lib/money.ts`; coupon codes checked by `validateCoupon`\n")


def _hook(prompt: str, cwd: Path, data_dir: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "reverie", "hook", "user-prompt-submit", "--data-dir",
         str(data_dir)], capture_output=True, text=True, timeout=60, check=False,
        input=json.dumps({"session_id": "now", "cwd": str(cwd), "prompt": prompt,
                          "hook_event_name": "UserPromptSubmit"}))
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        return ""
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


def test_a_fact_gone_stale_since_the_last_dream_is_not_recalled(
        reverie_env: dict[str, Path], tmp_path: Path) -> None:
    ws = GitWorkspace((tmp_path / "shop").resolve())
    ws.write("src/lib/money.ts", "export function applyDiscount(c: number) { return c }\n")
    ws.write("src/lib/coupons.ts", "export function validateCoupon(code: string) {}\n")
    ws.commit("init")
    paths = ProjectPaths(Settings(), ws.root)
    paths.memory_dir.mkdir(parents=True)
    (paths.memory_dir / "pricing.md").write_text(TOPIC)
    (paths.memory_dir / "MEMORY.md").write_text(INDEX)
    refresh(paths)
    data = reverie_env["data"]

    before = _hook("how does applyDiscount round the discount maths", ws.root, data)
    assert "applyDiscount" in before and "whole cents" in before, before
    coupons = _hook("which function validates expired coupon codes", ws.root, data)
    assert "validateCoupon" in coupons, coupons

    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.write("src/lib/currency.ts", "export function applyRebate(c: number) { return c }\n")
    ws.commit("money.ts becomes currency.ts; applyDiscount is applyRebate now")
    after = _hook("how does applyDiscount round the discount maths", ws.root, data)
    assert "whole cents" not in after, after
    assert "src/lib/money.ts" not in after, after  # nor the index entry that states it
    # the facts still true are recalled as before
    assert "validateCoupon" in _hook("which function validates expired coupon codes",
                                     ws.root, data)
    # and the memory itself is untouched: retiring is a dream's recorded run
    assert (paths.memory_dir / "pricing.md").read_text() == TOPIC

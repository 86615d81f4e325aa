"""Anchors: what a memory fact depends on that can be checked against the working tree.

A fact such as "`pnpm build` (tsc -b && vite build)" depends on the ``build`` script of
``package.json``; "The cart store hook is `useBasket` (src/store/basket.ts)" on a file and a
symbol. ``extract`` finds those anchors in a fact's text, resolved against the workspace (a word
that merely looks like a path is not an anchor); ``validate`` checks them again later, offline,
and says ``valid``, ``stale`` (with the reason, a rename found through git history) or
``unverifiable`` (no anchor, or the check could not establish the answer). ``memory`` runs that
over a memory dir; ``retire`` moves stale facts to their topic's retired section.
"""

"""`topology.svg`: the domain tree with capacity, planned demand and the models that must stay
inside a domain, readable from a 4-node dev cluster to 10,000 nodes.

Tiers are nested blocks: each domain's children are wrapped in rows inside it, so the picture
grows in both directions and keeps an aspect ratio near 1.6 (between 1:2 and 3:1) at any size,
at a natural size where no text is smaller than 11 px. Domains of the lowest tier with at most
`MAX_TILES` domains are drawn as tiles; when leaves are too many to draw legibly, each tile
stands for a whole subtree: its totals, its fullest leaves named, and every leaf that is short of
capacity or holds a hard-constrained model drawn inside it. A bar in every block shows hard-
(dark) and soft-constrained (light) demand against the domain's accelerators, as the joint
placement plan places it; a domain where replicas the stack requires find no room is outlined in
red, one where only an autoscaler's peak finds none in dashed amber (`config.spec.placement`).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from config.spec.platform import PlatformSpec
from config.spec.topology import Domain, Topology
from offline.demand import DomainDemand, domain_demand

MIN_FONT = 11
"""No text is smaller than this at the picture's natural size (px)."""
MAX_TILES = 64
"""Most domains drawn as tiles; below that, subtrees are summarised in their tile."""
ASPECT = 1.6
INNER_ASPECT = 1.0
"""Blocks inside a picture of many tiles are squarer, so that the picture can wrap them into its
own shape; with few tiles they are as wide as the picture."""
FEW_TILES, WIDE_ASPECT = 16, 2.5
MAX_WIDTH = 2000
"""Widest natural size preferred: wider pictures are seen scaled down, below the minimum font."""
TILE_W, TILE_H = 220, 96
SUMMARY_W, SUMMARY_H = 240, 122
MINI_W, MINI_H = 105, 34
PAD, GAP, HEADER, TITLE_H, MIN_WIDTH = 10, 10, 50, 80, 560
LEGEND_ROWS = 48
LEGEND_W, LINE_H = 440, 18
HARD, SOFT, FREE, SHORT, INK, MUTED = "#b03a2e", "#f0a04b", "#e8eef4", "#d62728", "#222", "#555"
TIGHT = "#c77c02"
"""The outline of a domain where only an autoscaler's peak (or an unproven shortage) finds no room."""
CHAR_W = 0.6
"""Average glyph width of the sans-serif font, in font sizes (for cutting labels to fit)."""


@dataclass
class Block:
    """A laid-out domain (or the cluster): a container of child blocks, a tile, or a mini tile."""

    name: str
    kind: str  # "cluster", "container", "tile", "summary", "mini"
    width: float = 0.0
    height: float = 0.0
    x: float = 0.0
    y: float = 0.0
    children: list[Block] = field(default_factory=list)


Extra = Callable[[float], float] | None


def _rows(children: list[Block], row_limit: float) -> tuple[list[tuple[float, float]], float, float]:
    """Positions of `children` wrapped in rows of at most `row_limit` px; the width used and the
    height."""
    places: list[tuple[float, float]] = []
    x = y = row_height = used = 0.0
    for child in children:
        if x and x + child.width > row_limit:
            y += row_height + GAP
            x = row_height = 0.0
        places.append((x, y))
        x += child.width + GAP
        used = max(used, x - GAP)
        row_height = max(row_height, child.height)
    return places, used, y + row_height


def _fit(text: str, width: float, size: int) -> str:
    """`text`, cut with an ellipsis to fit `width` px at font `size`."""
    room = int(width / (size * CHAR_W))
    return text if len(text) <= room else text[: max(room - 1, 1)] + "…"


class _Picture:
    def __init__(self, spec: PlatformSpec, topology: Topology):
        self.spec = spec
        self.topology = topology
        self.demand = domain_demand(spec)
        self.words = spec.accelerator.words
        self.hard: dict[str, list[str]] = defaultdict(list)
        for placement in spec.placements.values():
            if placement.mode == "hard":
                for domain in placement.planned_gpus:
                    self.hard[domain].append(placement.model)
        # With pools, each pool is a domain one tier above the top (`Topology.pool_tier`) and the
        # cluster one above that.
        self.cluster_tier = topology.pool_tier + 1 if topology.pools else topology.top_tier + 1
        counts = {tier: len(topology.at_tier(tier)) for tier in range(1, self.cluster_tier)}
        fitting = [tier for tier, count in counts.items() if count <= MAX_TILES]
        # The lowest tier drawn tile by tile; past the top tier, the cluster itself is the tile.
        self.unit_tier = min(fitting) if fitting else self.cluster_tier
        self.tiles = counts.get(self.unit_tier, 1)
        self.inner_aspect = WIDE_ASPECT if self.tiles <= FEW_TILES else INNER_ASPECT

    # -- what each domain says ------------------------------------------------------------------

    def short(self, name: str) -> bool:
        return self.demand[name].status != "ok"

    def notable(self, domain: Domain) -> bool:
        """Always drawn and named: short of capacity, or holding a hard-constrained model."""
        return self.short(domain.name) or bool(self.hard.get(domain.name))

    def leaves_under(self, name: str | None) -> list[Domain]:
        roots = [d.name for d in self.topology.roots] if name is None else [name]
        out: list[Domain] = []
        stack = list(reversed(roots))
        while stack:
            domain = self.topology.domains[stack.pop()]
            if domain.tier == 1:
                out.append(domain)
            stack.extend(reversed(domain.children))
        return out

    # -- layout ----------------------------------------------------------------------------------

    def block(self, domain: Domain | None) -> Block:
        tier = domain.tier if domain is not None else self.cluster_tier
        name = domain.name if domain is not None else self.spec.cluster_name
        if tier == self.unit_tier:
            if tier == 1:
                return Block(name, "tile", TILE_W, TILE_H)
            minis = [
                Block(leaf.name, "mini", MINI_W, MINI_H)
                for leaf in self.leaves_under(domain.name if domain else None)
                if self.notable(leaf)
            ]
            block = Block(name, "summary", children=minis)
            self._flow(block, SUMMARY_W, SUMMARY_H, top=SUMMARY_H - PAD)
            return block
        children = self.topology.roots if domain is None else [self.topology.domains[c] for c in domain.children]
        block = Block(name, "cluster" if domain is None else "container", children=[self.block(c) for c in children])
        if domain is None:
            self._flow(block, MIN_WIDTH, 0, top=0, extra=lambda width: TITLE_H + self.legend_height(width) + PAD)
        else:
            self._flow(block, TILE_W + 2 * PAD, 0, top=HEADER)
        return block

    def _flow(self, block: Block, min_width: float, min_height: float, top: float, extra: Extra = None) -> None:
        """Wrap the children in rows below a header of `top` px, choosing the row width that makes
        the block (plus whatever `extra` adds for a given width: the title and the legend) closest
        to ASPECT times as wide as high."""
        if not block.children:
            block.width, block.height = min_width, max(min_height, top + PAD)
            return
        best: tuple[float, float, list[tuple[float, float]], float, float] | None = None
        widest = max(c.width for c in block.children)
        for columns in range(1, len(block.children) + 1):
            row_limit = max(columns * (widest + GAP) - GAP, min_width - 2 * PAD)
            places, used, height = _rows(block.children, row_limit)
            width = max(min_width, used + 2 * PAD)
            height = max(min_height, top + height + PAD)
            total = height + (extra(width) if extra else 0)
            target = ASPECT if extra else self.inner_aspect
            # The picture stays between 1:2 and 3:1, and no wider than MAX_WIDTH unless nothing
            # narrower can keep that.
            outside = width > MAX_WIDTH or (extra is not None and not 0.5 <= width / total <= 3)
            score = abs(math.log(width / total / target)) + (10 if outside else 0)
            if best is None or score < best[0]:
                best = (score, width, places, height, row_limit)
            if used < row_limit - widest:  # more columns than children fill: wider changes nothing
                break
        assert best is not None
        _, block.width, places, block.height, _ = best
        for child, (x, y) in zip(block.children, places, strict=True):
            child.x, child.y = x + PAD, y + top

    # -- drawing ---------------------------------------------------------------------------------

    def layout(self) -> tuple[Block, float, float]:
        """The laid-out cluster and the picture's size. Blocks are first shaped by the number of
        tiles (wide rows for a few, squarer blocks for many); if the picture then falls outside
        1:2 to 3:1 or MAX_WIDTH, squarer and then taller blocks are tried."""
        first = self.inner_aspect
        tried: list[tuple[float, Block, float, float]] = []
        for aspect in dict.fromkeys((first, ASPECT, INNER_ASPECT, 0.6)):
            self.inner_aspect = aspect
            block = self.block(None)
            width = max(block.width, MIN_WIDTH)
            height = TITLE_H + block.height + self.legend_height(width) + PAD
            if 0.5 <= width / height <= 3 and width <= MAX_WIDTH:
                return block, width, height
            tried.append((abs(math.log(width / height / ASPECT)), block, width, height))
        _, block, width, height = min(tried, key=lambda t: t[0])
        return block, width, height

    def draw(self) -> str:
        root_block, width, height = self.layout()
        svg = ET.Element(
            "svg",
            xmlns="http://www.w3.org/2000/svg",
            width=f"{width:.0f}",
            height=f"{height:.0f}",
            attrib={"font-family": "sans-serif", "viewBox": f"0 0 {width:.0f} {height:.0f}"},
        )
        title = ET.SubElement(svg, "title")
        title.text = f"Network topology of {self.spec.cluster_name}"
        topology = self.topology
        heading = f"{self.spec.cluster_name}: {self.node_count(None)} nodes, {topology.total_gpus} {self.words}" + (
            f"; pools {', '.join(topology.pools)}" if topology.pools else ""
        )
        _text(svg, PAD, 22, _fit(heading, width - 2 * PAD, 16), 16, "bold", anchor="start")
        keys = [
            f"bars: {self.words} planned for hard- (dark) and soft-constrained (light) models",
            "red: no room for required replicas; dashed amber: none at peak"
            + (
                f"; {len(topology.at_tier(1))} leaves summarised per tier-{self.unit_tier} domain"
                if self.unit_tier > 1
                else ""
            ),
        ]
        for i, key in enumerate(keys):
            _text(svg, PAD, 44 + 16 * i, _fit(key, width - 2 * PAD, 12), 12, anchor="start", fill=MUTED)
        self.draw_block(svg, root_block, 0, TITLE_H)
        self.draw_legend(svg, width, TITLE_H + root_block.height + PAD)
        ET.indent(svg)
        return ET.tostring(svg, encoding="unicode") + "\n"

    def legend_columns(self, width: float) -> int:
        return max(1, int((width - 2 * PAD) // LEGEND_W))

    def legend_height(self, width: float) -> float:
        lines = self.legend
        if not lines:
            return 0.0
        return (1 + math.ceil(len(lines) / self.legend_columns(width))) * LINE_H + PAD

    def draw_legend(self, svg: ET.Element, width: float, top: float) -> None:
        lines = self.legend
        if not lines:
            return
        _text(
            svg,
            PAD,
            top + 14,
            "Hard-constrained models (must stay inside one domain of the tier):",
            12,
            "bold",
            "start",
        )
        columns = self.legend_columns(width)
        per_column = math.ceil(len(lines) / columns)
        column_w = (width - 2 * PAD) / columns
        for i, line in enumerate(lines):
            column, row = divmod(i, per_column)
            x, y = PAD + column * column_w, top + 14 + LINE_H * (row + 1)
            _text(svg, x, y, _fit(line, column_w - GAP, 12), 12, anchor="start")

    def draw_block(self, parent: ET.Element, block: Block, left: float, top: float) -> None:
        x, y = left + block.x, top + block.y
        if block.kind == "cluster":
            for child in block.children:
                self.draw_block(parent, child, x, y)
            return
        domain = self.topology.domains.get(block.name)
        group = ET.SubElement(parent, "g", attrib={"class": f"domain {block.kind}", "data-name": block.name})
        demand = self.demand.get(block.name, DomainDemand(0, 0))
        gpus = domain.gpus if domain is not None else self.topology.total_gpus
        short = demand.status != "ok"
        stroke, line, dashes = {"short": (SHORT, "3", None), "tight": (TIGHT, "3", "6 3")}.get(
            demand.status, (MUTED, "1", None)
        )
        tooltip = ET.SubElement(group, "title")
        tooltip.text = self.describe(block.name, domain, demand, gpus)
        fill = "#f7f9fb" if block.kind == "container" else "white"
        ET.SubElement(
            group,
            "rect",
            x=f"{x:.0f}",
            y=f"{y:.0f}",
            width=f"{block.width:.0f}",
            height=f"{block.height:.0f}",
            rx="6",
            fill=fill,
            stroke=stroke,
            attrib={"stroke-width": line, **({"stroke-dasharray": dashes} if dashes else {})},
        )
        inner = block.width - 2 * PAD
        if block.kind == "mini":
            _text(group, x + 6, y + 14, _fit(block.name, block.width - 12, MIN_FONT), MIN_FONT, "bold", "start")
            _bar(group, x + 6, y + 20, block.width - 12, 8, demand, gpus)
            return
        _text(group, x + PAD, y + 18, _fit(block.name, inner, 13), 13, "bold", "start")
        info = f"{self.tier_word(domain)} · {self.node_count(domain)} nodes · {gpus} {self.words}"
        _text(group, x + PAD, y + 33, _fit(info, inner, MIN_FONT), MIN_FONT, anchor="start", fill=MUTED)
        _bar(group, x + PAD, y + 39, inner, 8, demand, gpus)
        if block.kind == "container":
            for child in block.children:
                self.draw_block(group, child, x, y)
            return
        status = f"needs {demand.total} of {gpus} {self.words}" + (f" — {demand.status.upper()}" if short else "")
        _text(group, x + PAD, y + 62, _fit(status, inner, MIN_FONT), MIN_FONT, "bold" if short else "normal", "start")
        hard = sorted(set(self.hard.get(block.name, ())))
        if hard:
            shown = ", ".join(hard[:2]) + (f" +{len(hard) - 2}" if len(hard) > 2 else "")
            _text(group, x + PAD, y + 78, _fit(f"hard: {shown}", inner, MIN_FONT), MIN_FONT, anchor="start", fill=HARD)
        if block.kind == "summary":
            leaves = self.leaves_under(domain.name if domain is not None else None)
            fullest = sorted(
                (leaf for leaf in leaves if self.demand[leaf.name].total),
                key=lambda leaf: -self.demand[leaf.name].total / max(leaf.gpus, 1),
            )[:2]
            line = f"{len(leaves)} leaves" + (
                "; fullest " + ", ".join(f"{leaf.name} {self._percent(leaf)}" for leaf in fullest) if fullest else ""
            )
            _text(group, x + PAD, y + 94, _fit(line, inner, MIN_FONT), MIN_FONT, anchor="start")
            for child in block.children:
                self.draw_block(group, child, x, y)

    def _percent(self, leaf: Domain) -> str:
        return f"{100 * self.demand[leaf.name].total // max(leaf.gpus, 1)}%"

    def tier_word(self, domain: Domain | None) -> str:
        """`tier N`, or `pool` for a pool's own domain (one above the top tier), or `cluster`."""
        if domain is None:
            return "cluster"
        return "pool" if domain.tier > self.topology.top_tier else f"tier {domain.tier}"

    def node_count(self, domain: Domain | None) -> int:
        return domain.node_count if domain is not None else sum(count for _, count in self.topology.capacity)

    def describe(self, name: str, domain: Domain | None, demand: DomainDemand, gpus: int) -> str:
        where = self.tier_word(domain)
        if domain is not None and domain.tier <= self.topology.top_tier:
            where += f", {self.topology.tiers[domain.tier - 1]}"
        nodes = self.node_count(domain)
        text = f"{name} ({where}): {nodes} nodes, {gpus} {self.words}; planned {demand.hard} hard + {demand.soft} soft"
        hard = sorted(set(self.hard.get(name, ())))
        return text + (f"; hard-constrained: {', '.join(hard)}" if hard else "")

    @cached_property
    def legend(self) -> list[str]:
        lines = []
        placements = sorted((p for p in self.spec.placements.values() if p.mode == "hard"), key=lambda p: p.model)
        for placement in placements:
            model = self.spec.models[placement.model]
            leaves = [d for d in placement.planned_gpus if self.topology.domains[d].tier == (placement.tier or 1)]
            where = ", ".join(sorted(leaves)[:4]) + (f" +{len(leaves) - 4}" if len(leaves) > 4 else "")
            tier = self.topology.tiers[(placement.tier or 1) - 1]
            lines.append(
                f"{placement.model}: {placement.replicas} × {model.gang.pods} pods, tier {placement.tier} "
                f"({tier}) → {where or 'nowhere'}"
            )
        if len(lines) > LEGEND_ROWS:
            lines = [*lines[: LEGEND_ROWS - 1], f"... and {len(lines) - LEGEND_ROWS + 1} more (summary.md lists them)"]
        return lines


def _text(
    parent: ET.Element,
    x: float,
    y: float,
    content: str,
    size: int = 12,
    weight: str = "normal",
    anchor: str = "middle",
    fill: str = INK,
) -> None:
    el = ET.SubElement(
        parent,
        "text",
        x=f"{x:.0f}",
        y=f"{y:.0f}",
        attrib={"font-size": str(max(size, MIN_FONT)), "font-weight": weight, "text-anchor": anchor, "fill": fill},
    )
    el.text = content


def _bar(parent: ET.Element, x: float, y: float, width: float, height: int, demand: DomainDemand, gpus: int) -> None:
    """Free capacity as the background, hard then soft demand over it, to one scale."""
    scale = width / max(gpus, demand.total, 1)
    segments = [(x, width, FREE), (x, demand.hard * scale, HARD), (x + demand.hard * scale, demand.soft * scale, SOFT)]
    for left, length, fill in segments:
        if length > 0:
            ET.SubElement(
                parent, "rect", x=f"{left:.1f}", y=f"{y:.0f}", width=f"{length:.1f}", height=str(height), fill=fill
            )


def render_svg(spec: PlatformSpec) -> str:
    topology = spec.topology
    if topology is None:
        root = ET.Element("svg", xmlns="http://www.w3.org/2000/svg", width="420", height="60", viewBox="0 0 420 60")
        _text(root, 210, 35, "This stack describes no network topology.", 14)
        return ET.tostring(root, encoding="unicode")
    return _Picture(spec, topology).draw()

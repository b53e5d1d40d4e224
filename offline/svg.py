"""`topology.svg`: the domain tree with capacity and the GPUs big models are planned to use.

Leaves sit on the bottom row in config order, each parent centred over its children. A bar in
every box shows hard- (dark) and soft-constrained (light) demand against the domain's GPUs; a
domain whose demand exceeds its GPUs is outlined in red, so a short leaf stands out at a glance.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from config.spec import PlatformSpec
from offline.demand import DomainDemand, domain_demand

BOX_W, BOX_H, GAP_X, ROW_H, MARGIN, MIN_WIDTH = 200, 78, 24, 120, 24, 560
HARD, SOFT, FREE, SHORT = "#b03a2e", "#f0a04b", "#e8eef4", "#d62728"


def _text(parent: ET.Element, x: float, y: float, content: str, size: int = 12, weight: str = "normal") -> None:
    el = ET.SubElement(
        parent,
        "text",
        x=f"{x:.0f}",
        y=f"{y:.0f}",
        attrib={"font-size": str(size), "font-weight": weight, "text-anchor": "middle"},
    )
    el.text = content


def render_svg(spec: PlatformSpec) -> str:
    topology = spec.topology
    if topology is None:
        root = ET.Element("svg", xmlns="http://www.w3.org/2000/svg", width="420", height="60")
        _text(root, 210, 35, "This stack describes no network topology.", 14)
        return ET.tostring(root, encoding="unicode")
    demand = domain_demand(spec)
    leaves = [d for d in topology.domains.values() if d.tier == 1]
    order = {name: i for i, name in enumerate(_leaf_order(spec))}
    tree_width = max(len(leaves), 1) * (BOX_W + GAP_X) - GAP_X
    width = max(MARGIN * 2 + tree_width, MIN_WIDTH)
    left = (width - tree_width) / 2  # centre a narrow tree under the title
    x_of: dict[str, float] = {}
    for leaf in leaves:
        x_of[leaf.name] = left + order[leaf.name] * (BOX_W + GAP_X)
    for tier in range(2, topology.top_tier + 1):
        for domain in topology.at_tier(tier):
            xs = [x_of[c] for c in domain.children if c in x_of]
            x_of[domain.name] = sum(xs) / len(xs) if xs else left
    header = 56
    height = MARGIN * 2 + header + (topology.top_tier - 1) * ROW_H + BOX_H

    def y_of(tier: int) -> float:
        return MARGIN + header + (topology.top_tier - tier) * ROW_H

    root = ET.Element(
        "svg",
        xmlns="http://www.w3.org/2000/svg",
        width=str(width),
        height=str(height),
        attrib={"font-family": "sans-serif", "viewBox": f"0 0 {width} {height}"},
    )
    title = ET.SubElement(root, "title")
    title.text = f"Network topology of {spec.cluster_name}"
    words = spec.accelerator.words
    summary = f"{spec.cluster_name}: {len(topology.node_gpus)} nodes, {topology.total_gpus} {words}"
    _text(root, width / 2, MARGIN + 12, summary, 14, "bold")
    _text(
        root, width / 2, MARGIN + 32, f"bars: {words} planned for hard- (dark) and soft-constrained (light) models", 12
    )
    for domain in topology.domains.values():
        if domain.parent is not None:
            ET.SubElement(
                root,
                "line",
                x1=f"{x_of[domain.parent] + BOX_W / 2:.0f}",
                y1=f"{y_of(domain.tier + 1) + BOX_H:.0f}",
                x2=f"{x_of[domain.name] + BOX_W / 2:.0f}",
                y2=f"{y_of(domain.tier):.0f}",
                stroke="#888",
            )
    for domain in topology.domains.values():
        _box(
            root,
            x_of[domain.name],
            y_of(domain.tier),
            domain.name,
            domain.tier,
            topology.tiers[domain.tier - 1],
            domain.node_count,
            domain.gpus,
            demand[domain.name],
            words,
        )
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def _leaf_order(spec: PlatformSpec) -> list[str]:
    assert spec.topology is not None
    order: list[str] = []

    def visit(name: str) -> None:
        domain = spec.topology.domains[name]  # type: ignore[union-attr]
        if domain.tier == 1:
            order.append(name)
        for child in domain.children:
            visit(child)

    for domain in spec.topology.at_tier(spec.topology.top_tier):
        visit(domain.name)
    return order


def _box(
    root: ET.Element,
    x: float,
    y: float,
    name: str,
    tier: int,
    label: str,
    nodes: int,
    gpus: int,
    demand: DomainDemand,
    words: str,
) -> None:
    short = demand.total > gpus
    group = ET.SubElement(root, "g", attrib={"class": "domain", "data-name": name})
    tooltip = ET.SubElement(group, "title")
    tooltip.text = (
        f"{name} (tier {tier}, {label}): {nodes} nodes, {gpus} {words}; planned {demand.hard} hard + {demand.soft} soft"
    )
    ET.SubElement(
        group,
        "rect",
        x=f"{x:.0f}",
        y=f"{y:.0f}",
        width=str(BOX_W),
        height=str(BOX_H),
        rx="6",
        fill="white",
        stroke=SHORT if short else "#555",
        attrib={"stroke-width": "3" if short else "1"},
    )
    _text(group, x + BOX_W / 2, y + 18, name, 13, "bold")
    _text(group, x + BOX_W / 2, y + 34, f"tier {tier} · {nodes} nodes · {gpus} {words}", 11)
    bar_x, bar_y, bar_w = x + 10, y + 44, BOX_W - 20
    ET.SubElement(group, "rect", x=f"{bar_x:.0f}", y=f"{bar_y:.0f}", width=f"{bar_w:.0f}", height="10", fill=FREE)
    scale = bar_w / max(gpus, demand.total, 1)
    ET.SubElement(
        group, "rect", x=f"{bar_x:.0f}", y=f"{bar_y:.0f}", width=f"{demand.hard * scale:.1f}", height="10", fill=HARD
    )
    ET.SubElement(
        group,
        "rect",
        x=f"{bar_x + demand.hard * scale:.1f}",
        y=f"{bar_y:.0f}",
        width=f"{demand.soft * scale:.1f}",
        height="10",
        fill=SOFT,
    )
    status = f"needs {demand.total} of {gpus} {words}" + (" — SHORT" if short else "")
    _text(group, x + BOX_W / 2, y + 70, status, 11, "bold" if short else "normal")

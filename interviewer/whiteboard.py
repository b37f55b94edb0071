"""The design whiteboard: read a Mermaid flowchart, compare it with the rubric's expected parts, pick a follow-up.

Pure logic, no UI. The candidate writes the architecture as Mermaid flowchart text; :func:`parse` turns it into a
:class:`Diagram` (nodes with labels, edges), refusing oversized or unreadable input with an :class:`InputError`
that says what to fix. :func:`compare` matches node labels against the question's authored
:class:`~interviewer.content.ExpectedComponent` aliases and lists what is present, missing and questionable;
:func:`next_question` picks one authored follow-up from that review, deterministically. :func:`as_text` is the
diagram for a prompt (the candidate's labels fenced as data), :func:`render_markdown` what the panel shows, and
:func:`report_markdown` the final diagram with what was missing, for the feedback report.

Gradio's Markdown renders a fenced ``mermaid`` block as an SVG with the Mermaid library it ships in its own
frontend bundle (loaded from the app's server, never a CDN). The panel is fed a diagram re-emitted from the
parsed one, never the candidate's raw text, so a label cannot smuggle markup or Mermaid directives into it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from interviewer.content import Question
from interviewer.errors import InputError
from interviewer.scoring.guard import fence, screen

MAX_CHARS = 8_000  # a whiteboard design is a few dozen boxes, not a document
MAX_NODES = 60
MAX_EDGES = 150
MAX_LABEL = 120
DIRECTIONS = ("TD", "TB", "BT", "LR", "RL")

# Node shapes, longest opener first so "[(" wins over "[". Each maps to the closers Mermaid accepts for it.
_SHAPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("(((", (")))",)),
    ("([", ("])",)),
    ("[(", (")]",)),
    ("[[", ("]]",)),
    ("((", ("))",)),
    ("{{", ("}}",)),
    ("[/", ("/]", "\\]")),
    ("[\\", ("\\]", "/]")),
    ("(", (")",)),
    ("[", ("]",)),
    ("{", ("}",)),
    (">", ("]",)),
)
_ID = re.compile(r"\w+(?:-(?![-.>=])\w+)*")
_CLASS_SUFFIX = re.compile(r":::[\w-]+")
# A plain arrow, then an optional |label|.
_ARROW = re.compile(
    r"\s*(<?(?:-{2,}>|-{3,}|-{2,}[ox](?=\s)|={2,}>|={3,}|-\.+->|-\.+-|~{3,}))\s*(?:\|([^|]*)\|)?"
)
# An arrow with its text inside: "-- text -->", "== text ==>", "-. text .->".
_TEXT_ARROW = re.compile(
    r"\s*(<?)(--|==|-\.)(?![-=.>])\s*([^|\n]+?)\s*(-{2,}>|-{3,}|={2,}>|={3,}|\.-+>|\.-+)"
)
_HEADER = re.compile(r"^(flowchart|graph)(?:\s+(\w+))?\s*;?\s*$", re.IGNORECASE)
_OTHER_DIAGRAMS = re.compile(
    r"^(sequenceDiagram|classDiagram|stateDiagram|erDiagram|gantt|pie|journey|mindmap|timeline|gitGraph|"
    r"C4\w*|quadrantChart|xychart|block|architecture|sankey|requirementDiagram|packet|kanban)\b",
    re.IGNORECASE,
)
# Statements that style or script the drawing; they carry no components and are not re-emitted.
_IGNORED = re.compile(r"^(classDef|class|style|linkStyle|click|direction|accTitle|accDescr)\b")


@dataclass(frozen=True)
class Node:
    """One box: ``id`` as written, ``label`` as shown (the id when no label was given), and its Mermaid shape."""

    id: str
    label: str
    shape: str = "["
    group: int | None = None  # index into Diagram.groups


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str = ""
    directed: bool = True


@dataclass(frozen=True)
class Group:
    """A ``subgraph``: its title and the enclosing group (None at top level)."""

    title: str
    parent: int | None = None


@dataclass(frozen=True)
class Diagram:
    direction: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    groups: tuple[Group, ...] = ()

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.id == node_id)

    def degree(self, node_id: str) -> int:
        return sum((e.source == node_id) + (e.target == node_id) for e in self.edges)


# -- parsing ---------------------------------------------------------------------------------------------------


def _clean_label(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    text = text.replace("<br>", " ").replace("<br/>", " ").replace("<br />", " ")
    return re.sub(r"\s+", " ", text).strip()


class _Reader:
    """Reads one statement: node groups joined by arrows (``A & B --> C -->|x| D``)."""

    def __init__(self, text: str, line_no: int) -> None:
        self.s = text
        self.i = 0
        self.line_no = line_no

    def fail(self, why: str) -> InputError:
        return InputError(f"diagram line {self.line_no}: {why} (in '{self.s.strip()[:80]}')")

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def node(self) -> tuple[str, str | None, str]:
        self.ws()
        m = _ID.match(self.s, self.i)
        if not m:
            raise self.fail("expected a node id such as A or model_server")
        node_id = m.group(0)
        self.i = m.end()
        label: str | None = None
        shape = "["
        for opener, closers in _SHAPES:
            if self.s.startswith(opener, self.i):
                start = self.i + len(opener)
                if self.s.startswith('"', start):  # a quoted label may hold brackets
                    q = self.s.find('"', start + 1)
                    if q < 0:
                        raise self.fail('a quoted label is not closed with "')
                    ends = [(self.s.find(c, q + 1), c) for c in closers]
                else:
                    ends = [(self.s.find(c, start), c) for c in closers]
                found = [(pos, c) for pos, c in ends if pos >= 0]
                if not found:
                    raise self.fail(f"the label after {node_id}{opener} is not closed with {closers[0]}")
                pos, closer = min(found)
                label = _clean_label(self.s[start:pos])
                shape = opener
                self.i = pos + len(closer)
                break
        m = _CLASS_SUFFIX.match(self.s, self.i)
        if m:
            self.i = m.end()
        return node_id, label, shape

    def group(self) -> list[tuple[str, str | None, str]]:
        out = [self.node()]
        while True:
            self.ws()
            if not self.s.startswith("&", self.i):
                return out
            self.i += 1
            out.append(self.node())

    def arrow(self) -> tuple[str, bool] | None:
        """The next arrow's label and whether it points, or None at the end of the statement."""
        if self.i >= len(self.s.rstrip()):
            return None
        m = _TEXT_ARROW.match(self.s, self.i)
        if m and not _ARROW.match(self.s, self.i):
            self.i = m.end()
            end = m.group(4)
            return _clean_label(m.group(3)), end.endswith(">") or bool(m.group(1))
        m = _ARROW.match(self.s, self.i)
        if not m:
            rest = self.s[self.i :].strip()
            hint = " (write --> for an arrow)" if rest.startswith("->") or rest.startswith("=>") else ""
            raise self.fail(f"cannot read '{rest[:30]}'{hint}")
        self.i = m.end()
        arrow = m.group(1)
        return _clean_label(m.group(2) or ""), arrow.endswith((">", "o", "x")) or arrow.startswith("<")


def _statements(text: str) -> Iterable[tuple[int, str]]:
    for line_no, line in enumerate(text.splitlines(), start=1):
        line = line.split("%%", 1)[0]
        # ";" ends a statement, except inside a label: split only outside brackets and quotes.
        depth, quoted, start = 0, False, 0
        for j, ch in enumerate(line):
            if ch == '"':
                quoted = not quoted
            elif not quoted and ch in "[({":
                depth += 1
            elif not quoted and ch in "])}":
                depth = max(0, depth - 1)
            elif ch == ";" and not quoted and depth == 0:
                if line[start:j].strip():
                    yield line_no, line[start:j].strip()
                start = j + 1
        if line[start:].strip():
            yield line_no, line[start:].strip()


def _header_direction(line_no: int, stmt: str) -> str | None:
    """The direction a first statement's flowchart header sets; None when it is no header (a node line follows).

    Raises:
        InputError: the direction is unknown, or the text is another kind of Mermaid diagram.
    """
    m = _HEADER.match(stmt)
    if m:
        direction = (m.group(2) or "TD").upper()
        if direction not in DIRECTIONS:
            raise InputError(
                f"diagram line {line_no}: direction '{m.group(2)}' is not one of {', '.join(DIRECTIONS)}"
            )
        return direction
    if _OTHER_DIAGRAMS.match(stmt):
        raise InputError(
            f"diagram line {line_no}: the whiteboard reads flowcharts only; start with 'flowchart LR'"
        )
    return None


def _add_edges(
    edges: list[Edge], arrows: list[tuple[str, bool]], chain: list[list[tuple[str, str | None, str]]]
) -> None:
    """Append the edges of one chain statement (every node of a group to every node of the next)."""
    for (lab, directed), src, dst in zip(arrows, chain, chain[1:], strict=False):
        for s_id, _, _ in src:
            for d_id, _, _ in dst:
                edges.append(Edge(s_id, d_id, lab, directed))
                if len(edges) > MAX_EDGES:  # checked here: "a & b & ... --> c & d & ..." multiplies
                    raise InputError(
                        f"the diagram has more than {MAX_EDGES} arrows; draw the main flows only"
                    )


def parse(text: str) -> Diagram:
    """Read Mermaid flowchart text (``flowchart LR`` / ``graph TD``) into a :class:`Diagram`.

    Raises:
        InputError: the text is too long, has too many nodes or edges, is another kind of Mermaid diagram, or a
            line cannot be read; the message names the line and what to write instead.
    """
    if len(text) > MAX_CHARS:
        raise InputError(
            f"the diagram is {len(text):,} characters; keep it under {MAX_CHARS:,} (boxes and arrows, not prose)"
        )
    direction = "TD"
    labels: dict[str, str] = {}
    shapes: dict[str, str] = {}
    order: list[str] = []
    node_group: dict[str, int | None] = {}
    edges: list[Edge] = []
    groups: list[Group] = []
    stack: list[int] = []
    seen_header = False
    for line_no, stmt in _statements(text):
        if not seen_header:
            seen_header = True
            header = _header_direction(line_no, stmt)
            if header is not None:
                direction = header
                continue
        word = stmt.split(None, 1)[0]
        if word == "subgraph":
            title = _clean_label(stmt[len("subgraph") :])
            m = re.match(r"^\w+\s*\[(.*)\]$", title)
            groups.append(Group(_clean_label(m.group(1)) if m else title, stack[-1] if stack else None))
            stack.append(len(groups) - 1)
            continue
        if word == "end":
            if not stack:
                raise InputError(f"diagram line {line_no}: 'end' without a subgraph to close")
            stack.pop()
            continue
        if _IGNORED.match(stmt):
            continue
        reader = _Reader(stmt, line_no)
        left = reader.group()
        chain = [left]
        arrows: list[tuple[str, bool]] = []
        while (a := reader.arrow()) is not None:
            arrows.append(a)
            chain.append(reader.group())
        for grp in chain:
            for node_id, label, shape in grp:
                if node_id == "end":
                    raise reader.fail("'end' is reserved in Mermaid; call the node something else")
                if node_id not in labels:
                    order.append(node_id)
                    labels[node_id] = node_id
                    shapes[node_id] = "["
                    node_group[node_id] = stack[-1] if stack else None
                if label:
                    if len(label) > MAX_LABEL:
                        raise reader.fail(
                            f"a label is {len(label)} characters; keep labels under {MAX_LABEL}"
                        )
                    labels[node_id], shapes[node_id] = label, shape
        _add_edges(edges, arrows, chain)
        if len(order) > MAX_NODES:
            raise InputError(
                f"the diagram has more than {MAX_NODES} nodes; group the details into fewer boxes"
            )
        if len(edges) > MAX_EDGES:
            raise InputError(f"the diagram has more than {MAX_EDGES} arrows; draw the main flows only")
    if stack:
        raise InputError(f"a subgraph ('{groups[stack[-1]].title}') is not closed with 'end'")
    nodes = tuple(Node(i, labels[i], shapes[i], node_group[i]) for i in order)
    return Diagram(direction, nodes, tuple(edges), tuple(groups))


# -- comparing with the rubric ----------------------------------------------------------------------------------


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower().replace("_", " ")).split())


def _alias_pattern(alias: str) -> re.Pattern[str]:
    words = _fold(alias).split()
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w){body}(?:s|es)?(?!\w)")


def _spans(folded: str, aliases: Iterable[str]) -> list[tuple[int, int]]:
    return [m.span() for a in aliases if _fold(a) for m in _alias_pattern(a).finditer(folded)]


def matches(label: str, aliases: Iterable[str]) -> bool:
    """Whether a node label names a component: any alias on word boundaries, case and punctuation folded."""
    return bool(_spans(_fold(label), aliases))


def components_named(label: str, question: Question) -> list[str]:
    """The expected components a label names, in the rubric's order.

    A match inside a longer match of another component does not count: "Model registry" names the registry, not
    the model server whose alias is "model"; "Gateway / rate limiter" names both.
    """
    folded = _fold(label)
    found = {c.name: _spans(folded, c.aliases) for c in question.components}
    found = {k: v for k, v in found.items() if v}

    def covered(span: tuple[int, int], by: str) -> bool:
        return any(s <= span[0] and span[1] <= e and (e - s) > (span[1] - span[0]) for s, e in found[by])

    return [
        name
        for name, spans in found.items()
        if any(not any(covered(sp, other) for other in found if other != name) for sp in spans)
    ]


@dataclass(frozen=True)
class Present:
    """An expected component the diagram draws: which nodes (ids) carry it, or which arrow labels."""

    name: str
    nodes: tuple[str, ...]
    edge_labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Questionable:
    """A part of the drawing to ask about.

    ``kind`` is ``isolated`` (an expected component with no arrows), ``flow`` (two expected components drawn but
    not connected), or ``unknown`` (a node that matches nothing expected; often fine, asked about last).
    """

    kind: str
    component: str | None = None  # the authored name, for isolated; "from -> to" for flow
    node: str | None = None  # the node id, for isolated and unknown
    flow: tuple[str, str] | None = None


@dataclass(frozen=True)
class Review:
    present: tuple[Present, ...]
    missing: tuple[str, ...]  # authored names, in the rubric's order
    questionable: tuple[Questionable, ...]
    node_count: int = 0
    edge_count: int = 0

    def summary_lines(self) -> list[str]:
        """The review as plain lines of authored names only (no candidate text), for a prompt or a log."""
        out = [f"present: {p.name}" for p in self.present]
        out += [f"missing: {m}" for m in self.missing]
        for q in self.questionable:
            if q.kind == "isolated":
                out.append(f"not connected to anything: {q.component}")
            elif q.kind == "flow" and q.flow:
                out.append(f"no path from {q.flow[0]} to {q.flow[1]}")
        unknown = sum(q.kind == "unknown" for q in self.questionable)
        if unknown:
            out.append(f"nodes matching no expected component: {unknown}")
        return out


def _reachable(diagram: Diagram, starts: set[str]) -> set[str]:
    nxt: dict[str, set[str]] = {}
    for e in diagram.edges:
        nxt.setdefault(e.source, set()).add(e.target)
        if not e.directed:
            nxt.setdefault(e.target, set()).add(e.source)
    seen, todo = set(starts), list(starts)
    while todo:
        for m in nxt.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def compare(diagram: Diagram, question: Question) -> Review:
    """Which expected components the diagram draws, which it misses, and which parts are questionable."""
    present: list[Present] = []
    missing: list[str] = []
    questionable: list[Questionable] = []
    where: dict[str, set[str]] = {}
    matched_nodes: set[str] = set()
    named = {
        n.id: components_named(n.label, question) or components_named(n.id, question) for n in diagram.nodes
    }
    edge_named = [(e.label, components_named(e.label, question)) for e in diagram.edges if e.label]
    for comp in question.components:
        nodes = tuple(n.id for n in diagram.nodes if comp.name in named[n.id])
        labels = tuple(label for label, names in edge_named if comp.name in names)
        if nodes or labels:
            present.append(Present(comp.name, nodes, labels))
            where[comp.name] = set(nodes)
            matched_nodes.update(nodes)
            if nodes and all(diagram.degree(n) == 0 for n in nodes) and len(diagram.nodes) > 1:
                questionable.append(Questionable("isolated", component=comp.name, node=nodes[0]))
        else:
            missing.append(comp.name)
    for f in question.flows:
        src, dst = where.get(f.source), where.get(f.target)
        # Either direction counts: a scorer that pulls from a store may be drawn store -> scorer or scorer -> store.
        if src and dst and not (_reachable(diagram, src) & dst or _reachable(diagram, dst) & src):
            questionable.append(
                Questionable("flow", component=f"{f.source} -> {f.target}", flow=(f.source, f.target))
            )
    questionable += [Questionable("unknown", node=n.id) for n in diagram.nodes if n.id not in matched_nodes]
    return Review(tuple(present), tuple(missing), tuple(questionable), len(diagram.nodes), len(diagram.edges))


UNKNOWN = "unrecognised boxes"  # the ``about`` of the follow-up on nodes that match no expected component


@dataclass(frozen=True)
class FollowUp:
    """The interviewer's next question about the diagram, and what it is about (an authored name or UNKNOWN).

    The text is authored or built from authored names only, never from the candidate's labels.
    """

    text: str
    kind: str  # missing, isolated, flow, unknown
    about: str


def next_question(review: Review, question: Question, asked: Iterable[str] = ()) -> FollowUp | None:
    """One follow-up about the diagram, or None when nothing is left to ask.

    Deterministic: the first missing component in the rubric's order (the authored ``ask``), then an expected
    component drawn with no arrows, then an expected connection that is absent, then a node that matches nothing.
    ``asked`` holds the ``about`` of follow-ups already put, so the same part is not asked twice.
    """
    done = set(asked)
    by_name = {c.name: c for c in question.components}
    for name in review.missing:
        if name not in done:
            return FollowUp(by_name[name].ask, "missing", name)
    for q in review.questionable:
        if q.kind == "isolated" and q.component and q.component not in done:
            return FollowUp(
                f"Your diagram has the {q.component} but nothing connects to it: what sends it data, and what "
                "reads from it?",
                "isolated",
                q.component,
            )
    for q in review.questionable:
        if q.kind == "flow" and q.flow and q.component and q.component not in done:
            return FollowUp(
                f"How does information get from the {q.flow[0]} to the {q.flow[1]} in your design?",
                "flow",
                q.component,
            )
    # One question for all the unrecognised boxes, and no candidate text in it: follow-ups are stored as the
    # interviewer's own turns and read back into prompts unfenced.
    if any(q.kind == "unknown" for q in review.questionable) and UNKNOWN not in done:
        return FollowUp(
            "Some boxes in your diagram are parts I did not expect in this design: what does each of them do, "
            "and what would break without it?",
            "unknown",
            UNKNOWN,
        )
    return None


# -- showing it ------------------------------------------------------------------------------------------------


def _safe_label(label: str) -> str:
    """A label Mermaid draws as plain text: no quotes, markup, backticks (Markdown strings) or entity codes."""
    out = label.replace('"', "'").replace("`", "'").replace("<", "\u2039").replace(">", "\u203a")
    return out.replace("#", "\uff03").replace("|", "\u2502")


_CLOSER = {opener: closers[0] for opener, closers in _SHAPES}


def to_mermaid(diagram: Diagram) -> str:
    """The diagram re-emitted as Mermaid from what was parsed: fresh ids, quoted labels, subgraphs kept."""
    ids = {n.id: f"n{i}" for i, n in enumerate(diagram.nodes)}
    lines = [f"flowchart {diagram.direction}"]

    def emit(group: int | None, indent: str) -> None:
        for n in diagram.nodes:
            if n.group == group:
                lines.append(f'{indent}{ids[n.id]}{n.shape}"{_safe_label(n.label)}"{_CLOSER[n.shape]}')
        for gi, g in enumerate(diagram.groups):
            if g.parent == group:
                lines.append(f'{indent}subgraph g{gi}["{_safe_label(g.title) or " "}"]')
                emit(gi, indent + "  ")
                lines.append(f"{indent}end")

    emit(None, "  ")
    for e in diagram.edges:
        arrow = "-->" if e.directed else "---"
        text = f'|"{_safe_label(e.label)}"|' if e.label else ""
        lines.append(f"  {ids[e.source]} {arrow}{text} {ids[e.target]}")
    return "\n".join(lines)


def _md(text: str) -> str:
    return html.escape(text, quote=False).replace("[", "\\[").replace("]", "\\]").replace("`", "\\`")


EMPTY_PANEL = (
    "*Write your design as a Mermaid flowchart, e.g. `flowchart LR` then `A[Client] --> B[Gateway]`.*"
)


def render_markdown(diagram_text: str) -> str:
    """What the whiteboard panel shows: the drawn diagram, or what to fix when the text cannot be read."""
    if not diagram_text.strip():
        return EMPTY_PANEL
    try:
        diagram = parse(diagram_text)
    except InputError as e:
        return f"**Diagram not drawn:** {_md(str(e))}"
    if not diagram.nodes:
        return EMPTY_PANEL
    return f"```mermaid\n{to_mermaid(diagram)}\n```"


def as_text(diagram: Diagram) -> str:
    """The diagram for a prompt: boxes and arrows as plain lines, fenced as the candidate's data.

    A label written to the grader (see :func:`interviewer.scoring.guard.screen`) is replaced by a note.
    """

    def say(label: str) -> str:
        return "[label removed: addressed to the grader]" if screen(label).removed else label

    lines = ["boxes:"]
    lines += [f"- {n.id}: {say(n.label)}" for n in diagram.nodes]
    lines.append("arrows:")
    for e in diagram.edges:
        arrow = "\u2192" if e.directed else "\u2014"  # the fence turns ">" into a look-alike; say it plainly
        lines.append(f"- {e.source} {arrow} {e.target}" + (f" ({say(e.label)})" if e.label else ""))
    block, _, _ = fence("\n".join(lines))
    return block


@dataclass(frozen=True)
class BoardReport:
    """The final diagram and its review, for the feedback report."""

    diagram: Diagram | None
    review: Review | None
    error: str | None = None
    why_missing: dict[str, str] = field(default_factory=dict)


def review_text(diagram_text: str, question: Question) -> BoardReport:
    """Parse and compare the final diagram text; an unreadable diagram is reported, not raised."""
    try:
        diagram = parse(diagram_text)
    except InputError as e:
        return BoardReport(None, None, str(e))
    review = compare(diagram, question)
    why = {c.name: c.why for c in question.components if c.name in review.missing}
    return BoardReport(diagram, review, None, why)


def report_lines(diagram_text: str, question: Question) -> list[str]:
    """The final diagram and its review as plain, unescaped lines (escape them for the format you write).

    Boxes, arrows, which expected components were drawn, ``missing: <name> \u2014 <what it is for>`` for each one
    left out, and the questionable parts. An unreadable diagram gives one line saying so.
    """
    if not diagram_text.strip():
        return []
    rep = review_text(diagram_text, question)
    if rep.diagram is None or rep.review is None:
        return [f"the final diagram could not be read: {rep.error}"]
    labels = {n.id: n.label for n in rep.diagram.nodes}
    out = [f"box: {n.label}" for n in rep.diagram.nodes]
    for e in rep.diagram.edges:
        arrow = "\u2192" if e.directed else "\u2014"
        out.append(f"{labels[e.source]} {arrow} {labels[e.target]}" + (f" ({e.label})" if e.label else ""))
    if rep.review.present:
        out.append("drawn: " + ", ".join(p.name for p in rep.review.present))
    out += [f"missing: {name} \u2014 {rep.why_missing[name]}" for name in rep.review.missing]
    for q in rep.review.questionable:
        if q.kind == "isolated":
            out.append(f"not connected: {q.component}")
        elif q.kind == "flow" and q.flow:
            out.append(f"no path from {q.flow[0]} to {q.flow[1]}")
    return out


def report_markdown(diagram_text: str, question: Question, *, mermaid: bool = True) -> str:
    """The report's whiteboard section: the final diagram, then ``missing: ...`` lines with what each is for.

    ``mermaid=False`` leaves out the drawn diagram and keeps the plain listing, for Markdown that no Mermaid
    renderer will read. Candidate labels are escaped for Markdown.
    """
    lines = report_lines(diagram_text, question)
    if not lines:
        return ""
    out = ["#### Whiteboard"]
    if mermaid and not lines[0].startswith("the final diagram could not be read"):
        out += ["", f"```mermaid\n{to_mermaid(parse(diagram_text))}\n```", ""]
    out += [f"- {_md(line)}" for line in lines]
    return "\n".join(out)

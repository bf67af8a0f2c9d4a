#!/usr/bin/env python3
"""Import circles between the files of one crate (issue 28).

    .ci/import_circles.py CRATE/src

Reads every `.rs` file under the folder, takes its module path from where the
file lies (`lib.rs`/`main.rs` the root, `a/mod.rs` and `a.rs` the module `a`,
`a/b.rs` the module `a::b`) and from its inline `mod name {` blocks, and draws
an edge from a file to each file whose module it names: in `use` lines
(`crate::`, `super::`, `self::`, or a child module's name, braces expanded),
in `crate::`/`super::` paths written anywhere in the code, and through
`pub use` re-exports (a name `sessions/mod.rs` re-exports from
`sessions/state.rs` is an edge to state.rs, not to mod.rs, and the `pub use`
line itself is no edge). `mod` lines only place files in the tree; declaring
a child is not importing it.

Each set of files that reach each other (a strongly connected component of
more than one file) is a circle; it is printed with the edges inside it and
the line that makes each. Prints nothing and exits 0 when there is none;
exits 1 otherwise.
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
USE_LINE = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?use\s+[^;]*;")


def strip_comments(text):
    """The text with `//` and `/* */` comments and string literals blanked,
    line breaks kept so line numbers still hold."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:])
            out.append("' '")
            i += len(m.group(0))
        elif c == "'" and text.startswith("'\\", i):
            j = text.find("'", i + 2)
            out.append("' '")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (each a list of
    segments; `self` inside braces is the prefix itself)."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, re.S)
    if not m:
        path = re.sub(r"\s+as\s+" + IDENT + "$", "", tree).strip()
        return [[s for s in path.split("::") if s]] if path else []
    prefix = [s for s in m.group(1).split("::") if s.strip()]
    prefix = [s.strip() for s in prefix]
    parts, depth, cur = [], 0, ""
    for ch in m.group(2):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    result = []
    for part in parts:
        for sub in expand(part):
            if sub == ["self"]:
                result.append(prefix)
            else:
                result.append(prefix + sub)
    return result


class Crate:
    def __init__(self, src):
        self.src = src.rstrip("/")
        self.files = {}  # relative file -> module path (tuple)
        self.modules = {}  # module path -> file
        for root, _, names in os.walk(self.src):
            for name in names:
                if not name.endswith(".rs"):
                    continue
                rel = os.path.relpath(os.path.join(root, name), self.src)
                parts = rel[:-3].split(os.sep)
                if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
                    parts = parts[:-1]
                # a binary beside lib.rs (src/bin/x.rs) is a crate of its own
                if parts and parts[0] == "bin":
                    continue
                self.files[rel] = tuple(parts)
                self.modules.setdefault(tuple(parts), rel)
        self.text = {}
        self.scopes = {}  # file -> [(line, module path)] for inline modules
        for rel in self.files:
            with open(os.path.join(self.src, rel), encoding="utf-8") as f:
                self.text[rel] = strip_comments(f.read())
            self.find_inline_modules(rel)
        self.reexports = {}  # file -> {name: (segments, module path)}
        for rel in self.files:
            self.reexports[rel] = self.find_reexports(rel)

    def find_inline_modules(self, rel):
        """Inline `mod name { ... }` blocks: their modules belong to the file,
        and a `super::` inside one means the file's own module."""
        text = self.text[rel]
        base = self.files[rel]
        stack = []  # (depth at open, module path)
        depth = 0
        spans = []  # (start offset, end offset, module path)
        i = 0
        opens = {m.end() - 1: m.group(1) for m in re.finditer(r"\bmod\s+(" + IDENT + r")\s*\{", text)}
        for i, ch in enumerate(text):
            if ch == "{":
                if i in opens:
                    parent = stack[-1][1] if stack else base
                    path = parent + (opens[i],)
                    stack.append((depth, path, i))
                    self.modules.setdefault(path, rel)
                depth += 1
            elif ch == "}":
                depth -= 1
                if stack and stack[-1][0] == depth:
                    _, path, start = stack.pop()
                    spans.append((start, i, path))
        self.scopes[rel] = spans

    def module_at(self, rel, offset):
        best = self.files[rel]
        best_len = -1
        for start, end, path in self.scopes[rel]:
            if start <= offset <= end and len(path) > best_len:
                best, best_len = path, len(path)
        return best

    def absolute(self, here, segs):
        """Segments of a path written in module `here`, made absolute
        (a tuple of module segments followed by the item), or None for a
        path into another crate."""
        if not segs:
            return None
        segs = list(segs)
        if segs[0] == "crate":
            return tuple(segs[1:])
        if segs[0] == "self":
            return tuple(here) + tuple(segs[1:])
        if segs[0] == "super":
            base = list(here)
            while segs and segs[0] == "super":
                if not base:
                    return None
                base.pop()
                segs.pop(0)
            return tuple(base) + tuple(segs)
        # a child module (or an inline one) of the current module
        if tuple(here) + (segs[0],) in self.modules:
            return tuple(here) + tuple(segs)
        return None

    def file_of(self, path, seen=None):
        """The file that defines what an absolute path names, following
        `pub use` re-exports; None when it is outside the crate's files."""
        seen = seen or set()
        for k in range(len(path), -1, -1):
            module = tuple(path[:k])
            if module in self.modules:
                rel = self.modules[module]
                rest = path[k:]
                if rest and rest[0] in self.reexports[rel] and (rel, rest[0]) not in seen:
                    seen.add((rel, rest[0]))
                    segs, at = self.reexports[rel][rest[0]]
                    target = self.absolute(at, segs)
                    if target is None:
                        return None  # re-exported from another crate
                    found = self.file_of(tuple(target) + tuple(rest[1:]), seen)
                    if found is not None:
                        return found
                return rel
        return None

    def uses(self, rel):
        """(offset, written segments, is_pub) for each path a `use` names."""
        text = self.text[rel]
        for m in re.finditer(r"(?:^|[;{}\s])(pub(?:\([^)]*\))?\s+)?use\s+([^;]*);", text):
            for segs in expand(m.group(2)):
                segs = [s.strip() for s in segs]
                if segs and segs[-1] == "*":
                    segs = segs[:-1]
                yield m.start(2), segs, bool(m.group(1))

    def find_reexports(self, rel):
        out = {}
        text = self.text[rel]
        for m in re.finditer(r"(?:^|[;{}\s])pub(?:\([^)]*\))?\s+use\s+([^;]*);", text):
            here = self.module_at(rel, m.start(1))
            for segs in expand(m.group(1)):
                segs = [s.strip() for s in segs]
                if not segs or segs[-1] == "*":
                    continue
                alias = re.search(r"\bas\s+(" + IDENT + r")\s*$", m.group(1))
                name = segs[-1]
                out[name] = (segs, here)
                if alias and len(expand(m.group(1))) == 1:
                    out[alias.group(1)] = (segs, here)
        return out

    def edges(self):
        """{file: {target file: first line that makes the edge}}"""
        result = {rel: {} for rel in self.files}
        for rel in self.files:
            text = self.text[rel]
            lines = text.split("\n")

            def add(offset, segs):
                here = self.module_at(rel, offset)
                path = self.absolute(here, segs)
                if path is None:
                    return
                target = self.file_of(path)
                if target is None or target == rel:
                    return
                line = text.count("\n", 0, offset)
                result[rel].setdefault(target, (line + 1, lines[line].strip()))

            for offset, segs, public in self.uses(rel):
                # a re-export is transparent: whoever names it through this
                # file gets the edge to the file that defines it
                if not public:
                    add(offset, segs)
            # paths written in the code, the `use` lines (read above) blanked
            code = USE_LINE.sub(lambda m: " " * len(m.group(0)), text)
            for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:crate|super)(?:::" + IDENT + r")+)", code):
                add(m.start(1), m.group(1).split("::"))
        return result


def circles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print(__doc__.strip().split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    src = sys.argv[1]
    crate = Crate(src)
    graph = crate.edges()
    found = circles(graph)
    for comp in found:
        print(f"import circle of {len(comp)} files in {src}:")
        members = set(comp)
        for a in comp:
            for b, (line, code) in sorted(graph[a].items()):
                if b in members:
                    print(f"  {a} -> {b}  ({a}:{line}: {code})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

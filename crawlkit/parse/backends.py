"""Tree walkers: parse markup with one library and feed a PageExtractor.

Both walks are iterative (an explicit stack), so deeply nested junk markup
cannot hit Python's recursion limit, and both emit the same event sequence
for the same tree, so the backends differ only where the parsers build
different trees from malformed markup.
"""

from __future__ import annotations

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import RubyParenthesisString, RubyTextString
from selectolax.lexbor import LexborHTMLParser

from crawlkit.parse.extract import PageExtractor

# Text node classes that are page text (comments, doctypes, CDATA and
# processing instructions are other NavigableString subclasses).
_BS4_TEXT = frozenset({NavigableString, RubyTextString, RubyParenthesisString})


def walk_bs4(markup: str, extractor: PageExtractor) -> None:
    """BeautifulSoup with the lxml tree builder (libxml2's HTML parser)."""
    soup = BeautifulSoup(markup, "lxml", multi_valued_attributes=None)
    stack = [iter(soup.contents)]
    open_tags: list[str] = []
    while stack:
        for node in stack[-1]:
            if isinstance(node, Tag):
                if extractor.start(node.name, node.attrs) and node.contents:
                    stack.append(iter(node.contents))
                    open_tags.append(node.name)
                    break
                extractor.end(node.name)
            elif type(node) in _BS4_TEXT:
                extractor.text(node)
        else:
            stack.pop()
            if open_tags:
                extractor.end(open_tags.pop())


def walk_lexbor(markup: str, extractor: PageExtractor) -> None:
    """selectolax's lexbor binding: an HTML5-conformant parser in C."""
    node = LexborHTMLParser(markup).root
    parents = []
    while node is not None:
        tag = node.tag
        if tag == "-text":
            extractor.text(node.text_content)
        elif tag[0] not in "-!#_":  # elements; not comments/doctype/document
            attrs = {key: value or "" for key, value in node.attributes.items()}
            child = node.child if extractor.start(tag, attrs) else None
            if child is not None:
                parents.append(node)
                node = child
                continue
            extractor.end(tag)
        node_next = node.next
        while node_next is None and parents:
            parent = parents.pop()
            extractor.end(parent.tag)
            node_next = parent.next
        node = node_next


BACKENDS = {"bs4": walk_bs4, "selectolax": walk_lexbor}

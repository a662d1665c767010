"""Parser backends: parse markup with one library and feed a PageExtractor.

``bs4`` and ``selectolax`` build a tree and walk it; both walks are iterative
(an explicit stack), so deeply nested junk markup cannot hit Python's
recursion limit, and both emit the same event sequence for the same tree, so
they differ only where the parsers build different trees from malformed
markup. ``lxml`` builds no tree: it feeds libxml2's parse events (the very
events bs4's lxml tree builder turns into its tree) straight into the
extractor, reproducing what bs4 does to them, so its output is bs4's.
"""

from __future__ import annotations

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import RubyParenthesisString, RubyTextString
from lxml import etree
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


# bs4's BeautifulSoup.ASCII_SPACES and HTMLTreeBuilder.preserve_whitespace_tags.
_ASCII_SPACES = frozenset(" \n\t\f\r")
_PRESERVE_WHITESPACE = frozenset({"pre", "textarea"})


class _LxmlEvents:
    """lxml parser target: libxml2's parse events straight into a PageExtractor.

    It does to the events what bs4 (BeautifulSoup + its lxml tree builder)
    does to them before ``walk_bs4`` sees the tree, as far as the extractor
    can tell:

    - consecutive data is joined into one string, cut by tags, comments,
      doctypes and processing instructions; a string of ASCII whitespace only
      becomes one newline (if it has one) or one space, unless a <pre> or
      <textarea> is open;
    - an end tag closes the most recent open element of that name and every
      element opened inside it; an end tag with no such open element is
      ignored; elements still open at the end are closed (bs4's
      ``_popToTag`` and ``_feed``);
    - the children of an element the extractor does not enter (script,
      style, ...) are skipped up to its end.
    """

    __slots__ = ("extractor", "buffer", "open_tags", "skip_at", "preserve")

    def __init__(self, extractor: PageExtractor):
        self.extractor = extractor
        self.buffer: list[str] = []
        self.open_tags: list[str] = []
        self.skip_at = -1  # index in open_tags of the element whose children are skipped
        self.preserve = 0  # open <pre>/<textarea> elements

    def flush(self) -> None:
        if self.buffer:
            text = "".join(self.buffer)
            self.buffer = []
            if self.skip_at < 0:
                if not self.preserve and _ASCII_SPACES.issuperset(text):
                    text = "\n" if "\n" in text else " "
                self.extractor.text(text)

    def start(self, tag, attrib) -> None:
        self.flush()
        open_tags = self.open_tags
        if tag in _PRESERVE_WHITESPACE:
            self.preserve += 1
        if self.skip_at < 0 and not self.extractor.start(tag, dict(attrib)):
            self.skip_at = len(open_tags)
        open_tags.append(tag)

    def end(self, tag) -> None:
        self.flush()
        open_tags = self.open_tags
        if open_tags and open_tags[-1] == tag:  # libxml2 sends balanced events
            self._close_to(1)
        elif tag in open_tags:
            self._close_to(len(open_tags) - max(i for i, t in enumerate(open_tags) if t == tag))

    def _close_to(self, count: int) -> None:
        """Close the innermost ``count`` open elements."""
        open_tags = self.open_tags
        for _ in range(count):
            tag = open_tags.pop()
            if tag in _PRESERVE_WHITESPACE:
                self.preserve -= 1
            depth = len(open_tags)
            if depth <= self.skip_at:
                self.skip_at = -1
            if self.skip_at < 0:
                self.extractor.end(tag)

    def data(self, text) -> None:
        self.buffer.append(text)

    def comment(self, text) -> None:
        self.flush()

    def pi(self, target, data=None) -> None:
        self.flush()

    def doctype(self, *args) -> None:
        self.flush()

    def close(self) -> None:
        self.flush()
        self._close_to(len(self.open_tags))


def walk_lxml(markup: str, extractor: PageExtractor) -> None:
    """lxml's HTML parser (libxml2, the parser bs4's default builder drives)
    with a parser target: events go to the extractor, no tree is built.

    The parser options and the input are bs4's (``LXMLTreeBuilder``): one
    feed of the whole string, a leading byte-order mark removed. Content
    after ``</html>`` is kept as bs4 keeps it (libxml2 leaves it out of an
    lxml tree but does send its events).
    """
    if markup[:1] == "\ufeff":
        markup = markup[1:]
    parser = etree.HTMLParser(target=_LxmlEvents(extractor), recover=True)
    parser.feed(markup)
    parser.close()


BACKENDS = {"bs4": walk_bs4, "selectolax": walk_lexbor, "lxml": walk_lxml}

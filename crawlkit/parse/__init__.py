"""Page parsing: ``parse_document`` for any fetched body, ``parse_html`` for
HTML. Results are plain dicts (see ``empty_result``) so they map directly
onto Spark rows."""

from crawlkit.parse.html import empty_result, parse_document, parse_html, parse_text

__all__ = ["empty_result", "parse_document", "parse_html", "parse_text"]
